package github

import (
	"context"
	"io"
	"net/http"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/rmerr"
)

// Artifact is one workflow-run artifact.
type Artifact struct {
	ID        int64
	Name      string
	Size      int64
	Expired   bool
	CreatedAt time.Time
}

// RunArtifacts lists every artifact of workflow run runID (paginated).
func (c *Client) RunArtifacts(ctx context.Context, owner, repo string, runID int64) ([]Artifact, error) {
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	var out []Artifact
	opts := &gh.ListOptions{PerPage: 100}
	for {
		page, resp, err := c.gh.Actions.ListWorkflowRunArtifacts(ctx, owner, repo, runID, opts)
		if err != nil {
			return nil, apiError(err, "listing the artifacts of run %d of %s/%s", runID, owner, repo)
		}
		for _, a := range page.Artifacts {
			if a == nil {
				continue
			}
			out = append(out, Artifact{ID: a.GetID(), Name: a.GetName(), Size: a.GetSizeInBytes(),
				Expired: a.GetExpired(), CreatedAt: a.GetCreatedAt().Time})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// PickArtifact chooses the artifact called name. A re-run attempt uploads
// another one under the same name; the most recent (highest id) counts, as
// for check runs. An expired one is an error, not "no evidence".
func PickArtifact(as []Artifact, name string) (Artifact, error) {
	var best Artifact
	for _, a := range as {
		if a.Name == name && a.ID > best.ID {
			best = a
		}
	}
	switch {
	case best.ID == 0:
		var names []string
		for _, a := range as {
			names = append(names, a.Name)
		}
		return best, rmerr.New(rmerr.GitHubArtifact, "the run has no artifact named %q (it has %q)", name, names).
			WithHint("pass --name with the action's artifact-name input, or check that the verify job uploaded its evidence")
	case best.Expired:
		return best, rmerr.New(rmerr.GitHubArtifact, "artifact %q (id %d) has expired", name, best.ID).
			WithHint("GitHub deletes artifacts after the repository's retention period; keep bundles elsewhere for longer")
	}
	return best, nil
}

// DownloadArtifact writes the zip archive of artifact id to w, at most max
// bytes (more is an RM-GITHUB-004 error, never a truncated archive). The API
// answers with a redirect to blob storage; that request carries no token.
func (c *Client) DownloadArtifact(ctx context.Context, owner, repo string, id int64, w io.Writer, max int64) (int64, error) {
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	u, _, err := c.gh.Actions.DownloadArtifact(ctx, owner, repo, id, 1)
	if err != nil {
		return 0, apiError(err, "asking for the archive of artifact %d of %s/%s", id, owner, repo)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return 0, rmerr.New(rmerr.GitHubArtifact, "artifact %d redirects to %q, not an http(s) URL", id, u.Redacted())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, apiError(err, "building the archive request of artifact %d", id)
	}
	resp, err := c.blob.Do(req)
	if err != nil {
		return 0, apiError(err, "downloading artifact %d", id)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, rmerr.New(rmerr.GitHubAPI, "downloading artifact %d: HTTP %d", id, resp.StatusCode)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
	if err != nil {
		return n, apiError(err, "downloading artifact %d", id)
	}
	if n > max {
		return n, rmerr.New(rmerr.GitHubArtifact, "artifact %d is larger than %d bytes", id, max).
			WithHint("an evidence artifact is a bundle and its artifacts; raise --max-bytes only for a run you trust to be that large")
	}
	return n, nil
}
