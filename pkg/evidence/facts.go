// The one mapping from records to the verdict's inputs: the engine takes
// the verdict through it and Verify recomputes it through it.

package evidence

import (
	"slices"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

// Requirements maps a resolved manifest onto the coverage pass's
// requirements. It is the one mapping both the engine (taking the verdict)
// and Verify (recomputing it) use, so the two cannot drift apart.
func Requirements(m *discovery.Manifest) []verdict.Requirement {
	out := make([]verdict.Requirement, 0, len(m.Checks))
	for _, c := range m.Checks {
		out = append(out, Requirement(m, c))
	}
	return out
}

// Requirement maps one manifest check. A check of a repository policy that
// is new in the change (read_from: working-tree) has no baseline contract
// (spec § 1: a new manifest can only add).
func Requirement(m *discovery.Manifest, c discovery.Check) verdict.Requirement {
	r := verdict.Requirement{
		CheckID:     c.ID,
		Required:    c.Required,
		Runnable:    c.Runnable(),
		Remote:      c.HasSource(discovery.SourceGitHub),
		Report:      c.Report != nil,
		NewInChange: m.ReadFrom == discovery.ReadFromWorkingTree && c.DefinedBy == discovery.DefinedByRepository,

		RequirePinnedHarness: m.RequirePinnedHarness,
	}
	for _, s := range c.Sources {
		r.Sources = append(r.Sources, string(s))
	}
	return r
}

// Facts derives pkg/verdict's facts of one run from its record. A run's
// tree moved exactly when its recorded digests differ; nothing is taken
// from a flag the signer could set independently of what it measured.
func Facts(r *record.CheckRun) verdict.Result {
	res := verdict.Result{
		CheckID:          r.CheckID,
		Phase:            r.Phase,
		Executor:         r.Executor,
		Started:          r.Started,
		ExitCode:         r.ExitCode,
		TimedOut:         r.TimedOut,
		OOMKilled:        r.OOMKilled,
		TreeMoved:        r.TreeBefore != r.TreeAfter,
		Observations:     r.Observations,
		LandingConflicts: r.LandingConflicts,
		Tamper:           r.Tamper,
	}
	if r.Harness != nil {
		for _, u := range r.Harness.Unpinned {
			res.HarnessUnpinned = append(res.HarnessUnpinned, u.Part+": "+u.Reason)
		}
	}
	if rep := r.Report; rep != nil && rep.Inventory != nil {
		res.Report = &verdict.ReportFacts{
			Passed: len(rep.Inventory.Passed), Failed: len(rep.Inventory.Failed), Skipped: len(rep.Inventory.Skipped),
			FailedTests: rep.FailedTests, Faults: rep.Faults, ClaimedFailures: rep.ClaimedFailures, ShownFailures: rep.ShownFailures,
			Duplicates: len(rep.Duplicates),
		}
	}
	return res
}

// checkContext is what a run's judgement weighs from the other runs of its
// check (issue 25): the harness files the change edited, from its
// candidate runs' harness records, and whether its baseline failed.
type checkContext struct {
	changed        []string
	baselineFailed bool
	// baseline and candidate are the check's runs of those phases, for
	// newFailed.
	baseline, candidate *record.CheckRun
	// newFailed: how many of the candidate run's failed tests the
	// baseline's report does not list (verdict.Result.NewFailed).
	newFailed int
}

// contexts indexes runs by check: one pass, so 10 000 runs stay linear.
// Only the orchestrator's runs count, as in the verdict.
func contexts(m *discovery.Manifest, runs []record.CheckRun) map[string]*checkContext {
	out := map[string]*checkContext{}
	at := func(id string) *checkContext {
		if out[id] == nil {
			out[id] = &checkContext{}
		}
		return out[id]
	}
	for i := range runs {
		r := &runs[i]
		if r.Executor != record.Orchestrator {
			continue
		}
		switch r.Phase {
		case record.Candidate:
			at(r.CheckID).candidate = r
			if r.Harness != nil {
				for _, p := range r.Harness.Overlay() {
					at(r.CheckID).changed = append(at(r.CheckID).changed, p.Path)
				}
			}
		case record.Baseline:
			at(r.CheckID).baseline = r
			c, _ := m.Check(r.CheckID)
			if verdict.Judge(Requirement(m, c), Facts(r)).Status != record.Passed {
				at(r.CheckID).baselineFailed = true
			}
		}
	}
	for _, x := range out {
		slices.Sort(x.changed)
		x.changed = slices.Compact(x.changed)
		if len(x.changed) > 0 {
			x.newFailed = newFailed(x.baseline, x.candidate)
		}
	}
	return out
}

// newFailed counts the candidate's failed tests that its check's baseline
// report does not list at all (passed, failed or skipped): tests new in
// the change. Without both inventories nothing is new.
func newFailed(base, cand *record.CheckRun) int {
	if base == nil || cand == nil || base.Report == nil || base.Report.Inventory == nil || cand.Report == nil || cand.Report.Inventory == nil {
		return 0
	}
	b := base.Report.Inventory
	n := 0
	for _, id := range cand.Report.Inventory.Failed {
		_, p := slices.BinarySearch(b.Passed, id)
		_, f := slices.BinarySearch(b.Failed, id)
		_, s := slices.BinarySearch(b.Skipped, id)
		if !p && !f && !s {
			n++
		}
	}
	return n
}

// withContext adds to res what its check's other runs say.
func withContext(res verdict.Result, x *checkContext) verdict.Result {
	if x == nil {
		return res
	}
	switch res.Phase {
	case record.Candidate:
		res.HarnessChanged, res.BaselineFailed, res.NewFailed = x.changed, x.baselineFailed, x.newFailed
	case record.CandidateHarness:
		res.HarnessChanged = x.changed
	}
	return res
}

// checkFacts is Facts(r) with what r's judgement weighs from the other runs
// of its check among runs (the delivery's, or at least its check's).
func checkFacts(m *discovery.Manifest, r *record.CheckRun, runs []record.CheckRun) verdict.Result {
	return withContext(Facts(r), contexts(m, runs)[r.CheckID])
}

// Judge decides r's status, coverage and findings from its facts (and its
// check's other runs among runs) through verdict.Judge and stores them in
// r: what the engine calls once a run's facts are complete, and exactly
// what Verify recomputes.
func Judge(m *discovery.Manifest, r *record.CheckRun, runs []record.CheckRun) verdict.Judgement {
	c, _ := m.Check(r.CheckID)
	j := verdict.Judge(Requirement(m, c), checkFacts(m, r, runs))
	r.Status, r.Coverage, r.Findings = j.Status, j.Coverage, j.Findings
	return j
}

// VerdictInput derives pkg/verdict's input from the facts a delivery
// predicate records.
func VerdictInput(p *Delivery) verdict.Input {
	in := verdict.Input{
		Requirements:    Requirements(&p.Manifest),
		Results:         make([]verdict.Result, 0, len(p.Checks)),
		Remote:          p.Remote,
		PendingContexts: p.PendingContexts,
		Failures:        p.Failures,
		AllowUnproven:   !p.Manifest.FailOnSkippedCheck,
	}
	ctx := contexts(&p.Manifest, p.Checks)
	for i := range p.Checks {
		r := &p.Checks[i]
		in.Results = append(in.Results, withContext(Facts(r), ctx[r.CheckID]))
	}
	return in
}

// Decide takes the verdict from p's records and stores it in p.Verdict: what
// the engine calls before signing, and exactly what Verify recomputes.
func Decide(p *Delivery) verdict.Verdict {
	p.Verdict = verdict.Evaluate(VerdictInput(p))
	return p.Verdict
}

// maxMessageLine bounds the first line of a failure message a record keeps.
const maxMessageLine = 200

// ReportFactsOf fills rec's report facts from a parsed inventory: the
// named failed tests, the faults, the summary's claim and the baseline's
// repeated ids. The engine calls it; Verify reads the same fields.
func ReportFactsOf(rec *record.ReportRecord, inv *report.Inventory) {
	rec.Inventory = ToInventory(inv)
	rec.FailedTests = FailedTestsOf(inv)
	rec.Faults = nil
	for _, f := range inv.Faults {
		rec.Faults = append(rec.Faults, printable.Text(f.Scope+": "+f.Message, maxFault))
	}
	rec.ClaimedFailures, rec.ShownFailures = -1, 0
	if claimed, shown, _ := inv.ClaimsMoreFailures(); inv.Claims != nil && (inv.Claims.Failures != nil || inv.Claims.Errors != nil) {
		rec.ClaimedFailures, rec.ShownFailures = claimed, shown
	}
	rec.Duplicates = slices.Clone(inv.Duplicates)
	rec.Files = slices.Clone(inv.Files)
}

// maxFault bounds one recorded fault.
const maxFault = 1000

// FailedTestsOf lists what a report record names of its failed tests: the
// first verdict.MaxNamedFailures failed ids in order, each with the first
// line of its message.
func FailedTestsOf(inv *report.Inventory) []record.FailedTest {
	var out []record.FailedTest
	for _, t := range inv.Tests {
		if t.Status == report.Failed {
			out = append(out, record.FailedTest{ID: t.ID, Message: report.FirstLine(t.Message, maxMessageLine)})
		}
	}
	return verdict.SortFailedTests(out)
}

// ToInventory converts a parsed report inventory into the statement's form
// (ids sorted per status).
func ToInventory(inv *report.Inventory) *record.Inventory {
	out := &record.Inventory{Passed: []report.TestID{}, Failed: []report.TestID{}, Skipped: []report.TestID{}}
	for _, t := range inv.Tests {
		switch t.Status {
		case report.Passed:
			out.Passed = append(out.Passed, t.ID)
		case report.Failed:
			out.Failed = append(out.Failed, t.ID)
		default:
			out.Skipped = append(out.Skipped, t.ID)
		}
	}
	for _, l := range [][]report.TestID{out.Passed, out.Failed, out.Skipped} {
		slices.Sort(l)
	}
	return out
}

// reportInventory converts back, for pkg/outcome.
func reportInventory(inv *record.Inventory, rec *record.ReportRecord) *report.Inventory {
	out := &report.Inventory{Format: rec.Format, Identity: rec.Identity, SHA256: rec.SHA256, Bytes: rec.Size}
	out.Tests = make([]report.Test, 0, len(inv.Passed)+len(inv.Failed)+len(inv.Skipped))
	for _, l := range []struct {
		ids []report.TestID
		st  report.Status
	}{{inv.Passed, report.Passed}, {inv.Failed, report.Failed}, {inv.Skipped, report.Skipped}} {
		for _, id := range l.ids {
			out.Tests = append(out.Tests, report.Test{ID: id, Status: l.st})
		}
	}
	out.Counts = report.Counts{Total: len(out.Tests), Passed: len(inv.Passed), Failed: len(inv.Failed), Skipped: len(inv.Skipped)}
	return out
}
