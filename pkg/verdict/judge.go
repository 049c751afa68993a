package verdict

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// Judge is the one place a check run's status, coverage and findings are
// decided (issue 12, "one place decides"): the engine records facts and calls
// it, Evaluate calls it for every run, and pkg/evidence's Verify calls it
// again on the signed facts and refuses a statement whose recorded status,
// coverage or findings differ. Nothing else in runmill sets a status.
//
// The rules, each one from spec § 3–4:
//
//   - a run that did not start (dependencies unprepared, report path
//     unusable, a change that does not merge with the base), timed out, or
//     moved its tree did not pass;
//   - exit code 0 is necessary: a non-zero exit fails a candidate run;
//   - exit code 0 is not sufficient: a failed or errored test in the
//     candidate's report fails the run whatever the exit code, and so does a
//     report fault (a package that did not build, a TAP "Bail out!") and a
//     JUnit summary that claims more failures than the file shows;
//   - a declared report that did not parse, or that executed no test, leaves
//     coverage unproven and fails the run;
//   - output phrases (zero tests, identity-free skips) decide only where no
//     valid report with executed tests exists: a valid report is the
//     authority on what ran, and a phrase a passing test printed is a note;
//   - a candidate-harness run (the landing commit with the change's own
//     harness, issue 25) is held to every candidate rule, and each of its
//     findings names it and the harness files the change edited; it has no
//     preservation findings, and its passes prove nothing about the base's
//     tests — it can only add failures;
//   - a candidate run that fails while its baseline failed too, in a change
//     that edits the check's harness, names the way out of the deadlock: no
//     change can fix a base harness, so only the operator's command can;
//   - a baseline run keeps preservation authority for the tests its report
//     shows passed, also when it exited non-zero, failed tests or ended early
//     (spec § 3: "the tests the report says passed still do"); malformed,
//     zero-test, timed-out, mutating and unstarted baselines fail closed —
//     unless the check is new in the change (no baseline contract).
func Judge(req Requirement, r Result) Judgement {
	j := &judging{req: req, r: r}
	switch r.Phase {
	case record.Candidate:
		j.candidate()
	case record.Baseline:
		j.baseline()
	case record.CandidateHarness:
		j.candidateHarness()
	default:
		j.fail(record.Finding{Rule: RuleInvalidRecord,
			Message: fmt.Sprintf("result has phase %q; want baseline, candidate or candidate-harness", r.Phase),
			Hint:    "a result must say which commit it measured"})
	}
	out := Judgement{Status: record.Passed, Coverage: record.Unproven, Findings: record.Normalize(j.findings), Notes: j.notes}
	if !j.ran || len(out.Findings) > 0 {
		out.Status = record.Failed
	}
	if j.proven {
		out.Coverage = record.Proven
	}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	return out
}

// Judgement is what Judge decided about one run.
type Judgement struct {
	Status   record.Status   `json:"status"`
	Coverage record.Coverage `json:"coverage"`
	// Findings are the reasons the run failed and blocks merge-readiness;
	// for a baseline, only what makes it unusable as evidence.
	Findings []record.Finding `json:"findings"`
	// Notes are observations that decided nothing (a baseline's failed
	// tests, a zero-test phrase beside a valid report).
	Notes []string `json:"notes"`
}

// ReportFacts is a parsed report as the decision needs it. It exists only
// when the declared report was written and parsed; otherwise Result.Report
// is nil.
type ReportFacts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// FailedTests are the first failed tests (by id) with the first line of
	// their failure message, as recorded; Failed counts them all.
	FailedTests []record.FailedTest `json:"failed_tests,omitempty"`
	// Faults are failures the report records outside any test ("scope:
	// message"): a package that did not build, a TAP "Bail out!".
	Faults []string `json:"faults,omitempty"`
	// ClaimedFailures is what the report's own summary says failed (JUnit
	// failures + errors attributes), -1 when it says nothing; ShownFailures
	// the failure elements the file shows (a test may carry two, a rerun
	// one each), which the claim is held to.
	ClaimedFailures int64 `json:"claimed_failures"`
	ShownFailures   int64 `json:"shown_failures"`
	// Duplicates are ids a baseline report repeats: each occurrence keeps
	// preservation authority, by count (pkg/outcome.Compare; a candidate
	// report with repeats does not parse).
	Duplicates int `json:"duplicates,omitempty"`
}

// MaxNamedFailures is how many failed tests a finding names; the rest are
// counted.
const MaxNamedFailures = 20

