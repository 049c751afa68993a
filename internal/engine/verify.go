package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
	"github.com/runmill/verify/pkg/verdict"
)

// VerifyOptions configure one verification run.
type VerifyOptions struct {
	Discover DiscoverOptions
	// StateDir holds checkouts, sandbox state and runs/<run-id>/.
	StateDir          string
	ContainerdAddress string
	// Parallel bounds concurrent check runs; 0 means the number of CPUs.
	Parallel int
	// Repository names the repository in the evidence ("owner/name");
	// the directory's base name when empty.
	Repository  string
	PullRequest int64
	// Progress receives one human line per step (stderr); nil discards.
	Progress io.Writer
	// Version is runmill's version, recorded in the evidence.
	Version string
	// SigningKey signs the statements; nil writes them unsigned.
	SigningKey *evidence.SigningKey
	// GitHub consults GitHub (required contexts, pull request facts,
	// remote reconciliation); nil makes no GitHub call at all.
	GitHub *GitHubOptions
	Now    func() time.Time
	// GoToolCacheDir keeps the prepared Go toolchain caches
	// (gotoolcache.go); StateDir/toolcache/go when empty. Runs that share
	// one reuse its caches.
	GoToolCacheDir string
	// Shard, when set, runs only shard K of N (evidence.AssignShards,
	// balanced by ShardDurations when given) and signs a shard statement
	// instead of a delivery statement (shard.go; docs/scale.md).
	Shard          *evidence.ShardSpec
	ShardDurations map[string]int64
	// Reuse are directories of earlier runs (a run dir, a runs/ dir or a
	// state dir) whose baseline runs may be reused when their input keys
	// are equal (reuse.go); the state dir's own runs are added when
	// SigningKey is set. ReuseTrust is the trust document their bundles
	// must verify against (nil: SigningKey's own public key; neither: no
	// reuse). NoReuse executes every run.
	Reuse      []string
	ReuseTrust []byte
	NoReuse    bool
}

// Run is the outcome of Verify: the run's directory and its records.
type Run struct {
	ID       string
	Dir      string // StateDir/runs/<ID>
	Delivery evidence.Delivery
	// BundlePath is the signed delivery bundle, or "" when unsigned.
	BundlePath string
	// StatementPath is the delivery statement (canonical JSON).
	StatementPath string
	// TerminalPath is the signed terminal bundle, or "" when unsigned.
	TerminalPath string
	Cleanup      []string // what the start-up sweep removed
}

// MergeReady reports the verdict.
func (r *Run) MergeReady() bool { return r.Delivery.Verdict.MergeReady }

// runner is what the engine needs of a sandbox.
type runner interface {
	Prepare(ctx context.Context, spec sandbox.Spec) (*sandbox.Task, error)
	Probe(ctx context.Context, spec sandbox.Spec) (sandbox.ProbeReport, error)
}

var _ runner = (*sandbox.Sandbox)(nil)

