package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// TestFinishProof: a base proof answers 0 when every baseline may be
// reused and 1 (an answer, not a failure to prove) when one may not,
// naming it and why: pull requests against the base run that one.
func TestFinishProof(t *testing.T) {
	key := strings.Repeat("ab", 32)
	passed := record.CheckRun{CheckID: "unit", Phase: record.Baseline, InputKey: key, Started: true, Status: record.Passed, Coverage: record.Proven}
	failed := passed
	failed.CheckID, failed.Status = "fixes", record.Failed
	for _, tc := range []struct {
		name   string
		checks []record.CheckRun
		err    error
		out    []string
	}{
		{"every baseline reusable", []record.CheckRun{passed}, nil, []string{"every one reusable", "unit\tproven\tinput key abababababababab"}},
		{"one failed at the base", []record.CheckRun{passed, failed}, errAnswered, []string{"not every one reusable", "fixes\tNOT REUSABLE: the run did not pass with proven coverage (status failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &engine.Run{ID: "r1", Dir: "/state/runs/r1", Delivery: evidence.Delivery{Checks: tc.checks,
				Candidate: evidence.Candidate{Base: strings.Repeat("1", 40)}, BaseProof: true}}
			var out bytes.Buffer
			err := finishProof(IO{Out: &out}, run, false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("finishProof = %v, want %v", err, tc.err)
			}
			for _, w := range tc.out {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