// Rules Judge derives from report facts.
const (
	RuleTestsFailed   = "outcome.tests-failed"
	RuleReportFault   = "outcome.report-fault"
	RuleClaimedFailed = "outcome.summary-claims-failures"
	RuleZeroTests     = "outcome.zero-tests"
	RuleNotStarted    = "outcome.not-started"
	// RuleHarnessUnpinned: the operator requires a pinned harness
	// (verification.require_pinned_harness) and runmill could not resolve
	// part of the command's.
	RuleHarnessUnpinned = "harness.unpinned"
)

// OutputRulePrefix marks observations read from a run's output rather than
// its report (zero-test phrases, identity-free skips): they decide only when
// no valid report with executed tests exists.
const OutputRulePrefix = "output."

type judging struct {
	req      Requirement
	r        Result
	findings []record.Finding
	notes    []string
	ran      bool // the run counts as having completed its command
	proven   bool
}

func (j *judging) fail(f record.Finding) {
	if f.Check == "" {
		f.Check = j.r.CheckID
	}
	j.findings = append(j.findings, f)
}

func (j *judging) note(format string, args ...any) {
	j.notes = append(j.notes, fmt.Sprintf("check %q (%s): ", j.r.CheckID, j.r.Phase)+fmt.Sprintf(format, args...))
}

// executed reports whether the run has a valid report in which tests ran.
func (j *judging) executed() bool {
	return j.r.Report != nil && j.r.Report.Passed+j.r.Report.Failed > 0
}

func (j *judging) candidate() {
	defer j.baseHarnessBroken()
	r := j.r
	j.ran = r.Started
	if len(r.LandingConflicts) > 0 {
		j.fail(mergeConflict(r.LandingConflicts))
	} else if !r.Started {
		j.notStarted(j.fail)
	}
	if r.TimedOut {
		j.fail(record.Finding{Rule: RuleTimedOut, Message: "the check timed out; every process was killed",
			Hint: "make the check finish within its timeout, or raise timeout: in its declaration"})
	}
	if r.TreeMoved {
		j.fail(record.Finding{Code: rmerr.VerifyTreeMoved, Rule: RuleTreeMoved,
			Message: "tree changed during the check; result invalidated",
			Hint:    "the check must not write to the checkout (formatters with --write, regenerated lockfiles, rewritten fixtures); write scratch data to $TMPDIR"})
	}
	// newOnly: with the change's harness edited, every failure of this run
	// is a test the base does not have. The base's harness decides the
	// base's tests (preservation); a new test may need what the change adds
	// to the harness (a fixture in a new conftest.py), so its failure here,
	// and the exit code it explains, are the candidate-harness run's to
	// judge: refusing it would refuse every honest new fixture. A base test
	// failing here still fails, whatever the change's own harness says.
	newOnly := j.newTestsOnly()
	if newOnly {
		j.note("%d test(s) new in the change failed with the base's harness, which keeps the change's new harness files out; the run %s judges them", r.NewFailed, CandidateHarnessWords)
	}
	if r.Started && r.ExitCode != 0 && !r.TimedOut && !(newOnly && !r.OOMKilled) {
		msg := fmt.Sprintf("the check exited with code %d", r.ExitCode)
		if r.OOMKilled {
			msg += OOMKilledNote
		}
		j.fail(record.Finding{Rule: RuleCheckFailed, Message: msg, Hint: "fix the failing check"})
	}
	if j.req.RequirePinnedHarness {
		for _, u := range r.HarnessUnpinned {
			j.fail(record.Finding{Rule: RuleHarnessUnpinned,
				Message: "harness not pinned: " + u + "; list it under harness:",
				Hint:    "list the files this part of the command runs or reads under the check's harness: in the base's .runmill/checks.yaml (or the operator policy's command), so the base's version runs"})
		}
	}
	j.observations()
	j.tamper()
	rep := r.Report
	if rep == nil && !j.req.Report {
		return
	}
	if rep == nil {
		// Spec § 4: when a report was declared, an unproven report also
		// prevents the base-to-candidate comparison and fails the check —
		// independent of fail_on_skipped_check.
		if r.Started {
			j.fail(record.Finding{Rule: RuleReportUnproven,
				Message: "the declared report was missing, invalid or unparsable, so preservation could not be compared",
				Hint:    "make the command write the declared report (junit, tap or go-json) at the declared path"})
		}
		return
	}
	if !j.executed() {
		j.fail(record.Finding{Rule: RuleZeroTests,
			Message: fmt.Sprintf("the report executed no test (%d skipped): a run that executed nothing did not pass", rep.Skipped),
			Hint:    "check the test command's path filters, test directory and file patterns; a report must record the tests that ran"})
		return
	}
	j.proven = true
	if rep.Failed > 0 && !newOnly {
		j.fail(failedTests(rep))
	}
	for _, f := range rep.Faults {
		j.fail(record.Finding{Rule: RuleReportFault, Message: "the report records a failure outside any test: " + f,
			Hint: "fix the failure (a package that does not build, a crash, a bail-out); a report with faults never describes a pass"})
	}
	if rep.ClaimedFailures > rep.ShownFailures {
		j.fail(record.Finding{Rule: RuleClaimedFailed,
			Message: fmt.Sprintf("the report's summary says %d tests failed or errored, but the file shows %d failure elements: the file says something failed", rep.ClaimedFailures, rep.ShownFailures),
			Hint:    "make the reporter write every failing test case; a summary that claims failures is not a pass"})
	}
}