// Verify runs the whole pipeline: Discovery, then every runnable check in a
// fresh checkout inside the sandbox (report checks at base first), then
// Outcome, Coverage and the verdict; it writes the run's evidence.
func Verify(ctx context.Context, o VerifyOptions) (_ *Run, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.StateDir = absolute(o.StateDir)
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	// Progress quotes repository text (file names, test ids, messages):
	// each line is escaped whole, so nothing it quotes can move the
	// cursor or start a line GitHub reads as a workflow command.
	logf := func(format string, args ...any) {
		fmt.Fprintf(progress, "runmill: %s\n", printable.Text(fmt.Sprintf(format, args...), 0))
	}

	// Reaching containerd (or starting a private one, a few hundred ms)
	// needs nothing from Discovery: it runs meanwhile.
	connC := make(chan connection, 1)
	go func() {
		sb, err := sandbox.Connect(ctx, sandbox.Options{Address: o.ContainerdAddress, StateDir: filepath.Join(o.StateDir, "sandbox")})
		if err == nil {
			sb.Warm(ctx) // the shared shim starts while Discovery runs
		}
		connC <- connection{sb, err}
	}()
	connTaken := false
	defer func() {
		if !connTaken { // returned before using it
			if c := <-connC; c.sb != nil {
				c.sb.Close()
			}
		}
	}()

	var gh *githubFacts
	if o.GitHub != nil {
		if gh, err = observeGitHub(ctx, o.GitHub); err != nil {
			return nil, err
		}
		gh.apply(&o.Discover, o.GitHub.Exclude)
	}

	m, op, err := discover(ctx, o.Discover)
	if err != nil {
		connTaken = true
		if terr := discoveryFailed(ctx, o, <-connC, err, logf); terr != nil {
			logf("%v", terr)
		}
		return nil, err
	}
	for _, u := range m.GitHub.Unknown {
		logf("GitHub %s: required contexts UNKNOWN (%s)", u.Name, u.Reason)
	}
	var budgets policy.Budgets
	var hostPaths []string
	if op != nil {
		budgets, hostPaths = op.Doc.Budgets, op.Doc.Sandbox.HostPaths
	}
	repo, err := git.Open(ctx, o.Discover.RepoDir)
	if err != nil {
		return nil, err
	}
	mergeBase, err := repo.MergeBase(ctx, m.Base, m.Candidate)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: newRunID(o.Now())}
	run.Dir = filepath.Join(o.StateDir, "runs", run.ID)
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the run directory: %w", err)
	}
	defer pruneAtStart(o.StateDir, run.ID, o.Now(), logf)()
	var chain evidence.Chain
	var evMu sync.Mutex // checks append events concurrently
	event := func(kind string, detail any) {
		evMu.Lock()
		defer evMu.Unlock()
		_ = chain.Append(o.Now(), kind, detail)
	}
	event("run.started", map[string]any{"base": m.Base, "candidate": m.Candidate})
	logf("run %s: %d checks in the manifest (policy read from %s)", run.ID, len(m.Checks), m.ReadFrom)

	checkouts, err := checkout.NewManager(ctx, repo.Dir, o.StateDir)
	if err != nil {
		return nil, err
	}
	defer checkouts.Close(context.Background())
	swept, err := checkouts.Sweep(ctx)
	if err != nil {
		return nil, err
	}
	conn := <-connC
	connTaken = true
	sb, err := conn.sb, conn.err
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	sbSwept, err := sb.Sweep(ctx)
	if err != nil {
		return nil, err
	}
	run.Cleanup = append(swept, sbSwept...)
	// Layered checkouts (one written tree per commit, an overlay mount per
	// check run) need a containerd that sees this process's mounts.
	if shared, err := sb.SeesHostMounts(); !shared {
		if err == nil {
			err = errors.New("containerd runs in another mount namespace")
		}
		logf("checkouts: a full checkout per check run (%v)", err)
	} else if err := checkouts.EnableLayers(); err != nil {
		logf("checkouts: a full checkout per check run (%v)", err)
	} else {
		logf("checkouts: each commit written once, an overlay mount per check run")
	}
	for _, s := range run.Cleanup {
		logf("swept a leftover of an earlier run: %s", s)
	}
	event("sweep.done", map[string]any{"removed": len(run.Cleanup)})

	e := &executor{manifest: m, sb: sb, checkouts: checkouts, store: newStore(filepath.Join(run.Dir, "artifacts")), logf: logf,
		maxOutput: budgets.MaxOutputBytes, defaultTimeout: budgets.CheckTimeout.D(), hostPaths: hostPaths, event: event,
		ledger: &ledger{}, reuse: newReuser(o, logf), goCaches: &goToolCaches{dir: cmp.Or(o.GoToolCacheDir, filepath.Join(o.StateDir, "toolcache", "go"))},
		harness: newHarnesses(repo, checkouts, m)}
	e.harness.ledger = e.ledger
	repository := evidence.Repository{Name: repoName(o.Repository, repo.Dir)}
	if gh != nil {
		repository = gh.repo
	}
	cand := evidence.TerminalCandidate{Repository: repository, PullRequest: o.PullRequest, Head: m.Candidate, Base: m.Base}
	// A run that cannot reach a verdict still ends with a terminal
	// statement (outcome no-verdict): spec — signed at the end of every run.
	closeSandbox := func() []evidence.CleanupResource { return closeAndObserve(sb) }
	defer func() {
		if err != nil {
			checkouts.Wait(context.Background())
			if terr := writeTerminal(context.Background(), run, o, &chain, e.ledger, sb, closeSandbox, "no-verdict", "", cand); terr != nil {
				logf("writing the terminal statement: %v", terr)
			}
		}
	}()

	// Prepared dependencies (spec § 3) are validated and imported or
	// verified while the probe runs; checks that declare them wait here.
	e.depsReady = make(chan struct{})
	go func() {
		defer close(e.depsReady)
		e.deps = prepareDeps(ctx, repo, m, op, o.StateDir, checkouts.Dir(), logf, event)
	}()

	// Focus markers and the candidate tree come from one fresh checkout of
	// the candidate; it needs no sandbox, so it runs while the probe does.
	type scan struct {
		tree     string
		findings []verdict.Finding
		err      error
	}
	scanned := make(chan scan, 2)
	go func() {
		tracked, err := repo.TrackedFiles(ctx, m.Candidate)
		if err != nil {
			scanned <- scan{err: err}
			return
		}
		tree, fs, err := e.scanCandidate(ctx, m.Candidate, tracked)
		scanned <- scan{tree, fs, err}
	}()
	// Spec § 3: a focused baseline fails closed (it ran part of the suite,
	// so its inventory under-states what passed), wherever a baseline
	// runs under a contract.
	baseScan := needsBaselineScan(m)
	if baseScan {
		go func() {
			tracked, err := repo.TrackedFiles(ctx, mergeBase)
			if err != nil {
				scanned <- scan{err: err}
				return
			}
			_, fs, err := e.scanCommit(ctx, mergeBase, tracked, false)
			for i := range fs {
				fs[i].Message = "at the baseline commit " + short12(mergeBase) + ": " + fs[i].Message
				fs[i].Hint = "the baseline is focused, so its inventory does not say what passed; remove the marker at the base first (a change that only removes it still fails closed)"
			}
			scanned <- scan{findings: fs, err: err}
		}()
	}
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = budgets.Parallel
	}
	if parallel <= 0 {
		parallel = runtime.NumCPU()
	}
	// Checks start now: their checkouts and first hashes overlap the
	// probe, and each waits at the gate until the probe has passed before
	// anything runs in the sandbox (no check ever runs unprobed).
	e.gate = make(chan struct{})
	records := make([][]evidence.CheckRun, len(m.Checks))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var firstErr error
	var errMu sync.Mutex
	share := o.assignment(m)
	for i, c := range m.Checks {
		if !c.Runnable() || !share.has(c.ID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs, err := e.check(ctx, sem, c, m, mergeBase)
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
			records[i] = recs
		}()
	}
	probe, perr := e.probe(ctx, o.StateDir, hostPaths, imagesOf(m))
	if perr != nil {
		wg.Wait()
		<-e.depsReady // an import in progress finishes before the run returns
		<-scanned
		if baseScan {
			<-scanned
		}
		return nil, perr
	}
	logf("sandbox probe: %d guarantees measured, all held (%s, runc %s)", len(probe.Checks), probe.Runtime.Address, probe.Runtime.Runc)
	probeJSON, _ := json.Marshal(probe)

	d := &run.Delivery
	d.RunmillVersion, d.RunID = o.Version, run.ID
	d.Manifest = *m
	d.Candidate = evidence.Candidate{
		Repository:  repository,
		PullRequest: o.PullRequest,
		Head:        m.Candidate, Base: m.Base, MergeBase: mergeBase,
	}
	d.Sandbox = probeJSON
	d.Checks, d.Remote, d.PendingContexts, d.Failures = []evidence.CheckRun{}, []verdict.RemoteResult{}, []string{}, []verdict.Finding{}
	d.Reviews = gh.reviews()
	d.Dependencies = dependencyDiffs(ctx, repo, m, mergeBase, logf)
	d.Failures = append(d.Failures, githubFindings(m, op != nil && op.Doc.GitHub.Required, gh)...)

	wg.Wait()
	<-e.depsReady
	scans := []scan{<-scanned}
	if baseScan {
		scans = append(scans, <-scanned)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for _, sc := range scans {
		if sc.err != nil {
			return nil, sc.err
		}
		if sc.tree != "" {
			d.Candidate.Tree = sc.tree
		}
		d.Failures = append(d.Failures, sc.findings...)
	}
	for _, recs := range records {
		d.Checks = append(d.Checks, recs...)
	}
	// Every check run is over: the checkouts and the commits' written
	// trees go (meanwhile: reconciliation, the evidence), and the
	// terminal statement then looks for them.
	closedC := make(chan error, 1)
	go func() { closedC <- checkouts.Close(context.WithoutCancel(ctx)) }()
	go sb.Idle() // no task follows; Close waits for it
	e.ledger.addCheckoutRoot(checkouts.Dir())
	// Remote reconciliation comes after the local checks: they took time
	// the remote ones used to finish.
	if o.GitHub != nil && o.Shard == nil { // a merge reconciles once for all shards
		if err := reconcile(ctx, o.GitHub, d, logf); err != nil {
			return nil, err
		}
		event("github.reconciled", map[string]any{"remote": len(d.Remote), "pending": len(d.PendingContexts)})
	}
	v := evidence.Decide(d)
	event("verdict", map[string]any{"merge_ready": v.MergeReady})
	d.IssuedAt = o.Now().UTC().Format(time.RFC3339Nano)
	var digest string
	if o.Shard != nil {
		digest, err = writeShardEvidence(run, &o, share)
	} else {
		digest, err = writeEvidence(run, o.SigningKey)
	}
	if cerr := <-closedC; err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	outcome := "not-merge-ready"
	if v.MergeReady {
		outcome = "merge-ready"
	}
	if o.Shard != nil {
		outcome = "shard" // no verdict of its own: the merge takes it
	}
	if o.GitHub != nil && o.Shard == nil {
		publishCheckRun(ctx, o.GitHub, run.Dir, d, logf)
	}
	if err := writeTerminal(ctx, run, o, &chain, e.ledger, sb, closeSandbox, outcome, digest, cand); err != nil {
		return nil, err
	}
	return run, nil
}

