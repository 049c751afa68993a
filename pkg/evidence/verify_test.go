package evidence

import (
	"encoding/json"
	"testing"
)

func TestVerifyValidBundle(t *testing.T) {
	f := newFixture(t)
	for _, withDir := range []bool{false, true} {
		opts := VerifyOptions{}
		if withDir {
			opts.ArtifactsDir = f.writeArtifacts(t)
		}
		res := f.verify(opts)
		out, _ := json.MarshalIndent(res, "", "  ")
		if !res.Valid {
			t.Fatalf("valid fixture rejected:\n%s", out)
		}
		for _, s := range res.Steps {
			if s.Status != StepPassed && !(s.Name == "artifacts" && !withDir && s.Status == StepSkipped) {
				t.Errorf("step %s: %s", s.Name, s.Status)
			}
		}
		if withDir && (res.Artifacts == nil || res.Artifacts.Count != 6) {
			t.Errorf("artifacts: %+v", res.Artifacts)
		}
		t.Logf("%s", out)
	}
}
