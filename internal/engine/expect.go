package engine

import (
	"context"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
)

// ExpectOptions name what a verifier host observes for itself.
type ExpectOptions struct {
	Discover    DiscoverOptions // ProposalsFile is ignored: proposals are claims, not observations
	StateDir    string          // for the fresh checkout that measures the candidate tree
	Repository  string          // "owner/name"; the directory's base name when empty
	PullRequest int64
	// GitHub, when set, observes the repository id, the pull request's head,
	// base and reviews and the required contexts from the API — the same
	// observation Verify makes, made again by the verifier host.
	GitHub *GitHubOptions
}

// expectGitHub observes GitHub for Expect and fills o's revisions from the
// pull request where the caller gave none; a revision the caller gave must
// be the one the pull request names.
func expectGitHub(ctx context.Context, o *ExpectOptions, repo *git.Repo) (*githubFacts, error) {
	if o.GitHub == nil {
		return nil, nil
	}
	f, err := observeGitHub(ctx, o.GitHub)
	if err != nil {
		return nil, err
	}
	if f.pr != nil {
		for _, r := range []struct {
			flag string
			rev  *string
			want string
		}{{"--candidate", &o.Discover.Candidate, f.pr.Head}, {"--base", &o.Discover.Base, f.pr.Base}} {
			if *r.rev == "" {
				*r.rev = r.want
				continue
			}
			got, err := repo.ResolveCommit(ctx, *r.rev, r.flag)
			if err != nil {
				return nil, err
			}
			if got != r.want {
				return nil, rmerr.New(rmerr.GitHubOptions, "%s %s is %s, but pull request #%d says %s", r.flag, *r.rev, got, f.pr.Number, r.want).
					WithHint("leave %s out to take it from the pull request, or fetch the pull request's current commits", r.flag)
			}
		}
	}
	f.apply(&o.Discover, o.GitHub.Exclude)
	return f, nil
}

// Expect builds a delivery expectations document from independent
// observation: git for the commits, Discovery over the base policy for the
// required set, and a fresh checkout for the candidate tree — never from a
// bundle (spec § Portable signed-bundle verification).
func Expect(ctx context.Context, o ExpectOptions) (*evidence.Expectations, error) {
	o.Discover.ProposalsFile = ""
	repo, err := git.Open(ctx, o.Discover.RepoDir)
	if err != nil {
		return nil, err
	}
	gh, err := expectGitHub(ctx, &o, repo)
	if err != nil {
		return nil, err
	}
	m, _, cmp, err := discoverIn(ctx, repo, o.Discover)
	if err != nil {
		return nil, err
	}
	checkouts, err := checkout.NewManager(ctx, repo.Dir, o.StateDir)
	if err != nil {
		return nil, err
	}
	checkouts.MeasureWith(repo)
	defer checkouts.Close(context.Background())
	h := newHarnesses(repo, checkouts, m)
	if err := admitHarnesses(ctx, h, m, cmp.baseline, nil); err != nil {
		return nil, err
	}
	co, err := checkouts.Create(ctx, cmp.candidate())
	if err != nil {
		return nil, err
	}
	defer co.Remove()
	tree, _, err := treehash.Sum(ctx, co.Dir, treehash.Options{})
	if err != nil {
		return nil, err
	}
	e := &evidence.Expectations{
		Schema:         evidence.ExpectationsSchema,
		Repository:     evidence.Repository{Name: repoName(o.Repository, repo.Dir)},
		PullRequest:    o.PullRequest,
		Head:           m.Candidate,
		Base:           m.Base,
		MergeBase:      cmp.mergeBase,
		Landing:        cmp.record(baseRefName(gh.pullRequest(), o.Discover.Base)),
		CandidateTree:  tree.String(),
		Policy:         evidence.PolicyExpectation{ReadFrom: m.ReadFrom},
		RequiredChecks: []string{},
		Reviews:        evidence.ReviewExpectation{Approvals: gh.approvals()},
		Author:         gh.author(),
		// Issue 24: the change's own declared skips and the operator's
		// rule for them, from this host's Discovery; the renames from git.
		ChangeDeclarations: evidence.ChangeDeclarations(m),
	}
	e.Policy.ChangeDeclarations = m.ChangeDeclarations
	baseline, candidate := cmp.changeSides()
	if e.Renames, err = changeRenames(ctx, repo, baseline, candidate); err != nil {
		return nil, err
	}
	if gh != nil {
		e.Repository = gh.repo
	}
	if e.Harness, err = expectHarness(ctx, h, m, cmp, e.CandidateTree); err != nil {
		return nil, err
	}
	if m.Policies.Repository != nil {
		e.Policy.RepositoryDigest = m.Policies.Repository.Digest
	}
	if m.Policies.Operator != nil {
		e.Policy.OperatorDigest = m.Policies.Operator.Digest
	}
	for _, c := range m.Checks {
		if c.Required {
			e.RequiredChecks = append(e.RequiredChecks, c.ID)
		}
	}
	if e.Lockfiles, err = expectLockfiles(ctx, repo, cmp.candidate(), cmp.baseline); err != nil {
		return nil, err
	}
	return e, nil
}

// ExpectTerminal builds a terminal expectations document.
func ExpectTerminal(ctx context.Context, o ExpectOptions) (*evidence.TerminalExpectations, error) {
	repo, err := git.Open(ctx, o.Discover.RepoDir)
	if err != nil {
		return nil, err
	}
	gh, err := expectGitHub(ctx, &o, repo)
	if err != nil {
		return nil, err
	}
	head, err := repo.ResolveCommit(ctx, o.Discover.Candidate, "--candidate")
	if err != nil {
		return nil, err
	}
	base, err := repo.ResolveCommit(ctx, o.Discover.Base, "--base")
	if err != nil {
		return nil, err
	}
	name := evidence.Repository{Name: repoName(o.Repository, repo.Dir)}
	if gh != nil {
		name = gh.repo
	}
	return &evidence.TerminalExpectations{
		Schema:      evidence.TerminalExpectationsSchema,
		Repository:  name,
		PullRequest: o.PullRequest,
		Head:        head, Base: base,
	}, nil
}