// probe runs the canary with the settings every check gets — the host
// toolchain root, and each image some check runs in — and opens the gate;
// when a guarantee is missing anywhere the gate opens with the error, and no
// check runs (no weaker fallback).
func (e *executor) probe(ctx context.Context, stateDir string, hostPaths, images []string) (sandbox.ProbeReport, error) {
	created := func(dir string) {
		if e.ledger != nil {
			e.ledger.addTempdir(dir)
		}
	}
	rep, err := probeSandbox(ctx, e.sb, stateDir, hostPaths, "", created)
	for _, img := range images {
		if err != nil {
			break
		}
		var r sandbox.ProbeReport
		r, err = probeSandbox(ctx, e.sb, stateDir, hostPaths, img, created)
		if err != nil {
			err = fmt.Errorf("probing image %s: %w", img, err)
		}
		rep.Images = append(rep.Images, r)
	}
	e.gateErr = err
	close(e.gate) // publishes gateErr to the checks waiting on the gate
	return rep, err
}

// imagesOf lists the distinct images the manifest's runnable checks use.
func imagesOf(m *discovery.Manifest) []string {
	var out []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Image != "" && !slices.Contains(out, c.Image) {
			out = append(out, c.Image)
		}
	}
	slices.Sort(out)
	return out
}

