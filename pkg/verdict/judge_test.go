package verdict_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

// TestJudge pins the one decision function over every fact that changes a
// run's status, coverage or findings (issue 12: "one place decides").
func TestJudge(t *testing.T) {
	rep := func(passed, failed, skipped int) *verdict.ReportFacts {
		return &verdict.ReportFacts{Passed: passed, Failed: failed, Skipped: skipped, ClaimedFailures: -1}
	}
	ran := func(phase record.Phase, f func(*verdict.Result)) verdict.Result {
		r := verdict.Result{CheckID: "unit", Phase: phase, Executor: record.Orchestrator, Started: true, Report: rep(3, 0, 0)}
		if f != nil {
			f(&r)
		}
		return r
	}
	cand := func(f func(*verdict.Result)) verdict.Result { return ran(record.Candidate, f) }
	baseRun := func(f func(*verdict.Result)) verdict.Result { return ran(record.Baseline, f) }
	reportCheck := verdict.Requirement{CheckID: "unit", Required: true, Runnable: true, Report: true}
	plainCheck := verdict.Requirement{CheckID: "unit", Required: true, Runnable: true}
	newCheck := reportCheck
	newCheck.NewInChange = true
	pinnedOnly := reportCheck
	pinnedOnly.RequirePinnedHarness = true
	obs := func(rule string) record.Finding {
		return record.Finding{Rule: rule, Message: rule + " seen", Hint: "fix it"}
	}
	type tc struct {
		name     string
		req      verdict.Requirement
		run      verdict.Result
		status   record.Status
		coverage record.Coverage
		rules    []string
		notes    int
		contains string // in the first finding's message
	}
	P, F := record.Passed, record.Failed
	Pr, Un := record.Proven, record.Unproven
	for _, c := range []tc{
		// Candidate runs.
		{name: "passing report", req: reportCheck, run: cand(nil), status: P, coverage: Pr},
		{name: "a change that does not merge with the base: the conflict, once, naming the paths", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Started, r.Report, r.LandingConflicts = false, nil, []string{"lib/fix.sh", "web/a b.js"}
			}),
			status: F, coverage: Un, rules: []string{verdict.RuleMergeConflict}, contains: `git's merge conflicts in "lib/fix.sh", "web/a b.js"`},
		{name: "a conflicted baseline is a note; the candidate carries the finding", req: reportCheck,
			run: baseRun(func(r *verdict.Result) {
				r.Started, r.Report, r.LandingConflicts = false, nil, []string{"lib/fix.sh"}
			}),
			status: F, coverage: Un, notes: 1},
		{name: "an unresolved harness is a fact, not a failure, by default", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.HarnessUnpinned = []string{"mvn test: runmill does not know which files mvn reads"}
			}),
			status: P, coverage: Pr},
		{name: "require_pinned_harness: an unresolved harness fails, naming the part", req: pinnedOnly,
			run: cand(func(r *verdict.Result) {
				r.HarnessUnpinned = []string{"mvn test: runmill does not know which files mvn reads"}
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleHarnessUnpinned}, contains: "harness not pinned: mvn test: runmill does not know which files mvn reads; list it under harness:"},
		{name: "require_pinned_harness: a resolved harness passes", req: pinnedOnly, run: cand(nil), status: P, coverage: Pr},
		{name: "a tamper fact fails a passing report, naming file:line", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Tamper = []record.Tamper{{File: "tests/conftest.py", Line: 7, Rule: "atexit", Code: "atexit.register(fix)"}}
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleTamper}, contains: "tests/conftest.py:7 can decide what the run reports (atexit: atexit.register(fix))"},
		{name: "a report-path fact names the report", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Tamper = []record.Tamper{{File: "x_test.go", Line: 3, Rule: "report-path", Code: `"reports/u.json"`, ReportPath: "reports/u.json"}}
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleTamper}, contains: `names the declared report "reports/u.json"`},
		{name: "no report declared passes unproven", req: plainCheck, run: cand(func(r *verdict.Result) { r.Report = nil }), status: P, coverage: Un},
		{name: "masked failure: exit 0 with a failed test", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Report = rep(4, 1, 0)
				r.Report.FailedTests = []record.FailedTest{{ID: "cart::TestTotal", Message: "cart_test.go:12: got 1, want 2"}}
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleTestsFailed}, contains: `"cart::TestTotal" (cart_test.go:12: got 1, want 2)`},
		{name: "failed tests named up to the cap, then counted", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Report = rep(0, 25, 0)
				for i := range 25 {
					r.Report.FailedTests = append(r.Report.FailedTests, record.FailedTest{ID: report.TestID("t" + string(rune('a'+i)))})
				}
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleTestsFailed}, contains: "; and 5 more"},
		{name: "non-zero exit and failed tests", req: reportCheck, run: cand(func(r *verdict.Result) { r.ExitCode, r.Report = 1, rep(2, 1, 0) }),
			status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed}},
		{name: "non-zero exit with a clean report", req: reportCheck, run: cand(func(r *verdict.Result) { r.ExitCode = 2 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed}},
		{name: "out of memory is named", req: plainCheck, run: cand(func(r *verdict.Result) { r.ExitCode, r.OOMKilled, r.Report = 137, true, nil }),
			status: F, coverage: Un, rules: []string{verdict.RuleCheckFailed}, contains: "memory limit"},
		{name: "report fault with exit 0 (a package that does not build)", req: reportCheck,
			run:    cand(func(r *verdict.Result) { r.Report.Faults = []string{"example.com/x: build failed"} }),
			status: F, coverage: Pr, rules: []string{verdict.RuleReportFault}},
		{name: "summary claims more failures than the file shows", req: reportCheck,
			run:    cand(func(r *verdict.Result) { r.Report.ClaimedFailures = 2 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleClaimedFailed}},
		{name: "summary agreeing with the file", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Report, r.ExitCode = rep(2, 1, 0), 1
				r.Report.ClaimedFailures, r.Report.ShownFailures = 2, 2 // two <failure> elements in one test
			}),
			status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed}},
		{name: "declared report missing", req: reportCheck,
			run:    cand(func(r *verdict.Result) { r.Report, r.Observations = nil, []record.Finding{obs("report.empty")} }),
			status: F, coverage: Un, rules: []string{"report.empty", verdict.RuleReportUnproven}},
		{name: "report executed nothing", req: reportCheck, run: cand(func(r *verdict.Result) { r.Report = rep(0, 0, 4) }),
			status: F, coverage: Un, rules: []string{verdict.RuleZeroTests}},
		{name: "empty report", req: reportCheck, run: cand(func(r *verdict.Result) { r.Report = rep(0, 0, 0) }),
			status: F, coverage: Un, rules: []string{verdict.RuleZeroTests}},
		{name: "refused before start says why", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Started, r.Report, r.Observations = false, nil, []record.Finding{obs("dependencies.unprepared")}
			}),
			status: F, coverage: Un, rules: []string{"dependencies.unprepared"}},
		{name: "not started without a reason is still not a pass", req: plainCheck,
			run:    cand(func(r *verdict.Result) { r.Started, r.Report = false, nil }),
			status: F, coverage: Un, rules: []string{verdict.RuleNotStarted}},
		{name: "timeout", req: reportCheck, run: cand(func(r *verdict.Result) { r.TimedOut, r.ExitCode = true, -1 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleTimedOut}},
		{name: "tree moved", req: reportCheck, run: cand(func(r *verdict.Result) { r.TreeMoved = true }),
			status: F, coverage: Pr, rules: []string{verdict.RuleTreeMoved}},
		{name: "zero-test phrase without a report decides", req: plainCheck,
			run:    cand(func(r *verdict.Result) { r.Report, r.Observations = nil, []record.Finding{obs("output.zero-tests")} }),
			status: F, coverage: Un, rules: []string{"output.zero-tests"}},
		{name: "identity-free skip without a report decides", req: plainCheck,
			run:    cand(func(r *verdict.Result) { r.Report, r.Observations = nil, []record.Finding{obs("output.skipped")} }),
			status: F, coverage: Un, rules: []string{"output.skipped"}},
		{name: "zero-test phrase beside a valid report is a note", req: reportCheck,
			run:    cand(func(r *verdict.Result) { r.Observations = []record.Finding{obs("output.zero-tests")} }),
			status: P, coverage: Pr, notes: 1},
		{name: "zero-test phrase beside a report that ran nothing counts", req: reportCheck,
			run: cand(func(r *verdict.Result) {
				r.Report, r.Observations = rep(0, 0, 0), []record.Finding{obs("output.zero-tests")}
			}),
			status: F, coverage: Un, rules: []string{"output.zero-tests", verdict.RuleZeroTests}},
		{name: "preservation finding", req: reportCheck,
			run:    cand(func(r *verdict.Result) { r.Observations = []record.Finding{obs("outcome.preservation.missing")} }),
			status: F, coverage: Pr, rules: []string{"outcome.preservation.missing"}},
		// Baseline runs: only what makes them unusable as evidence blocks.
		{name: "baseline passing", req: reportCheck, run: baseRun(nil), status: P, coverage: Pr},
		{name: "baseline with failed tests and exit 1 keeps authority", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.ExitCode, r.Report = 1, rep(3, 2, 0) }), status: F, coverage: Pr, notes: 2},
		{name: "baseline that bailed out keeps authority", req: reportCheck,
			run:    baseRun(func(r *verdict.Result) { r.ExitCode = 1; r.Report.Faults = []string{"report: Bail out! db down"} }),
			status: F, coverage: Pr, notes: 2},
		{name: "baseline with repeated ids keeps the unique ones", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.Report.Duplicates = 2 }), status: P, coverage: Pr, notes: 1},
		{name: "baseline without an inventory fails closed", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.ExitCode, r.Report = 127, nil }), status: F, coverage: Un, rules: []string{verdict.RuleBaselineInvalid}, notes: 1},
		{name: "baseline that executed nothing fails closed", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.Report = rep(0, 0, 2) }), status: F, coverage: Un, rules: []string{verdict.RuleZeroTests}},
		{name: "baseline timeout fails closed", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.TimedOut, r.ExitCode = true, -1 }), status: F, coverage: Pr, rules: []string{verdict.RuleTimedOut}},
		{name: "baseline that moved its tree fails closed", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.TreeMoved = true }), status: F, coverage: Pr, rules: []string{verdict.RuleTreeMoved}},
		{name: "baseline refused fails closed", req: reportCheck,
			run: baseRun(func(r *verdict.Result) {
				r.Started, r.Report, r.Observations = false, nil, []record.Finding{obs("dependencies.unprepared")}
			}),
			status: F, coverage: Un, rules: []string{"dependencies.unprepared"}},
		{name: "baseline not started without a reason fails closed", req: reportCheck,
			run:    baseRun(func(r *verdict.Result) { r.Started, r.Report = false, nil }),
			status: F, coverage: Un, rules: []string{verdict.RuleNotStarted}},
		{name: "baseline phrases are notes", req: reportCheck,
			run: baseRun(func(r *verdict.Result) { r.Observations = []record.Finding{obs("output.zero-tests")} }), status: P, coverage: Pr, notes: 1},
		{name: "no baseline contract: a check new in the change", req: newCheck,
			run: baseRun(func(r *verdict.Result) { r.ExitCode, r.Report = 127, nil }), status: F, coverage: Un, notes: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := verdict.Judge(c.req, c.run)
			var rules []string
			for _, f := range j.Findings {
				rules = append(rules, f.Rule)
				if f.Check != "unit" || f.Hint == "" {
					t.Errorf("finding %+v must name its check and a fix", f)
				}
			}
			slices.Sort(rules)
			want := slices.Clone(c.rules)
			slices.Sort(want)
			if j.Status != c.status || j.Coverage != c.coverage || !slices.Equal(rules, want) || len(j.Notes) != c.notes {
				t.Errorf("Judge = %s/%s rules %q notes %q; want %s/%s rules %q, %d notes", j.Status, j.Coverage, rules, j.Notes, c.status, c.coverage, want, c.notes)
			}
			if c.contains != "" && (len(j.Findings) == 0 || !strings.Contains(j.Findings[0].Message, c.contains)) {
				t.Errorf("findings %+v; want a message containing %q", j.Findings, c.contains)
			}
			// A run with a blocking finding is never passed.
			if len(j.Findings) > 0 && j.Status == record.Passed {
				t.Errorf("passed with findings %+v", j.Findings)
			}
		})
	}
}