// RuleTamper: the change's test code can decide from inside the test
// process what the run reports (issue 25, docs/outcome.md § Tamper).
const RuleTamper = "outcome.tamper"

// tamperHints say, per construct, the honest way to do what it may have
// been there for: each has one the scan accepts, so there is no exemption
// to declare (an exemption would be the way round the rule).
var tamperHints = map[string]string{
	"pytest-outcome":  "a harness may only add failures: set a report's outcome to \"failed\" or leave it; expect a failure with @pytest.mark.xfail(strict=True), skip with pytest.mark.skip — both show in the report",
	"pytest-deselect": "skip instead (item.add_marker(pytest.mark.skip(reason=...))), or announce the removal with config.hook.pytest_deselected(items=...); a new order (sorted(items, ...)) is accepted",
	"atexit":          "clean up in a fixture's teardown, pytest_sessionfinish or pytest_unconfigure; an atexit handler runs after the runner wrote its report (one that only removes temporary files is accepted)",
	"os-exit":         "let the process end through the runner (raise, pytest.exit, sys.exit); os._exit is accepted with a non-zero constant, in a forked child (if pid == 0 after os.fork()), or with pytest's exitstatus",
	"go-output":       "do not replace os.Stdout/os.Stderr or their descriptors in TestMain or init, nor spell --- PASS/--- FAIL there: go test and test2json read the test binary's output; capture output inside a test and restore it",
	"go-exit":         "exit with m.Run()'s result: os.Exit(m.Run()), or code := m.Run(); teardown(); os.Exit(code) (a non-zero constant for a failed setup is fine), or return from TestMain",
	"report-path":     "test code must not name the check's report file; the runner writes it, and runmill reads it",
	"unscanned":       "keep test code regular files inside the checkout and below the scan's 8 MiB cap",
}

// tamper makes every recorded tamper construct a finding: whatever the
// report says, the change's own code could have decided it.
func (j *judging) tamper() {
	for _, t := range j.r.Tamper {
		f := record.Finding{Rule: RuleTamper, File: t.File, Line: t.Line,
			Hint: tamperHints[t.Rule]}
		where := t.File
		if t.Line > 0 {
			where = fmt.Sprintf("%s:%d", t.File, t.Line)
		}
		switch {
		case t.Rule == "unscanned":
			f.Message = fmt.Sprintf("test code %s was not scanned for tamper (%s), so the run is not proven to report what ran", t.File, t.Code)
		case t.Rule == "report-path":
			f.Message = fmt.Sprintf("test code at %s names the declared report %s (%s): the report could be written by the tests, not the runner", where, quote(t.ReportPath), t.Code)
		default:
			f.Message = fmt.Sprintf("test code at %s can decide what the run reports (%s: %s), so its result proves nothing", where, t.Rule, t.Code)
		}
		if f.Hint == "" {
			f.Hint = "remove the construct from the test code"
		}
		j.fail(f)
	}
}

// Rules of the harness (issue 25).
const (
	// RuleBaseHarnessBroken: the base's own harness fails at the base tip
	// and the change edits it; the finding names the operator's override.
	RuleBaseHarnessBroken = "harness.base-broken"
)

// candidateHarness judges the landing commit run with the change's own
// harness: every candidate rule, each finding naming the run. Preservation
// is the candidate run's alone (the engine compares nothing here), so a
// test that passes here proves nothing about the base's tests.
func (j *judging) candidateHarness() {
	sub := &judging{req: j.req, r: j.r}
	sub.r.BaselineFailed = false // the deadlock is the base-harness run's to name
	sub.candidate()
	j.ran, j.proven, j.notes = sub.ran, sub.proven, sub.notes
	what := ", " + CandidateHarnessWords
	if len(j.r.HarnessChanged) > 0 {
		what += " (the change's version of " + quoteAll(j.r.HarnessChanged) + ")"
	}
	for _, f := range sub.findings {
		// Before the list a message names (failed tests, a fault), so
		// the reader sees which run failed before what failed.
		if head, list, ok := strings.Cut(f.Message, ": "); ok {
			f.Message = head + what + ": " + list
		} else {
			f.Message += what
		}
		j.fail(f)
	}
}

