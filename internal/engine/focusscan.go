package engine

import (
	"context"

	"github.com/runmill/verify/internal/git"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/treehash"
)

// scan is one focus scan's outcome; a candidate's also measures its tree.
type scan struct {
	tree     string
	findings []record.Finding
	err      error
}

// focusScans are the run's scans for focus markers (spec § 4): the
// candidate's, which also measures the candidate tree, and the baseline
// commit's when a baseline runs under a contract. Each takes a fresh
// checkout and no sandbox, so both run while the probe does.
type focusScans struct {
	candidate, baseline *pending[scan] // baseline: nil when not needed
}

// startScans starts the run's focus scans.
func (v *verification) startScans(ctx context.Context) focusScans {
	m, e := v.m, v.e
	s := focusScans{candidate: async(func() scan { return e.focusScan(ctx, v.repo, v.cmp.candidate(), true) })}
	// Spec § 3: a focused baseline fails closed (it ran part of the suite,
	// so its inventory under-states what passed), wherever a baseline
	// runs under a contract.
	if needsBaselineScan(m) {
		s.baseline = async(func() scan {
			sc := e.focusScan(ctx, v.repo, v.cmp.baseline, false)
			for i := range sc.findings {
				f := &sc.findings[i]
				f.Message = "at the baseline commit " + objectid.Short(v.cmp.baseline) + ": " + f.Message
				f.Hint = "the baseline is focused, so its inventory does not say what passed; remove the marker at the base first (a change that only removes it still fails closed)"
			}
			return sc
		})
	}
	return s
}

// wait returns the scans' outcomes, the candidate's first.
func (s focusScans) wait() []scan {
	out := []scan{s.candidate.wait()}
	if s.baseline != nil {
		out = append(out, s.baseline.wait())
	}
	return out
}

// focusScan lists commit's tracked files and scans them (scanCommit).
func (e *executor) focusScan(ctx context.Context, repo *git.Repo, commit string, measure bool) scan {
	tracked, err := repo.TrackedFiles(ctx, commit)
	if err != nil {
		return scan{err: err}
	}
	tree, fs, err := e.scanCommit(ctx, commit, tracked, measure)
	return scan{tree, fs, err}
}

// needsBaselineScan: some report-producing check runs a baseline under a
// contract (not new in the change).
func needsBaselineScan(m *discovery.Manifest) bool {
	for _, c := range m.Checks {
		if c.Runnable() && c.Report != nil && !evidence.Requirement(m, c).NewInChange {
			return true
		}
	}
	return false
}

// scanCommit scans one fresh checkout of commit for focus markers, and
// measures its tree when measure is set.
func (e *executor) scanCommit(ctx context.Context, commit string, tracked []string, measure bool) (string, []record.Finding, error) {
	co, err := e.checkouts.Create(ctx, commit)
	if err != nil {
		return "", nil, err
	}
	defer co.Remove()
	if e.ledger != nil {
		e.ledger.addRun(ledgerRun{checkoutDir: co.Dir, mounted: co.Mounted()})
	}
	var tree treehash.Digest
	if measure {
		if tree, _, err = treehash.Sum(ctx, co.Dir, treehash.Options{}); err != nil {
			return "", nil, err
		}
	}
	rep, err := outcome.FindFocus(co.Dir, tracked, outcome.FocusOptions{})
	if err != nil {
		return "", nil, err
	}
	fs := rep.Findings()
	for _, f := range fs {
		e.logf("focus marker: %s:%d %s", f.File, f.Line, f.Message)
	}
	if !measure {
		return "", fs, nil
	}
	return tree.String(), fs, nil
}
