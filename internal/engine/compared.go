package engine

import (
	"context"
	"strings"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
)

// comparison is the one answer to "which two commits does a verification
// compare" (issue 24, docs/outcome.md § The landing tree): baselines run
// at the base tip, candidate runs at the landing commit — the change as it
// would land there (git.Landing). Discovery's changed paths, preservation,
// the dependency diff and the harness all take their two sides from here,
// in Verify and in Expect alike, so a verifier derives the same pair.
//
// DESIGN.md's "baseline at the merge base" is superseded: a change tested
// against where it forked can miss a test the base gained since (the
// branch breaks it, the merge fails) and can delete a test the base fixed
// since (red at the fork, green at the tip). The merge base stays in the
// statement as information: where the change forked.
type comparison struct {
	head      string // the change's head commit
	baseline  string // the base tip: where baselines run
	mergeBase string // where the change forked (informational)
	landing   git.Landing
}

// candidate is the commit candidate runs check out: the landing commit,
// or the head when the landing merge conflicts — then nothing runs there
// (record.CheckRun.LandingConflicts) and its checkout only measures the
// change's own tree.
func (c comparison) candidate() string {
	if c.conflicts() != nil {
		return c.head
	}
	return c.landing.Commit
}

// conflicts are the paths the landing merge conflicted in (nil: it merged).
func (c comparison) conflicts() []string { return c.landing.Conflicts }

// changeSides are the two commits the change lies between — Discovery's
// changed paths and git's renames (through which a moved test keeps its
// authority): base tip → landing tree, the commits baselines and candidate
// runs measure. With a conflict there is no landing tree, and
// the change's own paths (merge base → candidate) still say which checks
// it requires, so the manifest names them beside the conflict.
func (c comparison) changeSides() (from, to string) {
	if c.conflicts() != nil {
		return c.mergeBase, c.head
	}
	return c.baseline, c.landing.Commit
}

// compareCommits computes the comparison of candidate on base.
func compareCommits(ctx context.Context, repo *git.Repo, base, candidate string) (comparison, error) {
	mb, err := repo.MergeBase(ctx, base, candidate)
	if err != nil {
		return comparison{}, err
	}
	l, err := repo.Landing(ctx, base, candidate)
	if err != nil {
		return comparison{}, err
	}
	return comparison{head: candidate, baseline: base, mergeBase: mb, landing: l}, nil
}

// record is the comparison as the statement binds it (evidence.Landing).
func (c comparison) record(baseRef string) evidence.Landing {
	l := c.landing
	return evidence.Landing{BaseRef: baseRef, Commit: l.Commit, GitTree: l.Tree, Merged: l.Merged, Behind: l.Behind,
		Conflicts: append([]string{}, l.Conflicts...)}
}

// baseRefName names the base as a person gave it: the pull request's
// target branch when GitHub was consulted, else the --base revision unless
// it is a commit id (then "": a commit id names nothing new). Verify and
// Expect derive it the same way.
func baseRefName(pr *github.PullRequest, base string) string {
	if pr != nil {
		return pr.BaseRef
	}
	if objectid.Valid(strings.ToLower(base)) || !git.ValidRevision(base) {
		return ""
	}
	return base
}

// baseRef is baseRefName of this run.
func (v *verification) baseRef() string { return baseRefName(v.gh.pullRequest(), v.o.Discover.Base) }

// pullRequest is the pull request GitHub reported (nil outside one, or
// when GitHub was not consulted).
func (f *githubFacts) pullRequest() *github.PullRequest {
	if f == nil {
		return nil
	}
	return f.pr
}
