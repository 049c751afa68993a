package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
	"github.com/runmill/verify/pkg/verdict"
)

// runOne is one check run: fresh checkout, hash, report file, sandbox,
// report, hash, destroy.
func (e *executor) runOne(ctx context.Context, c discovery.Check, phase record.Phase, commit string) (record.CheckRun, *report.Inventory, error) {
	r := &checkRun{e: e, c: c, rec: record.CheckRun{
		CheckID: c.ID, Phase: phase, Command: c.Command, Commit: commit,
		Executor: record.Orchestrator, Notes: []string{}, Observations: []record.Finding{}, Findings: []record.Finding{},
	}}
	e.logf("%s (%s): starting", c.ID, phase)
	e.event("check.started", map[string]any{"check": c.ID, "phase": string(phase), "commit": commit})
	if err := r.checkout(ctx, commit); err != nil {
		return r.rec, nil, err
	}
	defer r.co.Remove()
	// A change that does not merge with the base has no landing tree:
	// its runs are refused, and record why (verdict.RuleMergeConflict).
	r.rec.LandingConflicts = e.conflicts
	if err := r.attachDeps(ctx); err != nil {
		return r.rec, nil, err
	}
	defer r.view.Close()
	r.prepareReport()
	before := r.hashBefore(ctx)
	// Zero-test detection reads the whole output, not the stored prefix:
	// "0 passed" tends to be the last line of a long log.
	zs := outcome.NewOutputScanner()
	spec := r.spec(ctx, zs)
	res, err := r.runTask(ctx, spec, before)
	if err != nil {
		return r.rec, nil, err
	}
	r.recordResult(spec, res)
	if err := r.storeOutputs(res); err != nil {
		return r.rec, nil, err
	}
	inv := r.takeReport()
	r.hashAfter(ctx)
	r.observeOutput(zs)
	if err := r.co.Remove(); err != nil {
		return r.rec, nil, err
	}
	e.event("checkout.removed", map[string]any{"check": c.ID, "phase": string(phase)})
	return r.rec, inv, nil
}

// checkRun is one check run under way: its record, and what it made for
// the run and must take away again.
type checkRun struct {
	e   *executor
	c   discovery.Check
	rec record.CheckRun
	// hr is the run's harness (nil without e.harness); pins is what it
	// lays over the commit.
	hr   *harness.Record
	pins []harness.Pin
	co   *checkout.Checkout
	// view is the prepared dependencies' read-only view in the checkout;
	// exclude is what the tree hash leaves out for it. depsOK is false
	// when they were refused: the command then does not run.
	view    *deps.View
	exclude []string
	depsOK  bool
	// reportPath is the pre-created report file ("" when none is usable);
	// created are the directories runmill made for it.
	reportPath string
	created    []string
}

