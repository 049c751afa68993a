package engine

import (
	"cmp"
	"context"
	"errors"
	"path"

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

// tamperScan is the tamper scan's outcome (issue 25): the constructs the
// change's test code holds, as facts for the candidate runs.
type tamperScan struct {
	facts []record.Tamper
	err   error
}

// startScans starts the run's focus scans, and the tamper scan in the
// candidate's checkout (e.tamper, which every candidate run waits for
// before it is judged).
func (v *verification) startScans(ctx context.Context) focusScans {
	m, e := v.m, v.e
	tampered := make(chan tamperScan, 1)
	e.tamper = async(func() tamperScan { return <-tampered })
	s := focusScans{candidate: async(func() scan {
		return e.focusScan(ctx, v.repo, v.cmp.candidate(), true, func(dir string, err error) {
			if err != nil {
				tampered <- tamperScan{err: err}
				return
			}
			from, to := v.cmp.changeSides()
			tampered <- tamperScanOf(ctx, v.repo, m, from, to, dir)
		})
	})}
	// Spec § 3: a focused baseline fails closed (it ran part of the suite,
	// so its inventory under-states what passed), wherever a baseline
	// runs under a contract.
	if needsBaselineScan(m) {
		s.baseline = async(func() scan {
			sc := e.focusScan(ctx, v.repo, v.cmp.baseline, false, nil)
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

// focusScan lists commit's tracked files and scans them (scanCommit);
// also, when set, hands the checkout to alsoScan first — called exactly
// once, with the error instead when there is no checkout.
func (e *executor) focusScan(ctx context.Context, repo *git.Repo, commit string, measure bool, alsoScan func(dir string, err error)) scan {
	once := func(dir string, err error) {
		if alsoScan != nil {
			alsoScan(dir, err)
			alsoScan = nil
		}
	}
	tracked, err := repo.TrackedFiles(ctx, commit)
	if err != nil {
		once("", err)
		return scan{err: err}
	}
	tree, fs, err := e.scanCommit(ctx, commit, tracked, measure, func(dir string) { once(dir, nil) })
	once("", cmp.Or(err, errNoTamperScan))
	return scan{tree, fs, err}
}

// tamperScanOf runs the tamper scan over the files the change adds or
// edits between from and to (git's changed paths; a deleted one is
// absent from the checkout and passed over) in the checkout dir of to,
// with every check's declared report path.
func tamperScanOf(ctx context.Context, repo *git.Repo, m *discovery.Manifest, from, to, dir string) tamperScan {
	changed, err := repo.ChangedPaths(ctx, from, to)
	if err != nil {
		return tamperScan{err: err}
	}
	var paths []string
	for _, c := range m.Checks {
		if c.Report != nil {
			paths = append(paths, c.Report.Path)
		}
	}
	rep, err := outcome.FindTamper(dir, changed, outcome.TamperOptions{ReportPaths: paths})
	if err != nil {
		return tamperScan{err: err}
	}
	return tamperScan{facts: rep.Tamper}
}

// errNoTamperScan: the focus scan ended before it made its checkout,
// without an error of its own (it cannot; the guard keeps every waiting
// run from blocking).
var errNoTamperScan = errors.New("the tamper scan had no checkout of the candidate")

// tamperFacts are the facts of the tamper scan that concern check c: all
// of them but the report-path ones of another check's report.
func tamperFacts(c discovery.Check, all []record.Tamper) []record.Tamper {
	var out []record.Tamper
	for _, t := range all {
		if t.Rule == outcome.TamperReportPath && (c.Report == nil || path.Clean(c.Report.Path) != t.ReportPath) {
			continue
		}
		out = append(out, t)
	}
	return out
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
func (e *executor) scanCommit(ctx context.Context, commit string, tracked []string, measure bool, alsoScan func(dir string)) (string, []record.Finding, error) {
	co, err := e.checkouts.Create(ctx, commit)
	if err != nil {
		return "", nil, err
	}
	defer co.Remove()
	if e.ledger != nil {
		e.ledger.addRun(ledgerRun{checkoutDir: co.Dir, mounted: co.Mounted()})
	}
	alsoScan(co.Dir)
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