// ProbeSandbox runs the canary exactly as Verify does before any check:
// same environment, same host paths, a read-only directory standing for
// the checkout. `runmill doctor --check sandbox` uses it, so the doctor
// vouches for what verification will actually get.
func ProbeSandbox(ctx context.Context, sb *sandbox.Sandbox, stateDir string, hostPaths []string) (sandbox.ProbeReport, error) {
	return probeSandbox(ctx, sb, stateDir, hostPaths, "", nil)
}

// probeSandbox probes one root: the host toolchain (image "") or an image.
func probeSandbox(ctx context.Context, sb runner, stateDir string, hostPaths []string, image string, created func(string)) (sandbox.ProbeReport, error) {
	dir, err := os.MkdirTemp(stateDir, "probe-")
	if err != nil {
		return sandbox.ProbeReport{}, err
	}
	if created != nil {
		created(dir)
	}
	defer os.RemoveAll(dir)
	return sb.Probe(ctx, sandbox.Spec{ReadOnly: []string{dir}, Env: baseEnv(hostPaths), HostPaths: hostPaths, Image: image})
}

// writeEvidence writes the delivery statement (and its bundle when a key is
// given) into the run directory.
func writeEvidence(run *Run, key *evidence.SigningKey) (string, error) {
	st := evidence.NewDeliveryStatement(run.Delivery)
	payload, err := evidence.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding the statement: %w", err)
	}
	run.StatementPath = filepath.Join(run.Dir, "statement.json")
	if err := os.WriteFile(run.StatementPath, payload, 0o644); err != nil {
		return "", err
	}
	if key != nil {
		b, _, err := evidence.Sign(st, key)
		if err != nil {
			return "", fmt.Errorf("signing the statement: %w", err)
		}
		run.BundlePath = filepath.Join(run.Dir, "evidence.json")
		if err := os.WriteFile(run.BundlePath, b, 0o644); err != nil {
			return "", err
		}
	}
	return evidence.Digest(payload), nil
}

// connection is the outcome of sandbox.Connect.
type connection struct {
	sb  *sandbox.Sandbox
	err error
}

