// Package verdict decides merge-readiness from records: the coverage pass of
// spec § 2 ("every required, locally-executable check must have produced a
// result"), the proven/unproven gate of § 4 and the final rule of "The final
// verdict":
//
//	mergeReady = !anyFailed && !lacksRequiredProof && len(failures) == 0
//
// It is pure: no I/O, no clock, no map-order dependence. Issue 5 recomputes a
// Verdict from signed records and compares it for equality, so Evaluate's
// output depends on the content of its input only, never on its order.
package verdict

import (
	"fmt"
	"slices"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Requirement is one check of the resolved manifest, as the coverage pass
// needs it.
type Requirement struct {
	CheckID  string `json:"check_id"`
	Required bool   `json:"required"`
	// Runnable: the manifest holds a local command for the check.
	Runnable bool `json:"runnable"`
	// Remote: the check is sourced from github (branch protection) and is
	// satisfied by CI reconciliation, not by running anything.
	Remote bool `json:"remote"`
	// Report: the check declares a machine-readable report, so it also runs
	// at the base and the baseline must produce a valid inventory (spec § 3).
	Report bool `json:"report"`
	// NewInChange: the check comes from a repository policy that is new in
	// the change (read_from: working-tree), so it has no baseline contract:
	// a baseline that cannot run is a note, and the candidate run stands
	// alone.
	NewInChange bool     `json:"new_in_change,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	// RequirePinnedHarness: the operator's
	// verification.require_pinned_harness; a candidate run with unresolved
	// harness parts fails.
	RequirePinnedHarness bool `json:"require_pinned_harness,omitempty"`
}

// Result is one recorded check run: the facts the orchestrator observed.
// Its status, coverage and findings are not facts; Judge derives them.
type Result struct {
	CheckID  string       `json:"check_id"`
	Phase    record.Phase `json:"phase"`
	Executor string       `json:"executor"`
	// Started: the command was started in the sandbox. A run runmill
	// refused to start (dependencies unprepared, an unusable report path)
	// has an observation saying why.
	Started   bool `json:"started"`
	ExitCode  int  `json:"exit_code"`
	TimedOut  bool `json:"timed_out"`
	OOMKilled bool `json:"oom_killed,omitempty"`
	TreeMoved bool `json:"tree_moved"`
	// Report is the declared report as parsed; nil when none was declared,
	// written or parsable.
	Report *ReportFacts `json:"report,omitempty"`
	// LandingConflicts are the paths the landing merge (the base tip and
	// the head) conflicted in: the run had no tree to measure.
	LandingConflicts []string `json:"landing_conflicts,omitempty"`
	// HarnessUnpinned are the parts of the command whose harness runmill
	// could not resolve, "part: reason" (the run's harness record).
	HarnessUnpinned []string `json:"harness_unpinned,omitempty"`
	// Observations are what the engine observed beyond these facts: report
	// and dependency refusals, output phrases (rules OutputRulePrefix…),
	// preservation findings, a commit's tree that changed between checkouts.
	Observations []record.Finding `json:"observations,omitempty"`
	// Tamper are the constructs of the change's test code that can decide
	// from inside the test process what a candidate run reports (issue 25).
	Tamper []record.Tamper `json:"tamper,omitempty"`
	// HarnessChanged are, for a candidate or candidate-harness result, the
	// harness files of the check whose base version the candidate run saw
	// instead of the change's (pkg/harness Record.Changed), sorted. Not
	// empty: the check is covered only with a candidate-harness result too
	// (issue 25).
	HarnessChanged []string `json:"harness_changed,omitempty"`
	// BaselineFailed: for a candidate result, the check's baseline run at
	// the base tip did not pass (Judge's status of it). With HarnessChanged
	// it is the deadlock of a broken base harness that no change can fix.
	BaselineFailed bool `json:"baseline_failed,omitempty"`
	// NewFailed: for a candidate result whose harness changed, how many of
	// its failed tests the check's baseline report does not list (tests new
	// in the change). They failed under the base's harness, which keeps the
	// change's new harness files out: the candidate-harness run judges them.
	NewFailed int `json:"new_failed,omitempty"`
}

// Input is every record the verdict is computed from.
type Input struct {
	Requirements []Requirement         `json:"requirements"`
	Results      []Result              `json:"results"`
	Remote       []record.RemoteResult `json:"remote"`
	// PendingContexts are required remote contexts whose reconciliation is
	// still inside its wait window. They block merge-readiness (nothing is
	// proven yet) but are not RM-VERIFY-001.
	PendingContexts []string `json:"pending_contexts,omitempty"`
	// Failures the caller decided: RM-CI-002 after 10 minutes with no run
	// scheduled (Check = the context; it replaces RM-VERIFY-001 for that
	// context), RM-VERIFY-004, RM-VERIFY-005 ….
	Failures []record.Finding `json:"failures,omitempty"`
	// AllowUnproven is verification.fail_on_skipped_check: false. The zero
	// value is the specification's default (true). It never turns a failed
	// result into a pass.
	AllowUnproven bool `json:"allow_unproven,omitempty"`
}

// Verdict is the merge-readiness decision and every reason for it.
type Verdict struct {
	MergeReady         bool `json:"merge_ready"`
	AnyFailed          bool `json:"any_failed"`
	LacksRequiredProof bool `json:"lacks_required_proof"`
	FailOnSkippedCheck bool `json:"fail_on_skipped_check"`
	// Failed: why counted results failed (anyFailed).
	Failed []record.Finding `json:"failed"`
	// Unproven: required results whose coverage is not proven while
	// fail_on_skipped_check is true (lacksRequiredProof).
	Unproven []record.Finding `json:"unproven"`
	// Failures: checks that never ran, produced no result, had no runnable
	// command or no passing remote conclusion, and the caller's failures.
	Failures []record.Finding `json:"failures"`
	// Notes are observations that did not decide anything (ignored advisory
	// results, allowed baseline failures).
	Notes []string `json:"notes"`
}

// Reasons returns every finding of v in canonical order.
func (v Verdict) Reasons() []record.Finding {
	return record.Normalize(slices.Concat(v.Failed, v.Unproven, v.Failures))
}

// OOMKilledNote ends a RuleCheckFailed message when the memory limit
// killed a process: that exit is a cause of its own, not what failing tests
// explain.
const OOMKilledNote = "; the memory limit killed a process"

// Rules of this package (Finding.Rule).
const (
	RuleNoResult        = "coverage.no-result"
	RuleNoBaseline      = "coverage.no-baseline-result"
	RuleNoRunnable      = "coverage.no-runnable-command"
	RuleEmptyManifest   = "coverage.empty-manifest"
	RuleRemoteMissing   = "coverage.remote-no-result"
	RuleRemotePending   = "coverage.remote-pending"
	RuleRemoteNotRun    = "coverage.remote-not-run"
	RuleRemoteFailed    = "coverage.remote-failed"
	RuleUnproven        = "coverage.unproven"
	RuleReportUnproven  = "coverage.report-unproven"
	RuleCheckFailed     = "outcome.check-failed"
	RuleTimedOut        = "outcome.timed-out"
	RuleTreeMoved       = "freshness.tree-moved"
	RuleMergeConflict   = "freshness.merge-conflict"
	RuleBaselineInvalid = "baseline.invalid"
	// RuleNoCandidateHarness: the harness changed, and the candidate's own
	// harness did not run (issue 25).
	RuleNoCandidateHarness = "coverage.no-candidate-harness-result"
	RuleInvalidRecord      = "record.invalid"
	RuleUnlistedCheck      = "record.unlisted-check"
	RuleDuplicateCheck     = "record.duplicate-check"
	// RuleBaseProof: the statement is a base proof (`verify --prove-base`),
	// which verified no change; the orchestrator records it among the
	// failures so its verdict is never merge-ready, whatever ran.
	RuleBaseProof = "coverage.base-proof"
)

// Evaluate computes the verdict. It never fails: a record it cannot make sense
// of is itself a reason not to be merge-ready.
func Evaluate(in Input) Verdict {
	e := evaluation{allowUnproven: in.AllowUnproven}
	reqs := e.requirements(in.Requirements)

	type key struct {
		check string
		phase record.Phase
	}
	ran := map[key]int{}
	changed := map[string][]string{} // check → harness files the change edited
	for _, r := range in.Results {
		if r.Executor != record.Orchestrator {
			// Spec § 2: merge-readiness counts only the orchestrator's own
			// execution; anything else happened under someone else's control.
			e.note("result of check %q (%s) by executor %q ignored: only the orchestrator's own runs count", r.CheckID, r.Phase, r.Executor)
			continue
		}
		if r.CheckID == "" {
			e.failures = append(e.failures, record.Finding{Rule: RuleInvalidRecord,
				Message: fmt.Sprintf("an orchestrator result (%s) names no check", r.Phase),
				Hint:    "every result must name the manifest check it ran"})
			continue
		}
		req, listed := reqs[r.CheckID]
		if !listed {
			// The orchestrator executes only manifest checks (spec § 1: unknown
			// identifiers are never executed); a result outside the manifest
			// means that invariant broke, so it cannot be evidence of anything.
			e.failures = append(e.failures, record.Finding{Rule: RuleUnlistedCheck, Check: r.CheckID,
				Message: fmt.Sprintf("the orchestrator recorded a %s result for a check that is not in the manifest", r.Phase),
				Hint:    "only manifest checks may be executed; report this as a runmill bug"})
			req = Requirement{CheckID: r.CheckID}
		}
		switch r.Phase {
		case record.Candidate:
			e.candidate(r, req)
			if len(r.HarnessChanged) > 0 && len(r.LandingConflicts) == 0 {
				// A change that does not merge runs nothing; the
				// conflict is its reason.
				changed[r.CheckID] = r.HarnessChanged
			}
		case record.CandidateHarness:
			// Its findings fail the change; its coverage proves nothing
			// about the base's tests, so it meets no proof gate.
			e.baseline(r, req)
		case record.Baseline:
			e.baseline(r, req)
		default:
			e.failures = append(e.failures, record.Finding{Rule: RuleInvalidRecord, Check: r.CheckID,
				Message: fmt.Sprintf("result has phase %q; want baseline, candidate or candidate-harness", r.Phase),
				Hint:    "a result must say which commit it measured"})
			continue
		}
		ran[key{r.CheckID, r.Phase}]++
	}
	for k, n := range ran {
		if n > 1 {
			e.note("check %q has %d %s results; every one was judged", k.check, n, k.phase)
		}
	}

	escalated := map[string]bool{}
	for _, f := range in.Failures {
		if f.Code == rmerr.CINeverScheduled {
			escalated[f.Check] = true
		}
	}
	pending := map[string]bool{}
	for _, c := range in.PendingContexts {
		pending[c] = true
	}
	remote := map[string][]record.Conclusion{}
	for _, rr := range in.Remote {
		if _, ok := reqs[rr.Context]; !ok || !reqs[rr.Context].Remote {
			e.note("remote context %q (%s) is not a remote check of the manifest; ignored", rr.Context, rr.Conclusion)
			continue
		}
		remote[rr.Context] = append(remote[rr.Context], rr.Conclusion)
	}

	// The coverage pass (spec § 2) is separate on purpose: "no check failed"
	// and "every check ran" are different statements.
	anyRequired := false
	for _, id := range sortedKeys(reqs) {
		req := reqs[id]
		anyRequired = anyRequired || req.Required
		if req.Runnable && req.Required && ran[key{id, record.Candidate}] == 0 {
			e.failures = append(e.failures, record.Finding{Rule: RuleNoResult, Check: id,
				Message: fmt.Sprintf("required check %q produced no result", id),
				Hint:    "a check that never ran cannot fail; rerun verification so the orchestrator executes every required check"})
		}
		if req.Runnable && req.Report && !req.NewInChange && (req.Required || ran[key{id, record.Candidate}] > 0) && ran[key{id, record.Baseline}] == 0 {
			// Spec § 3: missing baseline evidence fails closed; without it no
			// test has preservation authority and the comparison cannot run.
			e.failures = append(e.failures, record.Finding{Rule: RuleNoBaseline, Check: id,
				Message: fmt.Sprintf("report-producing check %q has no baseline result", id),
				Hint:    "the check must also run at the base commit so its inventory can be compared"})
		}
		if ps, ok := changed[id]; ok && ran[key{id, record.CandidateHarness}] == 0 {
			// Issue 25: the base-harness run never ran the change's own
			// harness, so the tests it wires in would go unrun.
			e.failures = append(e.failures, record.Finding{Rule: RuleNoCandidateHarness, Check: id,
				Message: fmt.Sprintf("check %q's harness changed in this change (%s), but the check did not run with the change's own harness: it is covered only when both runs exist", id, quoteAll(ps)),
				Hint:    "rerun verification: when a change edits a check's harness, runmill runs the check with the base's harness and again with the change's own"})
		}
		if req.Required && !req.Runnable && !req.Remote {
			e.failures = append(e.failures, record.Finding{Code: rmerr.VerifyNoRunnable, Rule: RuleNoRunnable, Check: id,
				Message: fmt.Sprintf("required check %q has no runnable command and no remote result", id),
				Hint:    "give the check a run: command in .runmill/checks.yaml or the operator policy, or make it a GitHub-required context"})
		}
		if req.Remote {
			e.remote(req, remote[id], pending[id], escalated[id])
		}
	}
	if !anyRequired {
		// A verdict with nothing required is vacuous: zero evidence must not
		// read as merge-ready (spec § 1: unreadable never quietly becomes
		// "no checks required"; the same holds for resolved-but-empty).
		e.failures = append(e.failures, record.Finding{Rule: RuleEmptyManifest,
			Message: "the manifest requires no check, so nothing was verified",
			Hint:    "declare at least one required check in .runmill/checks.yaml or the operator policy"})
	}
	e.failures = append(e.failures, in.Failures...)

	v := Verdict{
		FailOnSkippedCheck: !in.AllowUnproven,
		Failed:             record.Normalize(e.failed),
		Unproven:           record.Normalize(e.unproven),
		Failures:           record.Normalize(e.failures),
		Notes:              e.notes,
	}
	slices.Sort(v.Notes)
	v.Notes = slices.Compact(v.Notes)
	if v.Notes == nil {
		v.Notes = []string{}
	}
	// Every counted failed result contributes at least one finding to Failed
	// and every unproven required result one to Unproven, so these are the
	// specification's anyFailed and lacksRequiredProof.
	v.AnyFailed = len(v.Failed) > 0
	v.LacksRequiredProof = len(v.Unproven) > 0
	v.MergeReady = !v.AnyFailed && !v.LacksRequiredProof && len(v.Failures) == 0
	return v
}

type evaluation struct {
	allowUnproven              bool
	failed, unproven, failures []record.Finding
	notes                      []string
}

func (e *evaluation) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// requirements indexes the manifest. A duplicate id means discovery did not
// union by id (spec § 1); it is reported, and the entries are merged so that
// every remaining rule still applies in its strictest form.
func (e *evaluation) requirements(in []Requirement) map[string]Requirement {
	reqs := map[string]Requirement{}
	seen := map[string]int{}
	for _, r := range in {
		if r.CheckID == "" {
			e.failures = append(e.failures, record.Finding{Rule: RuleInvalidRecord,
				Message: "a manifest entry has no check id",
				Hint:    "every required check needs an id"})
			continue
		}
		seen[r.CheckID]++
		if prev, ok := reqs[r.CheckID]; ok {
			r.Required = r.Required || prev.Required
			r.Runnable = r.Runnable || prev.Runnable
			r.Remote = r.Remote || prev.Remote
			r.Report = r.Report || prev.Report
			r.NewInChange = r.NewInChange && prev.NewInChange
			r.Sources = append(slices.Clone(prev.Sources), r.Sources...)
		}
		reqs[r.CheckID] = r
	}
	for _, id := range sortedKeys(seen) {
		if seen[id] > 1 {
			e.failures = append(e.failures, record.Finding{Rule: RuleDuplicateCheck, Check: id,
				Message: fmt.Sprintf("the manifest lists check %q %d times", id, seen[id]),
				Hint:    "discovery must union checks by id"})
		}
	}
	return reqs
}

// candidate adds a candidate run's judgement: its findings, and the proof
// gate of spec § 4 for a required check.
func (e *evaluation) candidate(r Result, req Requirement) {
	j := Judge(req, r)
	e.failed = append(e.failed, j.Findings...)
	e.notes = append(e.notes, j.Notes...)
	if req.Required && j.Coverage != record.Proven {
		f := record.Finding{Rule: RuleUnproven, Check: r.CheckID,
			Message: "the required check passed without a machine-readable report; coverage unproven",
			Hint:    "declare a report (junit, tap or go-json) for the check so runmill can confirm what ran"}
		if j.Status != record.Passed {
			f.Message = "the required check's coverage is unproven"
		}
		if req.Report {
			// Declared, so "declare a report" was a false lead: the cause is
			// what kept it from being usable (issue 27).
			f.Hint = "a report is declared but was not usable: fix what this check's other findings say (the report's own error, or what stopped the check)"
		}
		if e.allowUnproven {
			e.note("coverage of required check %q is unproven (fail_on_skipped_check: false)", r.CheckID)
		} else {
			e.unproven = append(e.unproven, f)
		}
	}
}

// baseline adds a baseline's or a candidate-harness run's judgement (spec § 3: a non-zero baseline
// exit is allowed when its report is valid, while missing, malformed,
// zero-test, focused, timed-out or mutating baseline evidence fails closed).
func (e *evaluation) baseline(r Result, req Requirement) {
	j := Judge(req, r)
	e.failed = append(e.failed, j.Findings...)
	e.notes = append(e.notes, j.Notes...)
}

// remote judges a github-sourced requirement (spec § 4 "Remote checks").
func (e *evaluation) remote(req Requirement, conclusions []record.Conclusion, pending, escalated bool) {
	id := req.CheckID
	if len(conclusions) == 0 {
		switch {
		case escalated:
			// RM-CI-002 from the caller is the reason; it is in Failures.
		case !req.Required:
		case pending:
			e.failures = append(e.failures, record.Finding{Rule: RuleRemotePending, Check: id,
				Message: fmt.Sprintf("required remote context %q has not reported yet", id),
				Hint:    "wait for CI reconciliation; after 10 minutes with no run scheduled it escalates with RM-CI-002"})
		default:
			e.failures = append(e.failures, record.Finding{Code: rmerr.VerifyNoRunnable, Rule: RuleRemoteMissing, Check: id,
				Message: fmt.Sprintf("required check %q has no runnable command and no remote result", id),
				Hint:    "make sure a workflow reports the context on this commit (its trigger must match the branch)"})
		}
		return
	}
	slices.Sort(conclusions)
	for _, c := range slices.Compact(conclusions) {
		switch c {
		case record.Success:
		case record.Neutral, record.Skipped:
			// Spec § 4: neutral and skipped are not coverage. GitHub's merge
			// gating counts them as satisfied; runmill does not.
			if req.Required {
				e.failures = append(e.failures, record.Finding{Rule: RuleRemoteNotRun, Check: id,
					Message: fmt.Sprintf("required remote context %q concluded %s: it did not run, so it is not coverage", id, c),
					Hint:    "make the workflow run (not skip) for this change; path filters and if: conditions must not skip a required check"})
			}
		case record.Failure, record.Cancelled, record.TimedOut, record.ActionRequired, record.Stale:
			e.failures = append(e.failures, record.Finding{Rule: RuleRemoteFailed, Check: id,
				Message: fmt.Sprintf("remote context %q concluded %s", id, c),
				Hint:    "fix the remote check and rerun it on this commit"})
		default:
			e.failures = append(e.failures, record.Finding{Rule: RuleRemoteFailed, Check: id,
				Message: fmt.Sprintf("remote context %q has unrecognised conclusion %q", id, c),
				Hint:    "only success passes; report the conclusion to the runmill maintainers"})
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
