package engine

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
)

// execute is the third stage (spec § 3): every runnable check of this
// shard, each run in a fresh checkout inside the sandbox. The prepared
// dependencies and the focus scans start first; the checks start next,
// making their checkouts and first hashes while the probe runs, and each
// waits at the gate until the probe has passed before anything runs in the
// sandbox (no check ever runs unprobed). The delivery's facts that need no
// check result are gathered meanwhile. When every run is over the checkouts
// go, while the later stages work.
func (v *verification) execute(ctx context.Context) error {
	v.share = v.o.assignment(v.m)
	if err := admitHarnesses(ctx, v.e.harness, v.m, v.cmp.baseline, v.share); err != nil {
		return v.refused(err)
	}
	v.e.prepareDepsAsync(ctx, v.repo, v.m, v.cmp.candidate(), v.op, v.o.StateDir)
	scans := v.startScans(ctx)
	checks := v.startChecks(ctx)
	_, hostPaths := v.limits()
	probe, err := v.e.probe(ctx, v.o.StateDir, hostPaths, imagesOf(v.m))
	if err != nil {
		checks.wait()
		<-v.e.depsReady // an import in progress finishes before the run returns
		scans.wait()
		return err
	}
	v.logf("sandbox probe: %d guarantees measured, all held (%s, runc %s)", len(probe.Checks), probe.Runtime.Address, probe.Runtime.Runc)
	probeJSON, _ := json.Marshal(probe)
	v.describe(ctx, probeJSON)
	recs, err := checks.wait()
	<-v.e.depsReady
	results := scans.wait()
	if err != nil {
		return err
	}
	if err := v.collect(recs, results); err != nil {
		return err
	}
	v.removeCheckouts(ctx)
	return nil
}

// checkRuns are the run's checks under way, one goroutine each.
type checkRuns struct {
	wg      sync.WaitGroup
	records [][]record.CheckRun // by manifest position
	mu      sync.Mutex
	err     error // the first a check returned
}

// wait returns every check's records in manifest order, and the first error.
func (r *checkRuns) wait() ([]record.CheckRun, error) {
	r.wg.Wait()
	var out []record.CheckRun
	for _, recs := range r.records {
		out = append(out, recs...)
	}
	return out, r.err
}

// startChecks starts every runnable check of this shard, at most
// --parallel runs at once; each waits at the gate the probe opens.
func (v *verification) startChecks(ctx context.Context) *checkRuns {
	v.e.gate = make(chan struct{})
	sem := make(chan struct{}, v.parallel())
	runs := &checkRuns{records: make([][]record.CheckRun, len(v.m.Checks))}
	for i, c := range v.m.Checks {
		if !c.Runnable() || !v.share.has(c.ID) {
			continue
		}
		runs.wg.Add(1)
		go func() {
			defer runs.wg.Done()
			var recs []record.CheckRun
			var err error
			if v.o.ProveBase {
				recs, err = v.e.proveBaseline(ctx, sem, c, v.cmp.baseline)
			} else {
				recs, err = v.e.check(ctx, sem, c, v.m, v.cmp)
			}
			if err != nil {
				runs.mu.Lock()
				if runs.err == nil {
					runs.err = err
				}
				runs.mu.Unlock()
			}
			runs.records[i] = recs
		}()
	}
	return runs
}

// parallel is how many check runs may run at once: --parallel, else the
// operator's budget, else the number of CPUs.
func (v *verification) parallel() int {
	budgets, _ := v.limits()
	parallel := v.o.Parallel
	if parallel <= 0 {
		parallel = budgets.Parallel
	}
	if parallel <= 0 {
		parallel = runtime.NumCPU()
	}
	return parallel
}

// describe writes the delivery's facts that need no check result — the
// manifest, the candidate, the probe, reviews, lockfile changes and
// GitHub's findings — while the checks run.
func (v *verification) describe(ctx context.Context, probe json.RawMessage) {
	o, m, d := &v.o, v.m, &v.run.Delivery
	d.RunmillVersion, d.RunID = o.Version, v.run.ID
	d.Manifest = *m
	d.Candidate = evidence.Candidate{
		Repository:  v.cand.Repository,
		PullRequest: o.PullRequest,
		Head:        m.Candidate, Base: m.Base, MergeBase: v.cmp.mergeBase,
		Landing: v.cmp.record(v.baseRef()),
	}
	d.Sandbox = probe
	d.Checks, d.Remote, d.PendingContexts, d.Failures = []record.CheckRun{}, []record.RemoteResult{}, []string{}, []record.Finding{}
	d.Reviews = v.gh.reviews()
	d.Candidate.Author = v.gh.author()
	if rn := v.renames.wait(); rn.err == nil {
		d.Renames = rn.renames // an error ends the run at the first check that compares
		if n := len(rn.renames.Files); n > 0 {
			v.logf("git detects %s between %s and %s%s", printable.Plural(n, "rename", "renames"), objectid.Short(rn.renames.From), objectid.Short(rn.renames.To), map[bool]string{true: " (more were not kept: budget.Renames)"}[rn.renames.Truncated])
		}
	}
	d.Dependencies = dependencyDiffs(ctx, v.repo, m, v.cmp, v.logf)
	d.Failures = append(d.Failures, githubFindings(m, v.op != nil && v.op.Doc.GitHub.Required, v.gh)...)
	if o.ProveBase {
		d.BaseProof = true
		d.Failures = append(d.Failures, baseProofFinding(m.Base))
	}
}

// collect adds the focus scans' findings, the candidate tree and the check
// runs' records to the delivery.
func (v *verification) collect(recs []record.CheckRun, scans []scan) error {
	d := &v.run.Delivery
	for _, sc := range scans {
		if sc.err != nil {
			return sc.err
		}
		if sc.tree != "" {
			d.Candidate.Tree = sc.tree
		}
		d.Failures = append(d.Failures, sc.findings...)
	}
	d.Checks = append(d.Checks, recs...)
	return nil
}

// removeCheckouts: every check run is over, so the checkouts and the
// commits' written trees go while reconciliation and the evidence proceed
// (record waits for it), and the terminal statement then looks for them.
func (v *verification) removeCheckouts(ctx context.Context) {
	checkouts := v.checkouts
	v.closed = async(func() error { return checkouts.Close(context.WithoutCancel(ctx)) })
	go v.sb.Idle() // no task follows; Close waits for it
	v.e.ledger.addCheckoutRoot(checkouts.Dir())
}
