package engine

import (
	"context"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/discovery"
)

// prepareDepsAsync starts preparing the run's dependencies (prepareDeps);
// e.deps is set when e.depsReady closes. Check runs that declare
// dependencies wait for it; the others, and the probe, do not.
func (e *executor) prepareDepsAsync(ctx context.Context, repo *git.Repo, m *discovery.Manifest, candidate string, op *discovery.OperatorPolicy, stateDir string) {
	e.depsReady = make(chan struct{})
	go func() {
		defer close(e.depsReady)
		// Copy-on-write views need what layered checkouts proved: runmill
		// may mount, and containerd sees its mounts (deps/cow.go).
		e.deps = prepareDeps(ctx, repo, m, candidate, op, stateDir, e.checkouts.Dir(), e.checkouts.Layered(), e.logf, e.event)
	}()
}

// release lets go of the cache entries the run held — prepared
// dependencies and toolchain caches — once no check run uses them. An
// import still under way (the run ended before waiting for it) keeps its
// entries until the process ends.
func (e *executor) release() {
	if e.depsReady != nil {
		select {
		case <-e.depsReady:
			e.deps.Close()
		default:
		}
	}
	e.goCaches.release()
}

// prepareDeps runs deps.Prepare for the strategies the manifest's runnable
// checks declare. A refusal is not a run error: each check of that strategy
// records it (RM-VERIFY-005) and fails without running.
func prepareDeps(ctx context.Context, repo *git.Repo, m *discovery.Manifest, candidate string, op *discovery.OperatorPolicy, stateDir, scratchDir string, cow bool, logf func(string, ...any), event func(string, any)) *deps.Prepared {
	var strategies []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Dependencies != "" {
			strategies = append(strategies, c.Dependencies)
		}
	}
	if len(strategies) == 0 {
		return nil
	}
	do := deps.Options{SourceDir: repo.Dir, StateDir: stateDir, ScratchDir: scratchDir, Base: m.Base, Candidate: candidate, CopyOnWrite: cow}
	if op != nil {
		g := op.Doc.Dependencies.GoModules
		do.Go = deps.GoOptions{ModuleCache: g.ModuleCache, BuildCache: g.BuildCache, AllowAdditions: g.AllowAdditions}
		do.Cargo = deps.CargoOptions{Registry: op.Doc.Dependencies.Cargo.Registry}
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
