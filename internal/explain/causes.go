package explain

import (
	"cmp"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

// Cause is one reason a change is not merge-ready, as a reviewer reads it
// (issue 27): a verdict finding, with what says the same thing folded in.
type Cause struct {
	record.Finding
	// ExitCode is the exit code of a check whose failing tests explain it:
	// the verdict's "the check exited with code N" finding is folded into
	// the tests-failed one, so one broken test is one row, not two.
	ExitCode int
}

// TestsFailed: the cause is failing tests of a check (their ids in IDs).
func (c Cause) TestsFailed() bool { return c.Rule == verdict.RuleTestsFailed }

// Preservation: the cause is base tests missing or skipped at the
// candidate, what runmill exists to catch, listed first.
func (c Cause) Preservation() bool {
	return c.Rule == outcome.RuleMissing || c.Rule == outcome.RuleSkipped
}

// Causes are the verdict's reasons, one per cause: a check's exit code is
// folded into its failing tests when they explain it (not when the memory
// limit killed a process, which they do not), and missing and skipped
// tests come first. Every finding of the verdict is in exactly one cause.
func Causes(d *evidence.Delivery) []Cause {
	reasons := Order(d.Verdict.Reasons()) // each check's causes before their consequences
	// A candidate-harness run's findings (issue 25) are its own: its exit
	// code is never folded into the candidate run's tests, nor theirs.
	own := func(f record.Finding) bool { return strings.Contains(f.Message, verdict.CandidateHarnessWords) }
	failedTests := map[string]bool{}
	for _, f := range reasons {
		if f.Rule == verdict.RuleTestsFailed && f.Check != "" && !own(f) {
			failedTests[f.Check] = true
		}
	}
	exit := map[string]int{}
	for _, r := range d.Checks {
		if r.Phase == record.Candidate && r.Executor == record.Orchestrator && r.Started && r.ExitCode != 0 && !r.OOMKilled && !r.TimedOut {
			exit[r.CheckID] = r.ExitCode
		}
	}
	var first, rest []Cause
	for _, f := range reasons {
		if f.Rule == verdict.RuleCheckFailed && !own(f) && failedTests[f.Check] && exit[f.Check] != 0 {
			continue // folded into the check's tests-failed cause
		}
		c := Cause{Finding: f}
		if c.TestsFailed() && !own(f) {
			c.ExitCode = exit[f.Check]
		}
		if c.Preservation() {
			first = append(first, c)
		} else {
			rest = append(rest, c)
		}
	}
	// Missing before skipped: a deleted test is the starker loss.
	rank := func(c Cause) int {
		if c.Rule == outcome.RuleMissing {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(first, func(a, b Cause) int { return cmp.Compare(rank(a), rank(b)) })
	return slices.Concat(first, rest)
}

// Inventory is what a change did to the tests of its checks, for the
// pull-request comment and the step outputs: the candidate's counts, and
// against the baseline the tests added, removed (gone without being
// found elsewhere: the verdict's missing ones among them) and moved.
type Inventory struct {
	Passed, Failed, Skipped int
	// Missing are the base tests the verdict found missing at the
	// candidate; NewlySkipped those it found skipped there.
	Missing, NewlySkipped int
	Added, Removed, Moved int
	// MissingTests and FailedTests name them, "check: id", at most
	// MaxNamed each.
	MissingTests, FailedTests []string
}

// MaxNamed bounds the tests an Inventory names.
const MaxNamed = 20

// Inventories sums what the candidate runs of d recorded.
func Inventories(d *evidence.Delivery) Inventory {
	var inv Inventory
	base := map[string]map[report.TestID]bool{}
	for _, r := range d.Checks {
		if r.Phase == record.Baseline && r.Executor == record.Orchestrator && r.Report != nil && r.Report.Inventory != nil {
			ids := map[report.TestID]bool{}
			for _, l := range [][]report.TestID{r.Report.Inventory.Passed, r.Report.Inventory.Failed, r.Report.Inventory.Skipped} {
				for _, id := range l {
					ids[id] = true
				}
			}
			base[r.CheckID] = ids
		}
	}
	for _, r := range d.Checks {
		if r.Phase != record.Candidate || r.Executor != record.Orchestrator || r.Report == nil || r.Report.Inventory == nil {
			continue
		}
		ci := r.Report.Inventory
		inv.Passed += len(ci.Passed)
		inv.Failed += len(ci.Failed)
		inv.Skipped += len(ci.Skipped)
		inv.Moved += len(r.Moved)
		for _, id := range ci.Failed {
			if len(inv.FailedTests) < MaxNamed {
				inv.FailedTests = append(inv.FailedTests, r.CheckID+": "+string(id))
			}
		}
		b, ok := base[r.CheckID]
		if !ok {
			continue
		}
		movedFrom, movedTo := map[report.TestID]bool{}, map[report.TestID]bool{}
		for _, m := range r.Moved {
			movedFrom[m.From], movedTo[m.To] = true, true
		}
		now := map[report.TestID]bool{}
		for _, l := range [][]report.TestID{ci.Passed, ci.Failed, ci.Skipped} {
			for _, id := range l {
				now[id] = true
				if !b[id] && !movedTo[id] {
					inv.Added++
				}
			}
		}
		for id := range b {
			if !now[id] && !movedFrom[id] {
				inv.Removed++
			}
		}
	}
	for _, f := range d.Verdict.Reasons() {
		switch f.Rule {
		case outcome.RuleMissing:
			inv.Missing += len(f.IDs)
			for _, id := range f.IDs {
				if len(inv.MissingTests) < MaxNamed {
					inv.MissingTests = append(inv.MissingTests, f.Check+": "+string(id))
				}
			}
		case outcome.RuleSkipped:
			inv.NewlySkipped += len(f.IDs)
		}
	}
	return inv
}
