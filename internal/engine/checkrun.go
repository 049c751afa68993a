package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
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
}

// sameTree holds a checkout's "before" hash to the first one of its commit
// in this run. They differ only if something changed a checkout's source —
// in layered mode, the commit's shared layer — and then no result at that
// commit describes it (RM-VERIFY-002).
func (e *executor) sameTree(rec *evidence.CheckRun, commit string, finding func(rule, code, format string, args ...any)) {
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
// The baseline commit is the merge base of the base and the candidate — the
// commit the change started from, the spec's workspace.baseCommit — which is
// the base itself whenever the candidate contains it. A base branch that
// moved on since the change forked would otherwise count the tests it gained
// as removed by the change. The policy is still read from the base.
func (e *executor) check(ctx context.Context, sem chan struct{}, c discovery.Check, m *discovery.Manifest, baseline string) ([]evidence.CheckRun, error) {
	var recs []evidence.CheckRun
	var baseInv *report.Inventory
	// Both sides at once when --parallel allows (issue 16): the baseline
	// takes its own slot; the candidate waits for its result only to
	// compare inventories.
	baseC := e.baselineAsync(ctx, sem, c, baseline)
	sem <- struct{}{}
	rec, inv, err := e.runKeyed(ctx, c, verdict.Candidate, m.Candidate)
	<-sem
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
	if baseInv != nil && inv != nil {
		fs := outcome.Compare(baseInv, inv, c.DeclaredSkips)
		for i := range fs {
			if fs[i].Check == "" {
				fs[i].Check = c.ID
			}
		}
		rec.Observations = verdict.Normalize(append(rec.Observations, fs...))
	}
	e.judged(&rec)
	return append(recs, rec), nil
}

// judged decides rec's status through the one decision function and says
// what it decided: the progress line, the event and the record agree.
func (e *executor) judged(rec *evidence.CheckRun) {
	j := evidence.Judge(e.manifest, rec)
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

// runOne is one check run: fresh checkout, hash, report file, sandbox,
// report, hash, destroy.
func (e *executor) runOne(ctx context.Context, c discovery.Check, phase verdict.Phase, commit string) (evidence.CheckRun, *report.Inventory, error) {
	rec := evidence.CheckRun{
		CheckID: c.ID, Phase: phase, Command: c.Command, Commit: commit,
		Executor: verdict.Orchestrator, Notes: []string{}, Observations: []verdict.Finding{}, Findings: []verdict.Finding{},
	}
	var err error
	e.logf("%s (%s): starting", c.ID, phase)
	e.event("check.started", map[string]any{"check": c.ID, "phase": string(phase), "commit": commit})
	var hr *harness.Record
	var pins []harness.Pin
	if e.harness != nil {
		if hr, err = e.harness.record(ctx, c, commit); err != nil {
			return rec, nil, err
		}
		pins = hr.Overlay()
	}
	co, err := e.checkouts.CreatePinned(ctx, commit, pins)
	if err != nil {
		return rec, nil, err
	}
	defer co.Remove()
	finding := func(rule, code, format string, args ...any) {
		rec.Observations = append(rec.Observations, verdict.Finding{Code: rmerr.Code(code), Check: c.ID, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	// Prepared dependencies: a read-only view in the checkout, excluded
	// from the tree hash; a refusal fails the check without running it.
	view, depsOK := &deps.View{}, true
	if c.Dependencies != "" {
		if view, depsOK, err = e.attachDeps(ctx, c, co.Dir, finding); err != nil {
			return rec, nil, err
		}
		rec.Notes = append(rec.Notes, view.Notes...)
		rec.Dependencies = view.Use
	}
	defer view.Close()
	hashOpts := treehash.Options{Exclude: view.Exclude}

	var reportPath string
	var created []string
	if c.Report != nil && depsOK {
		reportPath, created, err = prepareReport(co.Dir, c.Report.Path)
		if err != nil {
			finding("report.unusable", string(rmerr.SandboxSpec), "declared report %s: %v", c.Report.Path, err)
			reportPath = ""
		}
	}
	// The "before" hash runs while runc creates the task (most of a run's
	// fixed cost); the command starts only once both are done. It leaves
	// out what runmill just added for the report, which it removes again
	// before the "after" hash.
	added := slices.Clone(view.Exclude)
	if reportPath != "" {
		top := reportPath
		if len(created) > 0 {
			top = created[0]
		}
		rel, _ := filepath.Rel(co.Dir, top)
		added = append(added, filepath.ToSlash(rel))
	}
	type hashed struct {
		d   treehash.Digest
		err error
	}
	beforeC := make(chan hashed, 1)
	go func() {
		d, _, err := treehash.Sum(ctx, co.Dir, treehash.Options{Exclude: added})
		beforeC <- hashed{d, err}
	}()
	// Zero-test detection reads the whole output, not the stored prefix:
	// "0 passed" tends to be the last line of a long log.
	zs := outcome.NewOutputScanner()
	timeout := c.Timeout.D()
	if timeout == 0 {
		timeout = e.defaultTimeout
	}
	if note := e.goToolchainCache(ctx, c, view, withEnv(baseEnv(e.hostPaths), view.Env)); note != "" {
		rec.Notes = append(rec.Notes, note)
	}
	spec := sandbox.Spec{
		Observer:   zs,
		Command:    c.Command,
		Checkout:   co.Dir,
		Env:        withEnv(baseEnv(e.hostPaths), view.Env),
		ReadOnly:   slices.Concat(co.ReadOnlyPaths(), view.ReadOnly),
		Views:      sandboxViews(view.Mounts),
		GoCache:    view.GoCache,
		ReportFile: reportPath,
		Timeout:    timeout,
		HostPaths:  e.hostPaths,
		MaxOutput:  e.maxOutput,
		Image:      c.Image,
	}
	spec.GoCacheLayers = view.GoCacheLayers
	var res sandbox.Result
	ran := (c.Report == nil || reportPath != "") && depsOK
	var task *sandbox.Task
	if ran {
		// Creating the task runs no check code (runc waits before the
		// command's exec), so it may overlap the probe; starting it may not.
		task, err = e.sb.Prepare(ctx, spec)
		if err != nil {
			<-beforeC
			return rec, nil, err
		}
	}
	discard := func() {
		if task != nil {
			task.Discard()
		}
	}
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			<-beforeC
			discard()
			return rec, nil, ctx.Err()
		}
		if e.gateErr != nil {
			<-beforeC
			discard()
			return rec, nil, e.gateErr
		}
	}
	before := <-beforeC
	if before.err != nil {
		discard()
		return rec, nil, before.err
	}
	rec.TreeBefore = before.d.String()
	e.sameTree(&rec, pinKey(commit, pins), finding)
	if hr != nil {
		if err := e.harness.finish(ctx, &rec, hr, e.logf); err != nil {
			discard()
			return rec, nil, err
		}
	}
	if ran {
		res, err = task.Run(ctx)
		if err != nil {
			return rec, nil, err
		}
	}
	rec.Started = ran
	rec.ExitCode, rec.TimedOut, rec.OOMKilled, rec.DurationMS = res.ExitCode, res.TimedOut, res.OOMKilled, res.Duration.Milliseconds()
	if e.ledger != nil {
		lr := ledgerRun{check: c.ID, phase: phase, checkoutDir: co.Dir, mounted: co.Mounted(), containerID: res.ID,
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
		e.ledger.addRun(lr)
	}
	if rec.Stdout, err = e.output(res.Stdout); err != nil {
		return rec, nil, err
	}
	if rec.Stderr, err = e.output(res.Stderr); err != nil {
		return rec, nil, err
	}
	if res.Stdout.Truncated || res.Stderr.Truncated {
		rec.Notes = append(rec.Notes, "output beyond the capture cap is hashed, not stored")
	}

	var inv *report.Inventory
	if reportPath != "" {
		inv = e.readReport(&rec, c, reportPath, finding)
		// The report is the one permitted artifact: parsed, then removed
		// with the directories runmill created for it, before the second
		// hash (spec § 3).
		if err := os.Remove(reportPath); err != nil && !os.IsNotExist(err) {
			finding("report.unusable", string(rmerr.SandboxSpec), "removing the report: %v", err)
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
	}
	after, _, err := treehash.Sum(ctx, co.Dir, hashOpts)
	if err != nil {
		// A tree the check made unhashable (a FIFO, a socket) moved.
		rec.TreeAfter = "sha256:" + strings.Repeat("0", 64)
		rec.Notes = append(rec.Notes, "hashing the tree after the check failed: "+err.Error())
	} else {
		rec.TreeAfter = after.String()
	}
	if rec.TreeAfter != rec.TreeBefore {
		finding(verdict.RuleTreeMoved, string(rmerr.VerifyTreeMoved), "tree changed during the check; result invalidated")
	}

	// Output phrases (spec § 4: zero tests, identity-free skips) are
	// observations; Judge decides whether they count.
	for _, f := range zs.Result().Findings() {
		f.Check, f.Rule = c.ID, verdict.OutputRulePrefix+strings.TrimPrefix(f.Rule, "outcome.")
		rec.Observations = append(rec.Observations, f)
	}
	if c.Report == nil {
		rec.Notes = append(rec.Notes, "no machine-readable report declared; coverage unproven")
	}
	rec.Observations = verdict.Normalize(rec.Observations)
	if err := co.Remove(); err != nil {
		return rec, nil, err
	}
	e.event("checkout.removed", map[string]any{"check": c.ID, "phase": string(phase)})
	return rec, inv, nil
}

// attachDeps waits for the run's preparation and attaches the check's
// strategy to the checkout at dir. A refusal (RM-VERIFY-005) becomes a
// finding and ok=false; anything else is a run error.
func (e *executor) attachDeps(ctx context.Context, c discovery.Check, dir string, finding func(rule, code, format string, args ...any)) (*deps.View, bool, error) {
	select {
	case <-e.depsReady:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	v, err := e.deps.Attach(ctx, c.Dependencies, dir)
	if err == nil {
		return v, true, nil
	}
	if rmerr.CodeOf(err) != rmerr.VerifyDependencies {
		return nil, false, err
	}
	var msgs []string
	for _, x := range flatten(err) {
		msg := x.Error()
		if re, ok := x.(*rmerr.Error); ok && re.Err == nil {
			msg = re.Msg
			if re.Hint != "" {
				msg += "; fix: " + re.Hint
			}
		}
		msgs = append(msgs, msg)
	}
	finding(ruleDependencies, string(rmerr.VerifyDependencies), "%s", strings.Join(msgs, "; "))
	return &deps.View{}, false, nil
}

func sandboxViews(ms []deps.Mount) []sandbox.View {
	out := make([]sandbox.View, len(ms))
	for i, m := range ms {
		out[i] = sandbox.View{Source: m.Source, Destination: m.Destination}
	}
	return out
}

// ruleDependencies is the rule of an RM-VERIFY-005 finding.
const ruleDependencies = "dependencies.unprepared"

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, x := range j.Unwrap() {
			out = append(out, flatten(x)...)
		}
		return out
	}
	return []error{err}
}

// output stores a captured stream's kept bytes.
func (e *executor) output(c sandbox.Capture) (evidence.Output, error) {
	addr, err := e.store.put(c.Kept)
	if err != nil {
		return evidence.Output{}, err
	}
	sha := c.SHA256
	if sha == "" { // never ran: the empty stream
		sha = strings.TrimPrefix(addr, "sha256/")
	}
	return evidence.Output{SHA256: sha, Size: c.Size, Artifact: addr, ArtifactSize: int64(len(c.Kept))}, nil
}

// readReport measures, stores and parses the declared report, in that
// order and without holding it: its size and allocated blocks are checked
// before a byte is read (issue #13: a report over budget.ReportBytes or with
// holes is never copied into the store), it is streamed into the store, the
// stored copy is parsed with the budget's caps, and its ids are admitted to
// the run's budget before the inventory is built, so a report that would
// break the budget fails its check with RM-REPORT-003 and leaves nothing in
// the statement.
func (e *executor) readReport(rec *evidence.CheckRun, c discovery.Check, path string, finding func(rule, code, format string, args ...any)) *report.Inventory {
	limit := func(err error) {
		re, _ := err.(*rmerr.Error)
		msg, hint := err.Error(), ""
		if re != nil {
			msg, hint = re.Msg, re.Hint
		}
		rec.Observations = append(rec.Observations, verdict.Finding{Code: rmerr.ReportLimit, Check: c.ID, Rule: ruleReportLimit, Message: msg, Hint: hint})
	}
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		finding("report.missing", string(rmerr.ReportMalformed), "the command removed the report %s", c.Report.Path)
		return nil
	case !st.Mode().IsRegular():
		finding("report.not-regular", string(rmerr.ReportMalformed), "the report %s is not a regular file after the command (%s)", c.Report.Path, st.Mode().Type())
		return nil
	case st.Size() == 0:
		finding("report.empty", string(rmerr.ReportMalformed), "the command did not write the report %s (still empty)", c.Report.Path)
		return nil
	}
	if err := budget.CheckReportSize("report "+c.Report.Path, st.Size()); err != nil {
		limit(err)
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscallNoFollow, 0)
	if err != nil {
		finding("report.unreadable", string(rmerr.ReportMalformed), "opening the report %s: %v", c.Report.Path, err)
		return nil
	}
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		finding("report.unreadable", string(rmerr.ReportMalformed), "the report %s was replaced while runmill read it", c.Report.Path)
		return nil
	}
	// A hole reads as NUL bytes, which no report format allows: refusing
	// it is never a false alarm, and it keeps a `truncate -s 512M` from
	// costing the store 512 MiB on every run.
	if hole, off, err := holeAt(f, st); err != nil || hole {
		if err != nil {
			finding("report.unreadable", string(rmerr.ReportMalformed), "measuring the report %s: %v", c.Report.Path, err)
		} else {
			finding("report.sparse", string(rmerr.ReportMalformed), "the report %s is sparse: %d bytes long, %d allocated, a hole at byte %d reads as NUL bytes no report format allows; it was neither read nor stored",
				c.Report.Path, st.Size(), st.Sys().(*syscall.Stat_t).Blocks*512, off)
		}
		return nil
	}
	addr, n, err := e.store.putFrom(f, budget.ReportBytes)
	switch {
	case errors.Is(err, errOverCap):
		limit(budget.CheckReportSize("report "+c.Report.Path+" (it grew while runmill read it)", n))
		return nil
	case err != nil:
		finding("report.unreadable", "", "storing the report: %v", err)
		return nil
	}
	rec.Report = &evidence.ReportRecord{
		Path: c.Report.Path, Format: report.Format(c.Report.Format), Identity: report.Identity(c.Report.Identity),
		SHA256: strings.TrimPrefix(addr, "sha256/"), Size: n, Artifact: addr,
	}
	// Parsed from the stored copy: the bytes parsed are the bytes the
	// digest names, whatever happens to the checkout's file.
	sf, err := os.Open(e.store.path(addr))
	if err != nil {
		finding("report.unreadable", "", "reading the stored report: %v", err)
		return nil
	}
	defer sf.Close()
	// A baseline's repeated ids carry no authority but do not void the
	// rest of its report (the change that renames them can land); the
	// candidate's ids must be unique (spec § 4).
	inv, perr := report.Parse(bufio.NewReaderSize(sf, 1<<16), report.Format(c.Report.Format), report.Options{
		Identity: report.Identity(c.Report.Identity), AllowDuplicateIDs: rec.Phase == verdict.Baseline,
		Limits: report.DefaultLimits})
	if perr != nil {
		finding("report.invalid", string(rmerr.CodeOf(perr)), "the report %s is invalid: %v", c.Report.Path, perr)
		return nil
	}
	var cost int64
	for _, t := range inv.Tests {
		cost += budget.IDCost(string(t.ID))
	}
	ids := e.store.ids
	if ids == nil { // a store without a run's account: the report's own caps still hold
		ids = &budget.Run{}
	}
	if err := ids.Admit(fmt.Sprintf("check %s (%s), report %s", c.ID, rec.Phase, c.Report.Path), len(inv.Tests), cost); err != nil {
		limit(err)
		return nil
	}
	evidence.ReportFactsOf(rec.Report, inv)
	// The report's own notes (a summary attribute that disagrees with the
	// elements, a field cut at its cap) go into the record.
	for _, n := range inv.Notes {
		rec.Notes = append(rec.Notes, "report: "+printable.Text(n, 1000))
	}
	return inv
}

// ruleReportLimit is the rule of a report refused by the budget.
const ruleReportLimit = "report.limit"

// prepareReport checks the declared path against the fresh checkout (it
// must not exist; no component may be a symlink), creates the missing
// parent directories and an empty file, and returns the file and the
// directories it created (to remove them before the post-check hash).
func prepareReport(root, rel string) (string, []string, error) {
	path, missing, err := safeJoin(root, rel)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return "", nil, fmt.Errorf("%s exists in the commit; a declared report must be generated by the command", rel)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscallNoFollow, 0o644)
	if err != nil {
		return "", nil, err
	}
	f.Close()
	sort.Strings(missing)
	return path, missing, nil
}