// finding records an observation of this run.
func (r *checkRun) finding(rule, code, format string, args ...any) {
	r.rec.Observations = append(r.rec.Observations, record.Finding{Code: rmerr.Code(code), Check: r.c.ID, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// ran: the command runs (it has a usable report when it declares one, and
// its dependencies were not refused).
func (r *checkRun) ran() bool {
	return (r.c.Report == nil || r.reportPath != "") && r.depsOK && r.rec.LandingConflicts == nil
}

// checkout makes the run's fresh checkout of commit, the base's harness
// laid over it (harness.go) — except for a candidate-harness run, which
// runs the commit as it stands, every harness file in its own version.
func (r *checkRun) checkout(ctx context.Context, commit string) error {
	if r.e.harness != nil {
		hr, err := r.e.harness.record(ctx, r.c, commit)
		if err != nil {
			return err
		}
		r.hr, r.pins = hr, hr.Overlay()
		if r.rec.Phase == record.CandidateHarness {
			r.hr, r.pins = evidence.OwnHarness(hr), nil
		}
	}
	co, err := r.e.checkouts.CreatePinned(ctx, commit, r.pins)
	if err != nil {
		return err
	}
	r.co = co
	return nil
}

// attachDeps: prepared dependencies are a read-only view in the checkout,
// excluded from the tree hash; a refusal fails the check without running it.
func (r *checkRun) attachDeps(ctx context.Context) error {
	r.view, r.depsOK = &deps.View{}, true
	if r.c.Dependencies != "" && r.rec.LandingConflicts == nil {
		view, ok, err := r.e.attachDeps(ctx, r.c, r.co.Dir, r.finding)
		if err != nil {
			r.view = nil
			return err
		}
		r.view, r.depsOK = view, ok
		r.rec.Notes = append(r.rec.Notes, view.Notes...)
		r.rec.Dependencies = view.Use
	}
	r.exclude = r.view.Exclude
	return nil
}

// prepareReport pre-creates the declared report file (spec § 3); a path
// that cannot be used is a finding, and the command then does not run.
func (r *checkRun) prepareReport() {
	if r.c.Report == nil || !r.depsOK || r.rec.LandingConflicts != nil {
		return
	}
	path, created, err := prepareReport(r.co.Dir, r.c.Report.Path)
	if err != nil {
		r.finding("report.unusable", string(rmerr.SandboxSpec), "declared report %s: %v", r.c.Report.Path, err)
		return
	}
	r.reportPath, r.created = path, created
}

// hashed is a tree hash's outcome.
type hashed struct {
	d   treehash.Digest
	err error
}

// hashBefore starts the "before" hash: it runs while runc creates the task
// (most of a run's fixed cost), and the command starts only once both are
// done. It leaves out what runmill just added for the report, which it
// removes again before the "after" hash.
func (r *checkRun) hashBefore(ctx context.Context) *pending[hashed] {
	added := slices.Clone(r.exclude)
	if r.reportPath != "" {
		top := r.reportPath
		if len(r.created) > 0 {
			top = r.created[0]
		}
		rel, _ := filepath.Rel(r.co.Dir, top)
		added = append(added, filepath.ToSlash(rel))
	}
	dir := r.co.Dir
	return async(func() hashed {
		d, _, err := treehash.Sum(ctx, dir, treehash.Options{Exclude: added})
		return hashed{d, err}
	})
}

// spec is what the sandbox runs, with the prepared Go toolchain cache
// offered to a Go check (gotoolcache.go).
func (r *checkRun) spec(ctx context.Context, zs *outcome.OutputScanner) sandbox.Spec {
	e, c, view := r.e, r.c, r.view
	timeout := c.Timeout.D()
	if timeout == 0 {
		timeout = e.defaultTimeout
	}
	if note := e.goToolchainCache(ctx, c, view, withEnv(baseEnv(e.hostPaths), view.Env)); note != "" {
		r.rec.Notes = append(r.rec.Notes, note)
	}
	return sandbox.Spec{
		Observer:      zs,
		Command:       c.Command,
		Checkout:      r.co.Dir,
		Env:           withEnv(baseEnv(e.hostPaths), view.Env),
		ReadOnly:      slices.Concat(r.co.ReadOnlyPaths(), view.ReadOnly),
		Views:         sandboxViews(view.Mounts),
		GoCache:       view.GoCache,
		GoCacheLayers: view.GoCacheLayers,
		ReportFile:    r.reportPath,
		Timeout:       timeout,
		HostPaths:     e.hostPaths,
		MaxOutput:     e.maxOutput,
		Image:         c.Image,
	}
}

// runTask creates the task — which runs no check code (runc waits before
// the command's exec), so it may overlap the probe — then waits at the gate
// and for the "before" hash, and only then starts the command. A refused
// run (no usable report, refused dependencies) runs nothing: res is zero.
func (r *checkRun) runTask(ctx context.Context, spec sandbox.Spec, before *pending[hashed]) (sandbox.Result, error) {
	e := r.e
	var task *sandbox.Task
	if r.ran() {
		t, err := e.sb.Prepare(ctx, spec)
		if err != nil {
			before.wait()
			return sandbox.Result{}, err
		}
		task = t
	}
	discard := func() {
		if task != nil {
			task.Discard()
		}
	}
	if err := e.waitGate(ctx); err != nil {
		before.wait()
		discard()
		return sandbox.Result{}, err
	}
	b := before.wait()
	if b.err != nil {
		discard()
		return sandbox.Result{}, b.err
	}
	r.rec.TreeBefore = b.d.String()
	e.sameTree(&r.rec, pinKey(r.rec.Commit, r.pins), r.finding)
	if r.hr != nil {
		if err := e.harness.finish(ctx, &r.rec, r.hr, e.logf); err != nil {
			discard()
			return sandbox.Result{}, err
		}
	}
	if task == nil {
		return sandbox.Result{}, nil
	}
	return task.Run(ctx)
}

// recordResult records how the command ended, and what it consumed
// against which limits in the ledger.
func (r *checkRun) recordResult(spec sandbox.Spec, res sandbox.Result) {
	rec := &r.rec
	rec.Started = r.ran()
	rec.ExitCode, rec.TimedOut, rec.OOMKilled, rec.DurationMS = res.ExitCode, res.TimedOut, res.OOMKilled, res.Duration.Milliseconds()
	if r.e.ledger == nil {
		return
	}
	lr := ledgerRun{check: r.c.ID, phase: rec.Phase, checkoutDir: r.co.Dir, mounted: r.co.Mounted(), containerID: res.ID,
		timeout: spec.Timeout, maxOutput: spec.MaxOutput, duration: res.Duration, stdout: res.Stdout.Size, stderr: res.Stderr.Size}
	if lr.timeout == 0 {
		lr.timeout = sandbox.DefaultTimeout
	}
	if lr.maxOutput == 0 {
		lr.maxOutput = sandbox.DefaultMaxOutput
	}
	// Limits the sandbox applied (the spec's, or its defaults).
	lim := sandbox.DefaultLimits
	lr.cpuLimit = time.Duration(float64(lr.timeout) * lim.CPUs)
	lr.memLimit, lr.cpu, lr.memPeak = lim.MemoryBytes, res.CPU, res.MemoryPeak
	r.e.ledger.addRun(lr)
}

// storeOutputs stores the captured streams' kept bytes.
func (r *checkRun) storeOutputs(res sandbox.Result) error {
	var err error
	if r.rec.Stdout, err = r.e.output(res.Stdout); err != nil {
		return err
	}
	if r.rec.Stderr, err = r.e.output(res.Stderr); err != nil {
		return err
	}
	if res.Stdout.Truncated || res.Stderr.Truncated {
		r.rec.Notes = append(r.rec.Notes, "output beyond the capture cap is hashed, not stored")
	}
	return nil
}

// takeReport reads the report (readReport). It is the one permitted
// artifact: parsed, then removed with the directories runmill created for
// it, before the second hash (spec § 3).
func (r *checkRun) takeReport() *report.Inventory {
	if r.reportPath == "" {
		return nil
	}
	inv := r.e.readReport(&r.rec, r.c, r.reportPath, r.finding)
	if err := os.Remove(r.reportPath); err != nil && !os.IsNotExist(err) {
		r.finding("report.unusable", string(rmerr.SandboxSpec), "removing the report: %v", err)
	}
	for i := len(r.created) - 1; i >= 0; i-- {
		os.Remove(r.created[i])
	}
	return inv
}

// hashAfter is the "after" hash (spec § 3): a tree that moved invalidates
// the result (RM-VERIFY-002).
func (r *checkRun) hashAfter(ctx context.Context) {
	rec := &r.rec
	after, _, err := treehash.Sum(ctx, r.co.Dir, treehash.Options{Exclude: r.exclude})
	if err != nil {
		// A tree the check made unhashable (a FIFO, a socket) moved.
		rec.TreeAfter = "sha256:" + strings.Repeat("0", 64)
		rec.Notes = append(rec.Notes, "hashing the tree after the check failed: "+err.Error())
	} else {
		rec.TreeAfter = after.String()
	}
	if rec.TreeAfter != rec.TreeBefore {
		r.finding(verdict.RuleTreeMoved, string(rmerr.VerifyTreeMoved), "tree changed during the check; result invalidated")
	}
}

// observeOutput: output phrases (spec § 4: zero tests, identity-free
// skips) are observations; Judge decides whether they count.
func (r *checkRun) observeOutput(zs *outcome.OutputScanner) {
	rec := &r.rec
	for _, f := range zs.Result().Findings() {
		f.Check, f.Rule = r.c.ID, verdict.OutputRulePrefix+strings.TrimPrefix(f.Rule, "outcome.")
		rec.Observations = append(rec.Observations, f)
	}
	if r.c.Report == nil {
		rec.Notes = append(rec.Notes, "no machine-readable report declared; coverage unproven")
	}
	rec.Observations = record.Normalize(rec.Observations)
}
