package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// discover is the first stage (spec § 1, Discovery): GitHub's required
// contexts and pull request facts when consulted, then the manifest from the
// base's policy, the operator's and the change, and the two commits the
// run compares (comparison: the base tip and the landing commit).
// The repository is opened here, once for the whole run. A run whose
// Discovery fails still ends with a terminal statement.
func (v *verification) discover(ctx context.Context) error {
	o := &v.o
	if o.GitHub != nil {
		gh, err := observeGitHub(ctx, o.GitHub)
		if err != nil {
			return err
		}
		gh.apply(&o.Discover, o.GitHub.Exclude)
		v.gh = gh
	}
	repo, err := git.Open(ctx, o.Discover.RepoDir)
	if err != nil {
		return v.discoveryFailed(ctx, nil, err)
	}
	if v.m, v.op, v.cmp, err = discoverIn(ctx, repo, o.Discover); err != nil {
		return v.discoveryFailed(ctx, repo, err)
	}
	v.repo = repo
	for _, u := range v.m.GitHub.Unknown {
		v.logf("GitHub %s: required contexts UNKNOWN (%s)", u.Name, u.Reason)
	}
	// The baseline's and the landing commit's trees are checked out too:
	// held to the same limits.
	for _, c := range []string{v.cmp.baseline, v.cmp.candidate()} {
		if _, err := repo.TreeSize(ctx, c); err != nil {
			return v.discoveryFailed(ctx, repo, err)
		}
	}
	if line := explain.LandingLine(evidence.Candidate{Base: v.m.Base, Landing: v.cmp.record(v.baseRef())}); line != "" {
		v.logf("%s", line)
	}
	baseline, candidate := v.cmp.changeSides()
	v.renames = async(func() renamesResult {
		r, err := changeRenames(ctx, repo, baseline, candidate)
		return renamesResult{r, err}
	})
	return nil
}

// discoveryFailed hands the containerd connection to discoveryFailedTerminal, which
// closes it, and returns the failure.
func (v *verification) discoveryFailed(ctx context.Context, repo *git.Repo, failure error) error {
	if terr := discoveryFailedTerminal(ctx, v.o, repo, v.claim(ctx), failure, v.logf); terr != nil {
		v.logf("%v", terr)
	}
	return failure
}

// discoveryFailedTerminal ends a run whose Discovery failed (an unreadable or
// invalid policy, RM-VERIFY-004, a bad proposal) with a terminal statement
// like any other run without a verdict: the failure, and the sandbox
// connection observed closed. A statement needs a subject, so this is done
// only when both revisions name commits; otherwise there is no candidate to
// speak about and the error alone is the answer. repo is nil when the
// repository did not open.
func discoveryFailedTerminal(ctx context.Context, o VerifyOptions, repo *git.Repo, conn connection, failure error, logf func(string, ...any)) error {
	// A cancelled run (SIGTERM) still writes what it can: its own bounded
	// context, not the cancelled one.
	cancelled := context.Cause(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), terminalTimeout)
	defer cancel()
	var closeSandbox func() []evidence.CleanupResource
	var gone goneChecker
	if conn.sb != nil {
		closeSandbox, gone = func() []evidence.CleanupResource { return closeAndObserve(conn.sb) }, conn.sb
		defer conn.sb.Close() // idempotent; closes it when no statement is written
	}
	if repo == nil { // the repository did not open
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
	if cancelled != nil {
		_ = chain.Append(o.Now(), "run.cancelled", map[string]any{"cause": cancelled.Error()})
	}
	tc := evidence.TerminalCandidate{Repository: evidence.Repository{Name: repoName(o.Repository, repo.Dir)},
		PullRequest: o.PullRequest, Head: cand, Base: base}
	if err := writeTerminal(ctx, run, o, &chain, &ledger{}, gone, closeSandbox, "no-verdict", "", tc); err != nil {
		return fmt.Errorf("writing the terminal statement: %w", err)
	}
	logf("run %s: no verdict (Discovery failed); terminal statement in %s", run.ID, run.Dir)
	return nil
}
