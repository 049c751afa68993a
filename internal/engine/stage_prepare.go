package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/evidence"
)

// prepare is the second stage: what every check run needs — the run's
// directory and event chain, the checkout manager and the sandbox (each
// having swept the leftovers of killed runs), and the executor. From here
// on, a run that cannot reach a verdict still ends with a terminal
// statement (outcome no-verdict): spec — signed at the end of every run.
func (v *verification) prepare(ctx context.Context) error {
	if err := v.openRun(ctx); err != nil {
		return err
	}
	if err := v.openCheckoutsAndSandbox(ctx); err != nil {
		// Still a terminal statement (cancelled, or a sweep that failed):
		// the events so far, and the sandbox observed closed if it opened.
		v.noVerdict(ctx, &ledger{})
		return err
	}
	v.newExecutor()
	v.onExit(func() {
		if v.failed {
			v.noVerdict(ctx, v.e.ledger)
		}
	})
	return nil
}

// terminalTimeout bounds writing a run's terminal statement once the run
// itself has ended, cancelled or not.
const terminalTimeout = 30 * time.Second

// noVerdict ends a run that reached no verdict with its terminal statement:
// it waits for the checkouts' removal and observes the sandbox closed, on a
// context of its own, so a cancelled run still says how it ended (and why:
// a run.cancelled event with the cancellation's cause, "runmill received
// terminated" for SIGTERM).
func (v *verification) noVerdict(ctx context.Context, l *ledger) {
	if ctx.Err() != nil {
		v.event("run.cancelled", map[string]any{"cause": context.Cause(ctx).Error()})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), terminalTimeout)
	defer cancel()
	if v.checkouts != nil {
		v.checkouts.Wait(ctx)
	}
	var sb goneChecker
	var closeSandbox func() []evidence.CleanupResource
	if v.sb != nil {
		sb, closeSandbox = v.sb, v.closeSandbox
	}
	if terr := writeTerminal(ctx, v.run, v.o, &v.chain, l, sb, closeSandbox, "no-verdict", "", v.cand); terr != nil {
		v.logf("writing the terminal statement: %v", terr)
	}
}

// openRun makes the run's directory (pruning old runs, and the caches
// while the run works: pruneAtStart), names its candidate for the terminal statement and starts its event
// chain.
func (v *verification) openRun(ctx context.Context) error {
	run := &Run{ID: newRunID(v.o.Now())}
	run.Dir = filepath.Join(v.o.StateDir, "runs", run.ID)
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return fmt.Errorf("creating the run directory: %w", err)
	}
	v.run = run
	repository := evidence.Repository{Name: repoName(v.o.Repository, v.repo.Dir)}
	if v.gh != nil {
		repository = v.gh.repo
	}
	v.cand = evidence.TerminalCandidate{Repository: repository, PullRequest: v.o.PullRequest, Head: v.m.Candidate, Base: v.m.Base}
	v.onExit(pruneAtStart(ctx, v.o.StateDir, goToolCacheDir(v.o), run.ID, v.o.Now(), v.o.Retention.orDefault(), v.logf))
	v.event("run.started", map[string]any{"base": v.m.Base, "candidate": v.m.Candidate})
	v.logf("run %s: %d checks in the manifest (policy read from %s)", run.ID, len(v.m.Checks), v.m.ReadFrom)
	return nil
}

// openCheckoutsAndSandbox makes the checkout manager, takes the containerd
// connection Discovery overlapped, sweeps what killed runs left in both and
// chooses how checkouts are made.
func (v *verification) openCheckoutsAndSandbox(ctx context.Context) error {
	checkouts, err := checkout.NewManager(ctx, v.repo.Dir, v.o.StateDir)
	if err != nil {
		return err
	}
	checkouts.MeasureWith(v.repo)
	v.checkouts = checkouts
	v.onExit(func() { checkouts.Close(context.Background()) })
	swept, err := checkouts.Sweep(ctx)
	if err != nil {
		return err
	}
	conn := v.claim(ctx)
	if conn.err != nil {
		return conn.err
	}
	sb := conn.sb
	v.sb = sb
	v.onExit(func() { sb.Close() })
	sbSwept, err := sb.Sweep(ctx)
	if err != nil {
		return err
	}
	v.run.Cleanup = append(swept, sbSwept...)
	v.chooseCheckouts()
	for _, s := range v.run.Cleanup {
		v.logf("swept a leftover of an earlier run: %s", s)
	}
	v.event("sweep.done", map[string]any{"removed": len(v.run.Cleanup)})
	v.pruneImages(ctx)
	return nil
}

// chooseCheckouts: layered checkouts (one written tree per commit, an
// overlay mount per check run) need a containerd that sees this process's
// mounts; otherwise a full checkout per check run.
func (v *verification) chooseCheckouts() {
	if shared, err := v.sb.SeesHostMounts(); !shared {
		if err == nil {
			err = errors.New("containerd runs in another mount namespace")
		}
		v.logf("checkouts: a full checkout per check run (%v)", err)
	} else if err := v.checkouts.EnableLayers(); err != nil {
		v.logf("checkouts: a full checkout per check run (%v)", err)
	} else {
		v.logf("checkouts: each commit written once, an overlay mount per check run")
	}
}

// newExecutor makes the run's executor, with the operator's budgets and
// host paths.
func (v *verification) newExecutor() {
	o, m := &v.o, v.m
	budgets, hostPaths := v.limits()
	e := &executor{manifest: m, sb: v.sb, checkouts: v.checkouts, store: newStore(filepath.Join(v.run.Dir, "artifacts")), logf: v.logf,
		maxOutput: budgets.MaxOutputBytes, defaultTimeout: budgets.CheckTimeout.D(), hostPaths: hostPaths, event: v.event,
		ledger: &ledger{}, reuse: newReuser(*o, v.logf), goCaches: &goToolCaches{dir: goToolCacheDir(*o)},
		harness: newHarnesses(v.repo, v.checkouts, m), conflicts: v.cmp.conflicts()}
	e.harness.ledger = e.ledger
	e.renames = v.renames
	e.approver = evidence.ChangeApprover(v.gh.reviews(), v.gh.author(), m.Candidate)
	v.e = e
	v.onExit(e.release)
}

// closeSandbox closes the sandbox once the terminal statement has looked
// for every container, and says what it observed.
func (v *verification) closeSandbox() []evidence.CleanupResource { return closeAndObserve(v.sb) }

// connectSandbox reaches containerd (or starts a private one, a few hundred
// ms) and starts the shared shim: it needs nothing from Discovery, so it
// runs while Discovery does. The connection is handed over as soon as
// containerd answers; the shim keeps starting while the sweeps and the
// commits' layers are made (the first task waits for it, and Close for
// anything it started).
func connectSandbox(ctx context.Context, o VerifyOptions) *pending[connection] {
	return async(func() connection {
		sb, err := sandbox.Connect(ctx, sandbox.Options{Address: o.ContainerdAddress, StateDir: filepath.Join(o.StateDir, "sandbox")})
		if err == nil {
			go sb.Warm(ctx)
		}
		return connection{sb, err}
	})
}

// connection is the outcome of sandbox.Connect.
type connection struct {
	sb  *sandbox.Sandbox
	err error
}
