package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
)

// TestInspect renders a statement file and a signed bundle the same way, and
// answers exit 1 for a run that does not exist.
func TestInspect(t *testing.T) {
	keyPEM, _, err := evidence.Keygen(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key, err := evidence.ParseSigningKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Repeat("a", 40)
	d := evidence.Delivery{
		RunmillVersion: "test", RunID: "run-1", IssuedAt: time.Now().UTC().Format(time.RFC3339Nano),
		Candidate: evidence.Candidate{Repository: evidence.Repository{Name: "o/r"}, Head: head, Base: strings.Repeat("b", 40),
			MergeBase: strings.Repeat("b", 40), Landing: evidence.Landing{Commit: head, GitTree: strings.Repeat("d", 40), Conflicts: []string{}},
			Tree: "sha256:" + strings.Repeat("c", 64)},
		Manifest: discovery.Manifest{Schema: discovery.Schema, Base: strings.Repeat("b", 40), Candidate: head, ReadFrom: discovery.ReadFromNone, Autonomy: "pr-only", FailOnSkippedCheck: true},
		Sandbox:  []byte(`{}`),
	}
	evidence.Decide(&d)
	st := evidence.NewDeliveryStatement(d)
	payload, err := evidence.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	bundle, _, err := evidence.Sign(st, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "statement.json"), payload, 0o644)
	os.WriteFile(filepath.Join(dir, "evidence.json"), bundle, 0o644)
	for _, arg := range []string{dir, filepath.Join(dir, "statement.json"), filepath.Join(dir, "evidence.json")} {
		code, out, errOut := runCLI(t, "", "inspect", arg)
		if code != 0 || !strings.Contains(out, "run run-1: NOT MERGE-READY") || !strings.Contains(out, "candidate "+head) {
			t.Errorf("inspect %s: exit %d\n%s%s", arg, code, out, errOut)
		}
	}
	code, _, errOut := runCLI(t, "", "inspect", "--out", dir, "no-such-run")
	if code != 1 || !strings.Contains(errOut, "no run") {
		t.Errorf("missing run: exit %d, %s", code, errOut)
	}
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"mediaType":"x","dsseEnvelope":{}}`), 0o644)
	if code, _, _ := runCLI(t, "", "inspect", filepath.Join(dir, "broken.json")); code != 1 {
		t.Errorf("a broken bundle: exit %d, want 1", code)
	}
}
