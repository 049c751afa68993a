package verdict_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 25: when the change edits a check's harness, the landing commit
// also runs with the change's own harness. That run can only add failures,
// each naming it and the edited files; a broken base harness names the
// operator's way out.

var edited = []string{"tests/run.sh"}

func harnessRun(phase record.Phase, f func(*verdict.Result)) verdict.Result {
	r := verdict.Result{CheckID: "unit", Phase: phase, Executor: record.Orchestrator, Started: true,
		Report: &verdict.ReportFacts{Passed: 3, ClaimedFailures: -1}, HarnessChanged: edited}
	if f != nil {
		f(&r)
	}
	return r
}

func TestJudgeCandidateHarness(t *testing.T) {
	reportCheck := verdict.Requirement{CheckID: "unit", Required: true, Runnable: true, Report: true}
	own := func(f func(*verdict.Result)) verdict.Result { return harnessRun(record.CandidateHarness, f) }
	cand := func(f func(*verdict.Result)) verdict.Result { return harnessRun(record.Candidate, f) }
	obs := func(rule string) record.Finding {
		return record.Finding{Rule: rule, Message: rule + " seen", Hint: "fix it"}
	}
	P, F := record.Passed, record.Failed
	Pr, Un := record.Proven, record.Unproven
	for _, c := range []struct {
		name     string
		run      verdict.Result
		status   record.Status
		coverage record.Coverage
		rules    []string
		// contains: in every finding's message; hint: in some finding's hint.
		contains, hint string
	}{
		// The candidate's own harness: every candidate rule, named.
		{name: "own harness passing", run: own(nil), status: P, coverage: Pr},
		{name: "own harness with a failed test: the run and the file named before the test", run: own(func(r *verdict.Result) {
			r.Report.Failed, r.Report.FailedTests = 1, []record.FailedTest{{ID: "tests/new/x.t"}}
		}), status: F, coverage: Pr, rules: []string{verdict.RuleTestsFailed},
			contains: `whatever the exit code, with the candidate's own harness (the change's version of "tests/run.sh"): "tests/new/x.t"`},
		{name: "own harness exiting non-zero", run: own(func(r *verdict.Result) { r.ExitCode = 1 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed}, contains: `exited with code 1, with the candidate's own harness (the change's version of "tests/run.sh")`},
		{name: "own harness erroring: a report fault", run: own(func(r *verdict.Result) { r.Report.Faults = []string{"pkg: build failed"} }),
			status: F, coverage: Pr, rules: []string{verdict.RuleReportFault}, contains: verdict.CandidateHarnessWords},
		{name: "own harness without its report", run: own(func(r *verdict.Result) { r.Report, r.Observations = nil, []record.Finding{obs("report.empty")} }),
			status: F, coverage: Un, rules: []string{"report.empty", verdict.RuleReportUnproven}, contains: verdict.CandidateHarnessWords},
		{name: "own harness whose report ran no test", run: own(func(r *verdict.Result) { r.Report = &verdict.ReportFacts{Skipped: 3, ClaimedFailures: -1} }),
			status: F, coverage: Un, rules: []string{verdict.RuleZeroTests}, contains: verdict.CandidateHarnessWords},
		{name: "own harness with a focus observation", run: own(func(r *verdict.Result) { r.Observations = []record.Finding{obs("outcome.focused")} }),
			status: F, coverage: Pr, rules: []string{"outcome.focused"}, contains: verdict.CandidateHarnessWords},
		{name: "own harness timing out", run: own(func(r *verdict.Result) { r.TimedOut, r.ExitCode = true, -1 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleTimedOut}, contains: verdict.CandidateHarnessWords},
		{name: "own harness refused", run: own(func(r *verdict.Result) {
			r.Started, r.Report, r.Observations = false, nil, []record.Finding{obs("dependencies.unprepared")}
		}), status: F, coverage: Un, rules: []string{"dependencies.unprepared"}, contains: verdict.CandidateHarnessWords},
		{name: "own harness moving its tree", run: own(func(r *verdict.Result) { r.TreeMoved = true }),
			status: F, coverage: Pr, rules: []string{verdict.RuleTreeMoved}, contains: verdict.CandidateHarnessWords},
		{name: "own harness failing on a broken base: the candidate run names the deadlock, not this one", run: own(func(r *verdict.Result) {
			r.ExitCode, r.BaselineFailed = 1, true
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed}, contains: verdict.CandidateHarnessWords},
		// The deadlock: the base's harness fails at the base tip and the
		// change edits it.
		{name: "a broken base harness the change edits names the override", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.BaselineFailed = 1, true
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleBaseHarnessBroken}, hint: "verification.commands"},
		{name: "a broken base harness whose failed tests still fail here", run: cand(func(r *verdict.Result) {
			r.Report.Failed, r.Report.FailedTests, r.BaselineFailed = 1, []record.FailedTest{{ID: "a"}}, true
		}), status: F, coverage: Pr, rules: []string{verdict.RuleTestsFailed, verdict.RuleBaseHarnessBroken}, hint: "verification.commands"},
		{name: "a broken base the change repairs without its harness: nothing to name", run: cand(func(r *verdict.Result) { r.BaselineFailed = true }),
			status: P, coverage: Pr},
		{name: "a failing candidate whose harness did not change: no deadlock", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.BaselineFailed, r.HarnessChanged = 1, true, nil
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed}},
		{name: "a failing candidate over a passing baseline: no deadlock", run: cand(func(r *verdict.Result) { r.ExitCode = 1 }),
			status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed}},
		// New tests failing with the base's harness (a fixture in a new
		// conftest.py kept out): the candidate-harness run judges them.
		{name: "only new tests failed with the base's harness: the own-harness run judges them", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.Report.Failed, r.Report.FailedTests, r.NewFailed = 1, 1, []record.FailedTest{{ID: "tests/test_new.py::test_sums"}}, 1
		}), status: P, coverage: Pr},
		{name: "a base test failed beside a new one: both fail the run", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.Report.Failed, r.Report.FailedTests, r.NewFailed = 1, 2, []record.FailedTest{{ID: "a"}, {ID: "new"}}, 1
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed}},
		{name: "new tests failing where the harness did not change fail the run", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.Report.Failed, r.Report.FailedTests, r.NewFailed, r.HarnessChanged = 1, 1, []record.FailedTest{{ID: "new"}}, 1, nil
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed}},
		{name: "new tests failing with a report fault still fail the run", run: cand(func(r *verdict.Result) {
			r.ExitCode, r.Report.Failed, r.Report.FailedTests, r.NewFailed, r.Report.Faults = 1, 1, []record.FailedTest{{ID: "new"}}, 1, []string{"crash"}
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed, verdict.RuleReportFault}},
		{name: "new tests failing in the own-harness run fail it", run: own(func(r *verdict.Result) {
			r.ExitCode, r.Report.Failed, r.Report.FailedTests, r.NewFailed = 1, 1, []record.FailedTest{{ID: "new"}}, 1
		}), status: F, coverage: Pr, rules: []string{verdict.RuleCheckFailed, verdict.RuleTestsFailed}, contains: verdict.CandidateHarnessWords},
		{name: "a change that does not merge: the conflict alone", run: cand(func(r *verdict.Result) {
			r.Started, r.Report, r.LandingConflicts, r.BaselineFailed = false, nil, []string{"tests/run.sh"}, true
		}), status: F, coverage: Un, rules: []string{verdict.RuleMergeConflict}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := verdict.Judge(reportCheck, c.run)
			var rules []string
			hinted := c.hint == ""
			for _, f := range j.Findings {
				rules = append(rules, f.Rule)
				if f.Check != "unit" || f.Hint == "" {
					t.Errorf("finding %+v must name its check and a fix", f)
				}
				if c.contains != "" && !strings.Contains(f.Message, c.contains) {
					t.Errorf("finding %q does not say %q", f.Message, c.contains)
				}
				hinted = hinted || strings.Contains(f.Hint, c.hint)
				if f.Rule == verdict.RuleBaseHarnessBroken && !strings.Contains(f.Message, `"tests/run.sh"`) {
					t.Errorf("the deadlock finding %q does not name the edited harness", f.Message)
				}
			}
			slices.Sort(rules)
			want := slices.Clone(c.rules)
			slices.Sort(want)
			if j.Status != c.status || j.Coverage != c.coverage || !slices.Equal(rules, want) {
				t.Errorf("Judge = %s/%s rules %q; want %s/%s rules %q", j.Status, j.Coverage, rules, c.status, c.coverage, want)
			}
			if !hinted {
				t.Errorf("no finding's hint says %q: %+v", c.hint, j.Findings)
			}
		})
	}
}

