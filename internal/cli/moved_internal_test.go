package cli

import (
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// TestPrintRunListsMovedTests: verify's console lists a candidate run's
// moved tests (issue 24) under "Moved", one line each saying how the test
// moved, escaped; a baseline run's list, which has none by construction,
// and a run without moves print no block.
func TestPrintRunListsMovedTests(t *testing.T) {
	moved := []record.TestMove{
		{From: "pysrc.tests.test_cart::test_total", To: "pysrc.cart.tests.test_cart::test_total", By: record.MovedFile},
		{From: "example.com/shop/cart::TestTotal", To: "example.com/shop/internal/cart::TestTotal\x1b[2K", By: record.MovedPackage},
	}
	for _, tc := range []struct {
		name   string
		checks []record.CheckRun
		want   string
	}{
		{"moved tests", []record.CheckRun{
			{CheckID: "py", Phase: record.Baseline, Status: record.Passed},
			{CheckID: "py", Phase: record.Candidate, Status: record.Passed, Moved: moved},
		}, "\nMoved (git detected the renames; the tests kept their authority):\n" +
			`  py: moved, not missing: "pysrc.tests.test_cart::test_total" → "pysrc.cart.tests.test_cart::test_total" (its file was renamed)` + "\n" +
			`  py: moved, not missing: "example.com/shop/cart::TestTotal" → "example.com/shop/internal/cart::TestTotal\x1b[2K" (its Go package moved)` + "\n"},
		{"no moves", []record.CheckRun{{CheckID: "py", Phase: record.Candidate, Status: record.Passed}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printRun(&b, &engine.Run{ID: "r", Delivery: evidence.Delivery{Checks: tc.checks}})
			got := b.String()
			if i := strings.Index(got, "\nMoved"); i >= 0 {
				got = got[i:strings.Index(got, "\nGitHub:")]
			} else {
				got = ""
			}
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
