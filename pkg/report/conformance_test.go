package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/corpus"
	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// outcome is what a golden records for one identity rule.
type outcome struct {
	Result string         `json:"result"` // "ok" or "rejected"
	Code   rmerr.Code     `json:"code,omitempty"`
	Reason string         `json:"reason,omitempty"`
	Counts *report.Counts `json:"counts,omitempty"`
	Claims *report.Claims `json:"claims,omitempty"`
	// ClaimsMore is set when the report claims more failures and errors
	// than it shows (Inventory.ClaimsMoreFailures): "claimed 3, seen 1".
	ClaimsMore string         `json:"claims_more_failures,omitempty"`
	Tests      []goldenTest   `json:"tests,omitempty"`
	Faults     []report.Fault `json:"faults,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
}

type goldenTest struct {
	ID     report.TestID `json:"id"`
	Status report.Status `json:"status"`
	Flaky  bool          `json:"flaky,omitempty"`
	// Message is the first line a finding quotes for a failed test
	// (report.FirstLine, 120 bytes).
	Message string `json:"message,omitempty"`
}

type goldenFile struct {
	File      string   `json:"file"`
	Format    string   `json:"format"`
	Default   outcome  `json:"default"`
	SuitePath *outcome `json:"suite_path,omitempty"` // only where it differs from Default
}

func run(path string, format report.Format, id report.Identity) outcome {
	f, err := os.Open(path)
	if err != nil {
		return outcome{Result: "rejected", Reason: err.Error()}
	}
	defer f.Close()
	inv, err := report.Parse(f, format, report.Options{Identity: id})
	if err != nil {
		return outcome{Result: "rejected", Code: rmerr.CodeOf(err), Reason: err.Error()}
	}
	o := outcome{Result: "ok", Counts: &inv.Counts, Claims: inv.Claims, Faults: inv.Faults, Notes: inv.Notes}
	if claimed, seen, more := inv.ClaimsMoreFailures(); more {
		o.ClaimsMore = fmt.Sprintf("claimed %d, seen %d", claimed, seen)
	}
	for _, t := range inv.Tests {
		g := goldenTest{ID: t.ID, Status: t.Status, Flaky: t.Flaky}
		if t.Status == report.Failed {
			g.Message = report.FirstLine(t.Message, 120)
		}
		o.Tests = append(o.Tests, g)
	}
	return o
}

// TestCorpusConformance parses every file of ../shared/corpus and compares the
// result with testdata/corpus/<dir>/<file>.json. Goldens were checked by
// reading each report, not accepted blindly from the parser. Regenerate
// them only with `go test ./pkg/report -run TestCorpusConformance -update`,
// then read `git diff pkg/report/testdata` before committing.
func TestCorpusConformance(t *testing.T) {
	root := corpus.Dir(t)
	for dir, format := range map[string]report.Format{"junit": report.JUnit, "tap": report.TAP, "gojson": report.GoJSON} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			t.Run(dir+"/"+name, func(t *testing.T) {
				path := filepath.Join(root, dir, name)
				g := goldenFile{File: name, Format: string(format), Default: run(path, format, report.IdentityDefault)}
				sp := run(path, format, report.IdentitySuitePath)
				a, _ := json.Marshal(g.Default)
				b, _ := json.Marshal(sp)
				if !bytes.Equal(a, b) {
					g.SuitePath = &sp
				}
				got, err := json.MarshalIndent(g, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				gpath := filepath.Join("testdata", "corpus", dir, strings.ReplaceAll(name, "#", "_")+".json")
				golden.Bytes(t, gpath, got)
			})
		}
	}
}
