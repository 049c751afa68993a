package explain_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// Each check's causes come before what follows from them; a check with no
// other cause, and the order of the checks, stay as the verdict has them.
func TestOrder(t *testing.T) {
	f := func(check, rule string, code rmerr.Code) record.Finding {
		return record.Finding{Check: check, Rule: rule, Code: code}
	}
	name := func(fs []record.Finding) string {
		var out []string
		for _, x := range fs {
			s := x.Check + ":" + x.Rule
			if x.Code != "" {
				s += "/" + string(x.Code)
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name string
		in   []record.Finding
		want string
	}{
		{"a duplicate id behind its consequences (node:test, two files with one test name)",
			[]record.Finding{f("unit", verdict.RuleReportUnproven, ""), f("unit", verdict.RuleUnproven, ""), f("unit", "report.invalid", rmerr.ReportIdentity)},
			"unit:report.invalid/RM-REPORT-002 unit:coverage.report-unproven unit:coverage.unproven"},
		{"an exit code after the failing tests",
			[]record.Finding{f("unit", verdict.RuleCheckFailed, ""), f("unit", "outcome.tests-failed", "")},
			"unit:outcome.tests-failed unit:outcome.check-failed"},
		{"a refusal before the unproven coverage it leaves",
			[]record.Finding{f("unit", verdict.RuleUnproven, ""), f("unit", "dependencies", rmerr.VerifyDependencies)},
			"unit:dependencies/RM-VERIFY-005 unit:coverage.unproven"},
		{"the memory limit is a cause of its own",
			[]record.Finding{{Check: "big", Rule: verdict.RuleCheckFailed, Message: "the check exited with code 137" + verdict.OOMKilledNote}, f("big", "outcome.tests-failed", "")},
			"big:outcome.check-failed big:outcome.tests-failed"},
		{"nothing else to say: kept",
			[]record.Finding{f("a", verdict.RuleCheckFailed, ""), f("a", verdict.RuleReportUnproven, "")},
			"a:outcome.check-failed a:coverage.report-unproven"},
		{"checks keep their places",
			[]record.Finding{f("", "coverage.empty-manifest", ""), f("a", verdict.RuleCheckFailed, ""), f("a", "outcome.focused", ""), f("b", verdict.RuleUnproven, "")},
			":coverage.empty-manifest a:outcome.focused a:outcome.check-failed b:coverage.unproven"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := name(tc.in)
			if got := name(explain.Order(tc.in)); got != tc.want {
				t.Errorf("Order = %s\nwant    %s", got, tc.want)
			}
			if name(tc.in) != in {
				t.Error("Order changed its input")
			}
		})
	}
}
