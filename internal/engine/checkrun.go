package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// executor runs check runs; one per Verify.
type executor struct {
	// manifest is the run's resolved manifest: what every run is judged
	// against (evidence.Judge).
	manifest       *discovery.Manifest
	sb             runner
	checkouts      *checkout.Manager
	store          store
	logf           func(format string, args ...any)
	event          func(kind string, detail any)
	maxOutput      int64
	defaultTimeout time.Duration // budgets.check_timeout, for checks without their own
	hostPaths      []string      // sandbox.host_paths; empty: the sandbox's default set
	// gate closes when the probe has finished; gateErr is its error.
	// Nothing runs in the sandbox before the gate opens without error.
	gate    chan struct{}
	gateErr error
	// ledger feeds the terminal statement.
	ledger *ledger
	// deps are the run's prepared dependencies, set before depsReady
	// closes (nil when no check declares any).
	deps      *deps.Prepared
	depsReady chan struct{}
	// trees holds the first "before" hash of each commit's checkouts: every
	// fresh checkout of one commit must hash the same (sameTree).
	treesMu sync.Mutex
	trees   map[string]string
	// goCaches are the prepared Go toolchain caches (gotoolcache.go); nil:
	// none is offered.
	goCaches *goToolCaches
	// harness pins each run's harness files to the base (harness.go);
	// nil runs every checkout unaltered.
	harness *harnesses
	// reuse keys every run and holds earlier runs to reuse (reuse.go).
	reuse *reuser
	// renames are git's renames between the compared commits and approver
	// who lets the change's own declared skips count (issue 24): what
	// the preservation comparison weighs besides the inventories.
	renames  *pending[renamesResult]
	approver string
	// conflicts are the paths the landing merge conflicted in: every run
	// is refused and records them (nil: the change merges).
	conflicts []string
	// tamper is the tamper scan of the files the change adds or edits
	// (issue 25): every candidate run records the facts that concern it
	// before it is judged. nil: no scan (doctor).
	tamper *pending[tamperScan]
}

// sameTree holds a checkout's "before" hash to the first one of its commit
// in this run. They differ only if something changed a checkout's source —
// in layered mode, the commit's shared layer — and then no result at that
// commit describes it (RM-VERIFY-002).
func (e *executor) sameTree(rec *record.CheckRun, commit string, finding func(rule, code, format string, args ...any)) {
	e.treesMu.Lock()
	defer e.treesMu.Unlock()
	first, ok := e.trees[commit]
	if !ok {
		if e.trees == nil {
			e.trees = map[string]string{}
		}
		e.trees[commit] = rec.TreeBefore
		return
	}
	if first != rec.TreeBefore {
		finding(verdict.RuleTreeMoved, string(rmerr.VerifyTreeMoved),
			"this fresh checkout of %s hashed %s before the check, an earlier one %s: the commit's tree changed during the run; result invalidated", commit, rec.TreeBefore, first)
	}
}

// check runs one check: at the baseline commit first when it declares a
// report (spec § 3: report-producing checks run twice), then at the
// candidate, and adds the inventory-preservation findings to the candidate
// record.
//
// The two commits are the comparison's (compared.go, issue 24): baselines
// at the base tip, candidate runs at the landing commit — the tree that
// would land — so a test the base gained since the change forked is run
// against the change, and one the base fixed since keeps its authority.
func (e *executor) check(ctx context.Context, sem chan struct{}, c discovery.Check, m *discovery.Manifest, cmp comparison) ([]record.CheckRun, error) {
	baseline := cmp.baseline
	var recs []record.CheckRun
	var baseInv *report.Inventory
	// Both sides at once when --parallel allows (issue 16): the baseline
	// takes its own slot; the candidate waits for its result only to
	// compare inventories.
	baseC := e.baselineAsync(ctx, sem, c, baseline)
	ownC, err := e.ownHarnessAsync(ctx, sem, c, cmp.candidate())
	if err != nil {
		if c.Report != nil {
			<-baseC
		}
		return nil, err
	}
	sem <- struct{}{}
	rec, inv, err := e.runKeyed(ctx, c, record.Candidate, cmp.candidate())
	<-sem
	var own *sideResult
	if ownC != nil {
		o := <-ownC
		own = &o
	}
	if c.Report != nil {
		b := <-baseC
		if b.err != nil {
			return nil, b.err
		}
		recs, baseInv = append(recs, b.rec), b.inv
	}
	if err != nil {
		return nil, err
	}
	if own != nil && own.err != nil {
		return nil, own.err
	}
	if baseInv != nil && inv != nil {
		rn := e.renames.wait()
		if rn.err != nil {
			return nil, rn.err
		}
		res := outcome.Compare(baseInv, inv, evidence.ChangeOf(m, c, rn.renames, e.approver))
		fs := res.Findings
		for i := range fs {
			if fs[i].Check == "" {
				fs[i].Check = c.ID
			}
		}
		rec.Observations = record.Normalize(append(rec.Observations, fs...))
		if len(res.Moved) > 0 {
			rec.Moved = res.Moved
			for _, l := range explain.MovedLines(res.Moved, maxMovedLines) {
				e.logf("%s (candidate): %s", c.ID, l)
			}
		}
	}
	if e.tamper != nil {
		ts := e.tamper.wait()
		if ts.err != nil {
			return nil, ts.err
		}
		rec.Tamper = tamperFacts(c, ts.facts)
		for _, t := range rec.Tamper {
			e.logf("%s (candidate): tamper %s at %s:%d: %s", c.ID, t.Rule, t.File, t.Line, t.Code)
		}
	}
	recs = append(recs, rec)
	e.judged(&recs[len(recs)-1], recs)
	if own != nil {
		// Judged last: its findings name the harness files the candidate
		// run's record shows the change edited.
		recs = append(recs, own.rec)
		e.judged(&recs[len(recs)-1], recs)
	}
	return recs, nil
}

// maxMovedLines bounds the moved tests the progress stream names per run.
const maxMovedLines = 10

// judged decides rec's status through the one decision function and says
// what it decided: the progress line, the event and the record agree.
//
// runs are the check's runs so far (rec among them): what its judgement
// weighs from the others (evidence.Judge), as Verify recomputes it
// from the whole delivery.
func (e *executor) judged(rec *record.CheckRun, runs []record.CheckRun) {
	j := evidence.Judge(e.manifest, rec, runs)
	e.event("check.finished", map[string]any{"check": rec.CheckID, "phase": string(rec.Phase), "status": string(j.Status), "exit_code": rec.ExitCode})
	how := fmt.Sprintf("exit %d", rec.ExitCode)
	dur := ", " + (time.Duration(rec.DurationMS) * time.Millisecond).String()
	if !rec.Started {
		how, dur = "not started", "" // a refused run has no exit code and no duration
	}
	e.logf("%s (%s): %s, %s, coverage %s%s", rec.CheckID, rec.Phase, j.Status, how, j.Coverage, dur)
	for _, f := range j.Findings {
		e.logf("%s (%s): %s", rec.CheckID, rec.Phase, f.Message)
	}
}