// newTestsOnly: the run's harness changed and every test it failed is new
// in the change, with nothing else wrong with its report.
func (j *judging) newTestsOnly() bool {
	r := j.r
	rep := r.Report
	return r.Phase == record.Candidate && len(r.HarnessChanged) > 0 && rep != nil &&
		rep.Failed > 0 && r.NewFailed == rep.Failed && len(rep.Faults) == 0 && rep.ClaimedFailures <= rep.ShownFailures
}

// CandidateHarnessWords mark every finding of a candidate-harness run (issue
// 25), so a reader tells its failures from the candidate run's.
const CandidateHarnessWords = "with the candidate's own harness"

// baseHarnessBroken adds, to a failing candidate run whose baseline failed
// too in a change that edits the check's harness, the finding that names
// the way out: the base's harness runs for every change, so a change cannot
// repair it, and the operator's command override is the only path.
func (j *judging) baseHarnessBroken() {
	r := j.r
	if !r.BaselineFailed || len(r.HarnessChanged) == 0 || len(r.LandingConflicts) > 0 || (j.ran && len(j.findings) == 0) {
		return
	}
	j.fail(record.Finding{Rule: RuleBaseHarnessBroken,
		Message: fmt.Sprintf("the base's own harness fails at the base tip (its baseline run did not pass), and this change edits it (%s); every change runs the base's version, so no change can repair it", quoteAll(r.HarnessChanged)),
		Hint:    "an operator can give the check the repaired command for this change: define it under verification.commands in the operator policy (docs/policy.md; it wins every conflict), and remove it once the repair has landed"})
}

func quoteAll(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = quote(p)
	}
	return strings.Join(q, ", ")
}

// MaxNamedConflicts is how many conflicting paths a finding names; the
// rest are counted.
const MaxNamedConflicts = 20

// mergeConflict is the finding of a change that does not merge with the
// base tip (issue 24): what would land is unknown, so nothing ran.
func mergeConflict(paths []string) record.Finding {
	named := paths[:min(len(paths), MaxNamedConflicts)]
	quoted := make([]string, len(named))
	for i, p := range named {
		quoted[i] = quote(p)
	}
	msg := fmt.Sprintf("the change does not merge with the base: git's merge conflicts in %s", strings.Join(quoted, ", "))
	if rest := len(paths) - len(named); rest > 0 {
		msg += fmt.Sprintf(" and %d more", rest)
	}
	return record.Finding{Code: rmerr.VerifyTreeMoved, Rule: RuleMergeConflict,
		Message: msg + "; there is no tree that would land, so no check ran",
		Hint:    "merge the base into the branch or rebase it onto the base, resolve the conflicts, and push"}
}

// notStarted fails a run the engine refused to start, unless the refusal
// itself is among the observations (then it is the finding, once). fail is
// the phase's way of adding a finding.
func (j *judging) notStarted(fail func(record.Finding)) {
	for _, o := range j.r.Observations {
		if !strings.HasPrefix(o.Rule, OutputRulePrefix) {
			return // the observation says why; it is a finding of its own
		}
	}
	fail(record.Finding{Rule: RuleNotStarted, Message: "the check was not started",
		Hint: "see the run's notes for why runmill did not start it"})
}

// observations turns what the engine observed into findings: everything
// counts, except output phrases where a valid report with executed tests is
// the authority.
func (j *judging) observations() {
	for _, o := range j.r.Observations {
		if strings.HasPrefix(o.Rule, OutputRulePrefix) {
			if j.executed() {
				j.note("%s ignored: the report shows %d tests ran (%s)", o.Rule, j.r.Report.Passed+j.r.Report.Failed, o.Message)
				continue
			}
		}
		j.fail(o)
	}
}

func failedTests(rep *ReportFacts) record.Finding {
	n := rep.Failed
	named := rep.FailedTests
	if len(named) > MaxNamedFailures {
		named = named[:MaxNamedFailures]
	}
	var b strings.Builder
	if n == 1 {
		b.WriteString("1 test failed in the report, whatever the exit code")
	} else {
		fmt.Fprintf(&b, "%d tests failed in the report, whatever the exit code", n)
	}
	ids := make([]report.TestID, 0, len(named))
	for i, t := range named {
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		b.WriteString(sep)
		b.WriteString(quoteID(t.ID))
		if t.Message != "" {
			b.WriteString(" (" + t.Message + ")")
		}
		ids = append(ids, t.ID)
	}
	if rest := n - len(named); rest > 0 && len(named) > 0 {
		fmt.Fprintf(&b, "; and %d more", rest)
	}
	return record.Finding{Rule: RuleTestsFailed, Message: b.String(), IDs: ids,
		Hint: "fix the failing tests; a masked exit code (|| true, ; true) does not make them pass"}
}

