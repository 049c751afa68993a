package github

import (
	"context"
	"errors"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/rmerr"
)

// maxCommentPages bounds the listing a sticky comment is looked for in:
// 100 comments a page, so a pull request with more than 3000 comments
// gets a new one rather than a listing without end.
const maxCommentPages = 30

// StickyComment creates the pull request's (issue's) comment whose body
// starts with marker, or updates it in place when there is one: a bot's
// comment (GITHUB_TOKEN comments as github-actions[bot]), never one a
// person wrote, which anyone could start with the marker. It needs
// pull-requests: write (or issues: write); a fork's pull_request token is
// read-only, which ReadOnly tells apart. It returns the comment's id and
// whether it was created.
func (c *Client) StickyComment(ctx context.Context, owner, repo string, number int64, marker, body string) (int64, bool, error) {
	if number <= 0 || marker == "" || !strings.HasPrefix(body, marker) {
		return 0, false, rmerr.New(rmerr.GitHubOptions, "a sticky comment needs a pull request number and a body that starts with its marker")
	}
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var found int64
	for page := 1; page <= maxCommentPages && found == 0; page++ {
		opts.Page = page
		cs, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, int(number), opts)
		if err != nil {
			return 0, false, apiError(err, "listing the comments of pull request #%d", number)
		}
		for _, cm := range cs {
			if cm.GetUser().GetType() == "Bot" && strings.HasPrefix(cm.GetBody(), marker) {
				found = cm.GetID()
				break
			}
		}
		if resp.NextPage == 0 {
			break
		}
	}
	if found != 0 {
		if _, _, err := c.gh.Issues.EditComment(ctx, owner, repo, found, &gh.IssueComment{Body: gh.String(body)}); err != nil {
			return found, false, apiError(err, "updating comment %d on pull request #%d", found, number)
		}
		return found, false, nil
	}
	cm, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, int(number), &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return 0, false, apiError(err, "commenting on pull request #%d", number)
	}
	return cm.GetID(), true, nil
}

// ReadOnly reports whether err is GitHub refusing a write for the token's
// permissions (403 "Resource not accessible by integration"): a fork's
// pull_request token, or a workflow without pull-requests: write.
func ReadOnly(err error) bool {
	var e *gh.ErrorResponse
	return errors.As(err, &e) && e.Response != nil && (e.Response.StatusCode == http.StatusForbidden || e.Response.StatusCode == http.StatusNotFound)
}
