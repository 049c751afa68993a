package record_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/runmill/verify/"

// TestRecordSitsBelowItsUsers keeps the vocabulary a vocabulary (issue 18):
// pkg/outcome, pkg/verdict and pkg/evidence share these types, so pkg/record
// may depend on none of them, and of the project it imports only the
// lower-level nouns its records are made of — a report's test ids and
// format, a harness record, an error code.
func TestRecordSitsBelowItsUsers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json", module+"pkg/record").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	direct := []string{module + "pkg/harness", module + "pkg/report", module + "pkg/rmerr"}
	users := []string{module + "pkg/outcome", module + "pkg/verdict", module + "pkg/evidence"}
	dec := json.NewDecoder(bytes.NewReader(out))
	found := false
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(users, p.ImportPath) {
			t.Errorf("pkg/record depends on %s, which uses it", p.ImportPath)
		}
		if p.ImportPath != module+"pkg/record" {
			continue
		}
		found = true
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) && !slices.Contains(direct, imp) {
				t.Errorf("pkg/record imports %s; only %v are its building blocks", imp, direct)
			}
		}
	}
	if !found {
		t.Fatal("go list did not list pkg/record; the check proves nothing")
	}
}
