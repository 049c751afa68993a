package cli

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// TestWriteReused: a run reused from a signed earlier verification is named
// with its source (run, index, bundle) by verify's console and inspect; a
// delivery without one prints nothing, and a hostile id is escaped.
func TestWriteReused(t *testing.T) {
	base := strings.Repeat("b", 40)
	bundle := "sha256/" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		name   string
		checks []record.CheckRun
		want   string
	}{
		{"nothing reused", []record.CheckRun{{CheckID: "unit", Phase: record.Baseline, Commit: base}}, ""},
		{"a reused baseline", []record.CheckRun{
			{CheckID: "unit", Phase: record.Baseline, Commit: base, ReusedFrom: &record.ReuseRef{Bundle: bundle, RunID: "20261201T120000Z-1a2b", Index: 2}},
			{CheckID: "unit", Phase: record.Candidate, Commit: strings.Repeat("c", 40)},
		}, "\nReused (not executed: an equal input key passed in a signed earlier run; `evidence verify --artifacts-dir` re-verifies its bundle):\n" +
			"  unit (baseline) at bbbbbbbbbbbb: run 20261201T120000Z-1a2b, check run 2 of bundle sha256:aaaaaaaaaaaa\n"},
		{"a baseline reused from a base proof", []record.CheckRun{
			{CheckID: "unit", Phase: record.Baseline, Commit: base, ReusedFrom: &record.ReuseRef{Bundle: bundle, RunID: "20261201T110000Z-9f9f", Index: 0, Proof: true}},
		}, "\nReused (not executed: an equal input key passed in a signed earlier run; `evidence verify --artifacts-dir` re-verifies its bundle):\n" +
			"  unit (baseline) at bbbbbbbbbbbb: the base proof 20261201T110000Z-9f9f, check run 0 of bundle sha256:aaaaaaaaaaaa\n"},
		{"an id that moves the cursor", []record.CheckRun{
			{CheckID: "u\x1b[2Knit", Phase: record.Baseline, Commit: base, ReusedFrom: &record.ReuseRef{Bundle: bundle, RunID: "r", Index: 0}},
		}, "\nReused (not executed: an equal input key passed in a signed earlier run; `evidence verify --artifacts-dir` re-verifies its bundle):\n" +
			"  u\\x1b[2Knit (baseline) at bbbbbbbbbbbb: run r, check run 0 of bundle sha256:aaaaaaaaaaaa\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeReused(&b, &evidence.Delivery{Checks: tc.checks})
			if b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}