func quoteID(id report.TestID) string { return quote(string(id)) }

func (j *judging) baseline() {
	r, req := j.r, j.req
	// The run's own status says how it ended; only what makes it unusable
	// as evidence is a finding (fails closed).
	j.ran = r.Started && r.ExitCode == 0 && !r.TimedOut && !r.TreeMoved
	bad := func(f record.Finding) {
		if !strings.HasPrefix(f.Message, "baseline") {
			f.Message = "baseline run: " + f.Message
		}
		if req.NewInChange {
			j.ran = false
			j.note("no baseline: the check is new in this change (%s)", f.Message)
			return
		}
		j.fail(f)
	}
	switch {
	case len(r.LandingConflicts) > 0:
		// The candidate run says why (freshness.merge-conflict, once).
		j.ran = false
		j.note("not run: the change does not merge with the base")
	case !r.Started:
		j.notStarted(bad)
	}
	if r.TimedOut {
		bad(record.Finding{Rule: RuleTimedOut, Message: "timed out",
			Hint: "make the check finish within its timeout at the base commit, or raise timeout: in its declaration"})
	}
	if r.TreeMoved {
		bad(record.Finding{Code: rmerr.VerifyTreeMoved, Rule: RuleTreeMoved,
			Message: "tree changed during the run; result invalidated",
			Hint:    "the check must not write to the checkout; write scratch data to $TMPDIR"})
	}
	for _, o := range r.Observations {
		if strings.HasPrefix(o.Rule, OutputRulePrefix) {
			// A baseline's evidence is its report; phrases never fail it.
			j.note("%s: %s", o.Rule, o.Message)
			continue
		}
		bad(o)
	}
	rep := r.Report
	switch {
	case !req.Report:
	case rep == nil:
		if r.Started {
			bad(record.Finding{Rule: RuleBaselineInvalid,
				Message: "produced no valid inventory",
				Hint:    "the declared report must be written and valid at the base commit too; fix the reporter configuration at the base first"})
		}
	case rep.Passed+rep.Failed == 0:
		bad(record.Finding{Rule: RuleZeroTests, Message: "its report executed no test, so no test has preservation authority",
			Hint: "fix the check at the base first: its report must record the tests it ran"})
	default:
		j.proven = true
	}
	// newOnly: with the change's harness edited, every failure of this run
	// is a test the base does not have. The base's harness decides the
	// base's tests (preservation); a new test may need what the change adds
	// to the harness (a fixture in a new conftest.py), so its failure here,
	// and the exit code it explains, are the candidate-harness run's to
	// judge: refusing it would refuse every honest new fixture. A base test
	// failing here still fails, whatever the change's own harness says.
	newOnly := j.newTestsOnly()
	if newOnly {
		j.note("%d test(s) new in the change failed with the base's harness, which keeps the change's new harness files out; the run %s judges them", r.NewFailed, CandidateHarnessWords)
	}
	if r.Started && r.ExitCode != 0 && !r.TimedOut && !(newOnly && !r.OOMKilled) {
		j.ran = false
		j.note("the baseline exited with code %d; the tests its report shows passed keep preservation authority", r.ExitCode)
	}
	if rep != nil {
		if rep.Failed > 0 {
			j.ran = false
			j.note("%d tests failed at the baseline; they establish no preservation authority", rep.Failed)
		}
		for _, f := range rep.Faults {
			j.ran = false
			j.note("the baseline report records a failure outside any test (%s); the tests it shows passed keep preservation authority", f)
		}
		if rep.Duplicates > 0 {
			j.note("the baseline report repeats %d test ids; each occurrence that passed keeps preservation authority, by count", rep.Duplicates)
		}
	}
}

// SortFailedTests returns the failed tests to record: the first MaxNamedFailures by
// id. Both the engine and a verifier use it, so the recorded list has one
// form.
func SortFailedTests(ts []record.FailedTest) []record.FailedTest {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b record.FailedTest) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if len(out) > MaxNamedFailures {
		out = out[:MaxNamedFailures]
	}
	return out
}

func quote(s string) string { return strconv.Quote(s) }
