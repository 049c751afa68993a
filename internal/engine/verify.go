package engine

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
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
	// balanced by ShardDurations when given) of the verification its
	// VerificationID names (required) and signs a shard statement instead
	// of a delivery statement (shard.go; docs/scale.md).
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
	// Retention bounds the runs kept under StateDir/runs (prune.go); the
	// zero Retention is DefaultRetention.
	Retention Retention
	// ProveBase makes the run a base proof of Discover.Base (prove.go):
	// every report check's baseline there, signed for later verifications
	// against that commit to reuse; no candidate runs.
	ProveBase bool
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

// Verify runs the whole pipeline, one stage after the other in the spec's
// order: Discovery, then every runnable check in a fresh checkout inside the
// sandbox (report checks at the baseline too), then Outcome, Coverage and
// the verdict; it writes the run's evidence and ends with the terminal
// statement. Where a stage's work may overlap the next one's, the stage
// starts it and a later stage waits for it (pending).
func Verify(ctx context.Context, o VerifyOptions) (_ *Run, err error) {
	if o.Shard != nil {
		if err := evidence.CheckVerificationID(o.Shard.VerificationID); err != nil {
			return nil, err
		}
	}
	if o.ProveBase {
		if err := o.proofOptions(); err != nil {
			return nil, err
		}
	}
	v := startVerification(ctx, o)
	defer func() { v.end(err) }()
	if err = v.discover(ctx); err != nil {
		return nil, err
	}
	if err = v.prepare(ctx); err != nil {
		return nil, err
	}
	if err = v.execute(ctx); err != nil {
		return nil, err
	}
	mergeReady, err := v.judge(ctx)
	if err != nil {
		return nil, err
	}
	digest, err := v.record()
	if err != nil {
		return nil, err
	}
	if err = v.publish(ctx, mergeReady, digest); err != nil {
		return nil, err
	}
	return v.run, nil
}

// verification is one Verify run's state, handed from stage to stage: each
// stage fills in what the later ones read. What must be undone however the
// run ends is pushed on undo as it is made, and undone last first.
type verification struct {
	o    VerifyOptions
	logf func(format string, args ...any)
	undo []func()
	// failed is set when the run ends with an error, before undo runs.
	failed bool

	// sandbox is the containerd connection, made while Discovery runs;
	// claimed once a stage has taken it (and so closes it).
	sandbox *pending[connection]
	claimed bool

	// Discovery's answer (stage_discover.go).
	repo *git.Repo
	m    *discovery.Manifest
	op   *discovery.OperatorPolicy // nil without an operator policy
	gh   *githubFacts              // nil when GitHub is not consulted
	cmp  comparison                // the two commits compared
	// renames are git's renames between the compared commits
	// (comparison.changeSides), listed while the run prepares.
	renames *pending[renamesResult]

	// What prepare made (stage_prepare.go).
	run       *Run
	evMu      sync.Mutex // checks append events concurrently
	chain     evidence.Chain
	checkouts *checkout.Manager
	sb        *sandbox.Sandbox
	e         *executor
	cand      evidence.TerminalCandidate

	// share is this shard's part of the manifest (nil: all of it).
	share shardSet
	// closed is the checkouts' removal, under way while the verdict is
	// taken and the evidence written (stage_execute.go).
	closed *pending[error]
}

// startVerification applies the defaults and starts reaching containerd,
// which needs nothing from Discovery and so runs meanwhile.
func startVerification(ctx context.Context, o VerifyOptions) *verification {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.StateDir = absolute(o.StateDir)
	v := &verification{o: o, logf: progressLogger(o.Progress)}
	v.sandbox = connectSandbox(ctx, o)
	v.onExit(func() {
		if !v.claimed { // the run ended before using it
			if c := v.claim(ctx); c.sb != nil {
				c.sb.Close()
			}
		}
	})
	return v
}

// closeWhenConnected closes the sandbox of a connection the run will not
// use, now if it is made, else when it is: a cancelled run does not wait
// for a connection that may never come.
func closeWhenConnected(p *pending[connection]) {
	go func() {
		if c := p.wait(); c.sb != nil {
			c.sb.Close()
		}
	}()
}

// onExit pushes f on what the end of the run undoes.
func (v *verification) onExit(f func()) { v.undo = append(v.undo, f) }

// end undoes what the run made, last first; err is how the run ended.
func (v *verification) end(err error) {
	v.failed = err != nil
	for i := len(v.undo) - 1; i >= 0; i-- {
		v.undo[i]()
	}
}

// claim takes the containerd connection: from here on the taker closes it.
// A run cancelled while the connection is still being made (containerd or
// its private daemon not answering) does not wait for it: it gets an error,
// and the connection is closed whenever it comes.
func (v *verification) claim(ctx context.Context) connection {
	v.claimed = true
	select {
	case <-v.sandbox.done: // made already: taken even by a cancelled run, to close it observed
		return v.sandbox.v
	default:
	}
	select {
	case <-v.sandbox.done:
		return v.sandbox.v
	case <-ctx.Done():
		closeWhenConnected(v.sandbox)
		return connection{err: rmerr.Wrap(rmerr.SandboxUnavailable, context.Cause(ctx), "connecting to containerd: the run was cancelled first")}
	}
}

// event appends to the run's event chain.
func (v *verification) event(kind string, detail any) {
	v.evMu.Lock()
	defer v.evMu.Unlock()
	_ = v.chain.Append(v.o.Now(), kind, detail)
}

// limits are the operator policy's budgets (zero without a policy) and the
// sandbox's host paths (jobHostPaths).
func (v *verification) limits() (policy.Budgets, []string) {
	if v.op == nil {
		return policy.Budgets{}, jobHostPaths(nil)
	}
	return v.op.Doc.Budgets, jobHostPaths(v.op.Doc.Sandbox.HostPaths)
}

// progressLogger writes one progress line per call to w (nil discards).
// Progress quotes repository text (file names, test ids, messages): each
// line is escaped whole, so nothing it quotes can move the cursor or start a
// line GitHub reads as a workflow command. Checks and the cache pruner log
// concurrently: one line is written at a time, whatever w is.
func progressLogger(w io.Writer) func(format string, args ...any) {
	if w == nil {
		w = io.Discard
	}
	var mu sync.Mutex
	return func(format string, args ...any) {
		line := "runmill: " + printable.Text(fmt.Sprintf(format, args...), 0) + "\n"
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, line)
	}
}
