package explain

import (
	"cmp"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Order returns reasons (a verdict's Reasons, grouped by check) with each
// check's causes first and what follows from them after: the exit code a
// failing test or a refusal explains, and the unproven coverage an invalid
// or unwritten report leaves. The verdict's own order is by content (it is
// compared after recomputation), which put a duplicate-id report error
// third, behind "the declared report was missing, invalid or unparsable"
// and "coverage is unproven" (issue 27). A check with no other cause keeps
// its findings as they are.
func Order(reasons []record.Finding) []record.Finding {
	// A candidate-harness run's findings (issue 25) explain only its own
	// exit code, and the base-harness run's only theirs.
	type run struct {
		check string
		own   bool
	}
	of := func(f record.Finding) run {
		return run{f.Check, strings.Contains(f.Message, verdict.CandidateHarnessWords)}
	}
	caused := map[run]bool{}
	for _, f := range reasons {
		if consequence(f) == 0 {
			caused[of(f)] = true
		}
	}
	rank := func(f record.Finding) int {
		if !caused[of(f)] {
			return 0
		}
		return consequence(f)
	}
	out := slices.Clone(reasons)
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].Check == out[i].Check {
			j++
		}
		slices.SortStableFunc(out[i:j], func(a, b record.Finding) int { return cmp.Compare(rank(a), rank(b)) })
		i = j
	}
	return out
}

// consequence ranks a finding that another one explains: 1 an exit code, 2
// unproven coverage; 0 a cause.
func consequence(f record.Finding) int {
	switch f.Rule {
	case verdict.RuleCheckFailed:
		if strings.HasSuffix(f.Message, verdict.OOMKilledNote) {
			return 0 // the memory limit, not the tests, ended the run
		}
		return 1
	case verdict.RuleReportUnproven, verdict.RuleUnproven:
		return 2
	}
	return 0
}