// discoveryFailed ends a run whose Discovery failed (an unreadable or
// invalid policy, RM-VERIFY-004, a bad proposal) with a terminal statement
// like any other run without a verdict: the failure, and the sandbox
// connection observed closed. A statement needs a subject, so this is done
// only when both revisions name commits; otherwise there is no candidate to
// speak about and the error alone is the answer.
func discoveryFailed(ctx context.Context, o VerifyOptions, conn connection, failure error, logf func(string, ...any)) error {
	var closeSandbox func() []evidence.CleanupResource
	var gone goneChecker
	if conn.sb != nil {
		closeSandbox, gone = func() []evidence.CleanupResource { return closeAndObserve(conn.sb) }, conn.sb
		defer conn.sb.Close() // idempotent; closes it when no statement is written
	}
	repo, err := git.Open(ctx, o.Discover.RepoDir)
	if err != nil {
		return nil
	}
	base, berr := repo.ResolveCommit(ctx, o.Discover.Base, "--base")
	cand, cerr := repo.ResolveCommit(ctx, o.Discover.Candidate, "--candidate")
	if berr != nil || cerr != nil {
		return nil
	}
	run := &Run{ID: newRunID(o.Now())}
	run.Dir = filepath.Join(o.StateDir, "runs", run.ID)
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return fmt.Errorf("creating the run directory: %w", err)
	}
	var chain evidence.Chain
	_ = chain.Append(o.Now(), "run.started", map[string]any{"base": base, "candidate": cand})
	_ = chain.Append(o.Now(), "discovery.failed", map[string]any{"code": string(rmerr.CodeOf(failure)), "message": failure.Error()})
	tc := evidence.TerminalCandidate{Repository: evidence.Repository{Name: repoName(o.Repository, repo.Dir)},
		PullRequest: o.PullRequest, Head: cand, Base: base}
	if err := writeTerminal(ctx, run, o, &chain, &ledger{}, gone, closeSandbox, "no-verdict", "", tc); err != nil {
		return fmt.Errorf("writing the terminal statement: %w", err)
	}
	logf("run %s: no verdict (Discovery failed); terminal statement in %s", run.ID, run.Dir)
	return nil
}

func newRunID(t time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func repoName(flag, dir string) string {
	if flag != "" {
		return flag
	}
	return filepath.Base(dir)
}

// prepareDeps runs deps.Prepare for the strategies the manifest's runnable
// checks declare. A refusal is not a run error: each check of that strategy
// records it (RM-VERIFY-005) and fails without running.
func prepareDeps(ctx context.Context, repo *git.Repo, m *discovery.Manifest, op *discovery.OperatorPolicy, stateDir, scratchDir string, logf func(string, ...any), event func(string, any)) *deps.Prepared {
	var strategies []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Dependencies != "" {
			strategies = append(strategies, c.Dependencies)
		}
	}
	if len(strategies) == 0 {
		return nil
	}
	do := deps.Options{SourceDir: repo.Dir, StateDir: stateDir, ScratchDir: scratchDir, Base: m.Base, Candidate: m.Candidate}
	if op != nil {
		g := op.Doc.Dependencies.GoModules
		do.Go = deps.GoOptions{ModuleCache: g.ModuleCache, BuildCache: g.BuildCache, AllowAdditions: g.AllowAdditions}
	}
	start := time.Now()
	p, err := deps.Prepare(ctx, repo, do, strategies)
	if err != nil {
		logf("prepared dependencies refused: %v", err)
	}
	for _, r := range p.Receipts() {
		logf("%s (%s)", r.Note(), time.Since(start).Round(time.Millisecond))
		event("dependencies.prepared", map[string]any{"strategy": r.Strategy, "key": r.Key, "fingerprint": r.Fingerprint, "reused": r.Reused})
	}
	return p
}

// withEnv returns env with each of add replacing the entry of its name.
func withEnv(env, add []string) []string {
	out := slices.Clone(env)
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		out = append(out, kv)
	}
	return out
}

// baseEnv is the allow-listed environment every check gets. Nothing is
// inherited from runmill's own environment: no token, no signing key, no
// GITHUB_* value ever enters a sandbox.
// hostPaths are the operator's sandbox.host_paths (empty: the defaults):
// PATH keeps the host's entries under them, so a toolchain the operator
// binds (say /opt/node) is found without runmill guessing where it lives.
func baseEnv(hostPaths []string) []string {
	env := []string{"PATH=" + sandbox.SearchPath(os.Getenv("PATH"), hostPaths), "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC", "CI=true", "RUNMILL=1", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly", "GOPROXY=off", "npm_config_offline=true"}
	return append(env, checkout.GitEnv()...)
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

func short12(commit string) string { return commit[:min(12, len(commit))] }

// scanCandidate measures the candidate tree and scans its tracked test files
// for focus markers in one fresh checkout.
func (e *executor) scanCandidate(ctx context.Context, commit string, tracked []string) (string, []verdict.Finding, error) {
	return e.scanCommit(ctx, commit, tracked, true)
}

// scanCommit scans one fresh checkout of commit for focus markers, and
// measures its tree when measure is set.
func (e *executor) scanCommit(ctx context.Context, commit string, tracked []string, measure bool) (string, []verdict.Finding, error) {
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
