package github

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRequiredContextsOfRules: the rules decoder never panics, and every
// context it returns comes from a required_status_checks rule of the input.
func FuzzRequiredContextsOfRules(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*rules*.json"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`[{"type":"required_status_checks","parameters":{"required_status_checks":[{"context":"ci"}]}},{"type":"file_path_restriction"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw []json.RawMessage
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		names, err := requiredContextsOfRules(raw)
		if err != nil {
			return
		}
		want := 0
		for _, m := range raw {
			var r rule
			if json.Unmarshal(m, &r) == nil && r.Type == "required_status_checks" {
				want += len(r.Parameters.RequiredStatusChecks)
			}
		}
		if len(names) != want {
			t.Fatalf("%d contexts from %d required checks", len(names), want)
		}
	})
}
