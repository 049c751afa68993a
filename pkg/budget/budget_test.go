package budget_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// jcsCost is what an id really costs in a canonical statement: a one-id
// array is "[" + id + "]", and an id among others adds a comma.
func jcsCost(t testing.TB, id string) int64 {
	b, err := evidence.Marshal([]string{id})
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b)) - 2 + 1
}

func TestIDCostIsTheCanonicalCost(t *testing.T) {
	for _, id := range []string{
		"", "TestTotal", "pkg::Test/sub case", `quote " and \ backslash`, "tab\tnew\nline\r\f\b",
		"\x00\x01\x1f control", "\x7f del", "<html> & amp", "ünïcødé ✓ 𝄞", "bad \xff\xfe utf-8", "\xe2\x82",
	} {
		if got, want := budget.IDCost(id), jcsCost(t, id); got != want {
			t.Errorf("IDCost(%q) = %d, the canonical statement spends %d", id, got, want)
		}
	}
}

func FuzzIDCost(f *testing.F) {
	for _, s := range []string{"a", "\x00", `"\`, "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := budget.IDCost(id), jcsCost(t, id); got != want {
			t.Fatalf("IDCost(%q) = %d, want %d", id, got, want)
		}
	})
}

func TestRunAdmit(t *testing.T) {
	type step struct {
		ids    int
		cost   int64
		refuse string // substring of the refusal; "" admits
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a report at the per-report cap", []step{{budget.IDsPerReport, 40 * budget.IDsPerReport, ""}}},
		{"one id over the per-report cap", []step{{budget.IDsPerReport + 1, 10, "budget.IDsPerReport"}}},
		{"a baseline and a candidate at the cap fill the run", []step{
			{budget.IDsPerReport, 1, ""}, {budget.IDsPerReport, 1, ""}, {1, 1, "budget.IDsPerRun"}}},
		{"id bytes to the byte", []step{{10, budget.IDBytesPerRun, ""}, {1, 1, "budget.IDBytesPerRun"}}},
		{"id bytes over in one report", []step{{10, budget.IDBytesPerRun + 1, "budget.IDBytesPerRun"}, {10, budget.IDBytesPerRun, ""}}},
		{"a refusal records nothing", []step{
			{budget.IDsPerReport, 1, ""}, {budget.IDsPerReport + 1, 1, "IDsPerReport"}, {budget.IDsPerReport, 1, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r budget.Run
			for i, s := range tc.steps {
				err := r.Admit("check unit (candidate)", s.ids, s.cost)
				switch {
				case s.refuse == "" && err != nil:
					t.Fatalf("step %d: refused: %v", i, err)
				case s.refuse != "" && err == nil:
					t.Fatalf("step %d: admitted, want a refusal naming %s", i, s.refuse)
				case s.refuse != "":
					if rmerr.CodeOf(err) != rmerr.ReportLimit || !strings.Contains(err.Error(), s.refuse) || !strings.Contains(err.Error(), "check unit") {
						t.Fatalf("step %d: %v: want RM-REPORT-003 naming %s and the report", i, err, s.refuse)
					}
					if re := err.(*rmerr.Error); re.Hint == "" {
						t.Fatalf("step %d: the refusal says no fix", i)
					}
				}
			}
		})
	}
}

func TestBundleAndReportCaps(t *testing.T) {
	if err := budget.CheckReportSize("r", budget.ReportBytes); err != nil {
		t.Fatalf("a report at the cap: %v", err)
	}
	if err := budget.CheckReportSize("r", budget.ReportBytes+1); rmerr.CodeOf(err) != rmerr.ReportLimit || !strings.Contains(err.Error(), "budget.ReportBytes") {
		t.Fatalf("a report over the cap: %v", err)
	}
	// The verifier and the parsers read the same numbers.
	if evidence.DefaultLimits.MaxBundleBytes != budget.BundleBytes {
		t.Fatalf("evidence verify accepts %d bundle bytes, the budget signs up to %d", evidence.DefaultLimits.MaxBundleBytes, budget.BundleBytes)
	}
	if l := report.DefaultLimits; l.MaxBytes != budget.ReportBytes || l.MaxTests != budget.IDsPerReport {
		t.Fatalf("the parsers accept %d bytes and %d tests, the budget %d and %d", l.MaxBytes, l.MaxTests, budget.ReportBytes, budget.IDsPerReport)
	}
}
