package github

import (
	"context"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/rmerr"
)

// MaxAnnotationsPerRequest is the Checks API's limit: "a maximum of 50
// annotations per API request"; more are added by updating the run.
const MaxAnnotationsPerRequest = 50

// Annotation is one line-anchored note on a check run.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	// Level is "failure", "warning" or "notice".
	Level   string
	Title   string
	Message string
}

// CheckRunReport is a completed check run as runmill reports it.
type CheckRunReport struct {
	Name    string
	HeadSHA string
	// Conclusion is "success" or "failure".
	Conclusion  string
	Title       string
	Summary     string
	DetailsURL  string
	Annotations []Annotation
	StartedAt   time.Time
}

// CreateCheckRun creates a completed check run on r.HeadSHA and attaches
// its annotations in batches of 50 (one create, then one update per further
// batch). It needs checks: write, which fork pull requests do not get; the
// caller makes it optional. It returns the check run's id.
func (c *Client) CreateCheckRun(ctx context.Context, owner, repo string, r CheckRunReport) (int64, error) {
	if r.Name == "" || r.HeadSHA == "" || (r.Conclusion != "success" && r.Conclusion != "failure") {
		return 0, rmerr.New(rmerr.GitHubOptions, "a check run needs a name, a head SHA and a success or failure conclusion")
	}
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	batches := [][]Annotation{nil}
	for i := 0; i < len(r.Annotations); i += MaxAnnotationsPerRequest {
		j := min(i+MaxAnnotationsPerRequest, len(r.Annotations))
		if i == 0 {
			batches[0] = r.Annotations[:j]
		} else {
			batches = append(batches, r.Annotations[i:j])
		}
	}
	output := func(as []Annotation) *gh.CheckRunOutput {
		o := &gh.CheckRunOutput{Title: gh.String(r.Title), Summary: gh.String(r.Summary)}
		for _, a := range as {
			o.Annotations = append(o.Annotations, &gh.CheckRunAnnotation{
				Path: gh.String(a.Path), StartLine: gh.Int(a.StartLine), EndLine: gh.Int(max(a.EndLine, a.StartLine)),
				AnnotationLevel: gh.String(a.Level), Title: gh.String(a.Title), Message: gh.String(a.Message),
			})
		}
		return o
	}
	now := gh.Timestamp{Time: c.clock.Now().UTC()}
	opts := gh.CreateCheckRunOptions{
		Name: r.Name, HeadSHA: r.HeadSHA, Status: gh.String("completed"), Conclusion: gh.String(r.Conclusion),
		CompletedAt: &now, Output: output(batches[0]),
	}
	if !r.StartedAt.IsZero() {
		opts.StartedAt = &gh.Timestamp{Time: r.StartedAt.UTC()}
	}
	if r.DetailsURL != "" {
		opts.DetailsURL = gh.String(r.DetailsURL)
	}
	cr, _, err := c.gh.Checks.CreateCheckRun(ctx, owner, repo, opts)
	if err != nil {
		return 0, apiError(err, "creating check run %q on %s", r.Name, r.HeadSHA)
	}
	for _, b := range batches[1:] {
		if _, _, err := c.gh.Checks.UpdateCheckRun(ctx, owner, repo, cr.GetID(), gh.UpdateCheckRunOptions{Name: r.Name, Output: output(b)}); err != nil {
			return cr.GetID(), apiError(err, "adding annotations to check run %d", cr.GetID())
		}
	}
	return cr.GetID(), nil
}