// TestEvaluateCandidateHarness: a changed harness is covered only with both
// candidate runs; the own-harness run's passes satisfy nothing.
func TestEvaluateCandidateHarness(t *testing.T) {
	req := withReport(local("unit"))
	baseline := harnessRun(record.Baseline, func(r *verdict.Result) { r.HarnessChanged = nil })
	cand := harnessRun(record.Candidate, nil)
	own := harnessRun(record.CandidateHarness, nil)
	for _, c := range []struct {
		name    string
		results []verdict.Result
		ready   bool
		rules   []string
	}{
		{name: "both runs pass", results: []verdict.Result{baseline, cand, own}, ready: true},
		{name: "the own-harness run is missing", results: []verdict.Result{baseline, cand}, rules: []string{verdict.RuleNoCandidateHarness}},
		{name: "the own-harness run by someone else does not count", results: []verdict.Result{baseline, cand,
			with(own, func(r *verdict.Result) { r.Executor = "agent" })}, rules: []string{verdict.RuleNoCandidateHarness}},
		{name: "the own-harness run fails a wired-in test", results: []verdict.Result{baseline, cand,
			harnessRun(record.CandidateHarness, func(r *verdict.Result) {
				r.Report.Failed, r.Report.FailedTests = 1, []record.FailedTest{{ID: "tests/new/x.t"}}
			})},
			rules: []string{verdict.RuleTestsFailed}},
		{name: "its passes never satisfy preservation", results: []verdict.Result{baseline,
			with(cand, func(r *verdict.Result) {
				r.Observations = []record.Finding{{Rule: "outcome.preservation.missing", Message: "a base test is missing", Hint: "restore it"}}
			}), own}, rules: []string{"outcome.preservation.missing"}},
		{name: "its passes never satisfy the candidate run", results: []verdict.Result{baseline, own}, rules: []string{verdict.RuleNoResult}},
		{name: "a change that does not merge needs no own-harness run", results: []verdict.Result{
			with(baseline, func(r *verdict.Result) {
				r.Started, r.Report, r.LandingConflicts = false, nil, []string{"tests/run.sh"}
			}),
			with(cand, func(r *verdict.Result) {
				r.Started, r.Report, r.LandingConflicts = false, nil, []string{"tests/run.sh"}
			})},
			rules: []string{verdict.RuleUnproven, verdict.RuleMergeConflict}},
		{name: "an unchanged harness needs no own-harness run", results: []verdict.Result{baseline,
			with(cand, func(r *verdict.Result) { r.HarnessChanged = nil })}, ready: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := verdict.Evaluate(verdict.Input{Requirements: []verdict.Requirement{req}, Results: c.results})
			var rules []string
			for _, f := range v.Reasons() {
				rules = append(rules, f.Rule)
			}
			if v.MergeReady != c.ready || !slices.Equal(rules, c.rules) {
				t.Errorf("merge-ready %v rules %q; want %v %q", v.MergeReady, rules, c.ready, c.rules)
			}
			for _, f := range v.Reasons() {
				if f.Rule == verdict.RuleNoCandidateHarness && !strings.Contains(f.Message, `"tests/run.sh"`) {
					t.Errorf("the coverage finding %q does not name the edited harness", f.Message)
				}
			}
		})
	}
}
