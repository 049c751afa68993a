package github

import (
	"context"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/rmerr"
)

// PullRequest is what the API says about one pull request: the facts a
// delivery statement binds (repository name and numeric id, number, head,
// base) and its reviews. Both `runmill verify` and `runmill evidence expect`
// read it here, each for itself, so the two observations agree only when
// GitHub said the same thing to both.
type PullRequest struct {
	// Repository is the base repository's "owner/name" as GitHub spells it.
	Repository string
	// RepositoryID is GitHub's numeric id of the base repository, which
	// survives renames and transfers.
	RepositoryID int64
	Number       int64
	Head, Base   string // commit ids
	// BaseRef is the branch the pull request targets: its protection and
	// rulesets name the required contexts.
	BaseRef string
	// Author is the login of the user who opened the pull request: the
	// one whose approval does not count for the change's own declared
	// skips (issue 24).
	Author  string
	Reviews []Review
}

// Review is one submitted review: state in lower case ("approved",
// "changes_requested", "commented", "dismissed") and the commit it was
// submitted on.
type Review struct {
	Reviewer string
	State    string
	Commit   string
}

// reviewStates maps GitHub's submitted review states. PENDING is a draft
// only its author sees; it is no review yet.
var reviewStates = map[string]string{
	"APPROVED":          "approved",
	"CHANGES_REQUESTED": "changes_requested",
	"COMMENTED":         "commented",
	"DISMISSED":         "dismissed",
}

// PullRequest reads pull request number of owner/repo and all its reviews
// (paginated).
func (c *Client) PullRequest(ctx context.Context, owner, repo string, number int64) (PullRequest, error) {
	if number <= 0 {
		return PullRequest{}, rmerr.New(rmerr.GitHubOptions, "pull request number %d is not positive", number)
	}
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	pr, _, err := c.gh.PullRequests.Get(ctx, owner, repo, int(number))
	if err != nil {
		return PullRequest{}, apiError(err, "reading pull request %s/%s#%d", owner, repo, number)
	}
	base, head := pr.GetBase(), pr.GetHead()
	out := PullRequest{
		Repository:   base.GetRepo().GetFullName(),
		RepositoryID: base.GetRepo().GetID(),
		Number:       int64(pr.GetNumber()),
		Head:         head.GetSHA(),
		Base:         base.GetSHA(),
		BaseRef:      base.GetRef(),
		Author:       pr.GetUser().GetLogin(),
		Reviews:      []Review{},
	}
	if out.Repository == "" || out.RepositoryID <= 0 || out.Head == "" || out.Base == "" || out.BaseRef == "" || out.Number != number {
		return PullRequest{}, rmerr.New(rmerr.GitHubAPI, "the answer for pull request %s/%s#%d lacks its repository, number, head or base", owner, repo, number)
	}
	opts := &gh.ListOptions{PerPage: 100}
	for {
		page, resp, err := c.gh.PullRequests.ListReviews(ctx, owner, repo, int(number), opts)
		if err != nil {
			return PullRequest{}, apiError(err, "listing reviews of %s/%s#%d", owner, repo, number)
		}
		for _, r := range page {
			state, ok := reviewStates[strings.ToUpper(r.GetState())]
			if !ok || r.GetCommitID() == "" {
				continue
			}
			who := r.GetUser().GetLogin()
			if who == "" {
				// GitHub shows a deleted account as "ghost".
				who = "ghost"
			}
			out.Reviews = append(out.Reviews, Review{Reviewer: who, State: state, Commit: r.GetCommitID()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Repository returns owner/repo's full name as GitHub spells it and its
// numeric id, for runs outside a pull request.
func (c *Client) Repository(ctx context.Context, owner, repo string) (string, int64, error) {
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return "", 0, apiError(err, "reading repository %s/%s", owner, repo)
	}
	if r.GetFullName() == "" || r.GetID() <= 0 {
		return "", 0, rmerr.New(rmerr.GitHubAPI, "the answer for repository %s/%s lacks its name or id", owner, repo)
	}
	return r.GetFullName(), r.GetID(), nil
}

// SplitRepository splits "owner/name", refusing anything else.
func SplitRepository(s string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/ ") || strings.ContainsAny(owner, " ") {
		return "", "", rmerr.New(rmerr.GitHubOptions, "repository %q is not OWNER/NAME", s).
			WithHint("pass --github-repo OWNER/NAME, or set GITHUB_REPOSITORY")
	}
	return owner, name, nil
}
