package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/pkg/rmerr"
)

const (
	baseSHA = "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d"
	oldSHA  = "1111111111111111111111111111111111111111"
)

func TestPullRequest(t *testing.T) {
	f := newFake(t)
	f.Replace("{head}", headSHA)
	f.Replace("{base}", baseSHA)
	f.Replace("{old}", oldSHA)
	f.expect("/repos/acme/widget/pulls/42", "", 200, "pull_request.json")
	next := `<{base}/repos/acme/widget/pulls/42/reviews?per_page=100&page=2>; rel="next"`
	f.expect("/repos/acme/widget/pulls/42/reviews", "per_page=100", 200, "pull_reviews_page1.json", "Link", next)
	f.expect("/repos/acme/widget/pulls/42/reviews", "per_page=100&page=2", 200, "pull_reviews_page2.json")
	got, err := f.client(t, newClock()).PullRequest(context.Background(), owner, repo, 42)
	if err != nil {
		t.Fatal(err)
	}
	// The PENDING draft is nobody's review yet; every submitted one is kept
	// with the commit it was submitted on.
	want := github.PullRequest{Repository: "acme/widget", RepositoryID: 702187311, Number: 42, Head: headSHA, Base: baseSHA, BaseRef: "main", Author: "octocat",
		Reviews: []github.Review{
			{Reviewer: "hubot", State: "approved", Commit: oldSHA},
			{Reviewer: "monalisa", State: "changes_requested", Commit: oldSHA},
			{Reviewer: "monalisa", State: "approved", Commit: headSHA},
			{Reviewer: "octodog", State: "commented", Commit: headSHA},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestPullRequestNotFoundIsAnError(t *testing.T) {
	f := newFake(t)
	f.expect("/repos/acme/widget/pulls/7", "", 404, "error_404.json")
	if _, err := f.client(t, newClock()).PullRequest(context.Background(), owner, repo, 7); rmerr.CodeOf(err) != rmerr.GitHubAPI {
		t.Fatalf("err = %v; want %s", err, rmerr.GitHubAPI)
	}
}

func TestRepository(t *testing.T) {
	f := newFake(t)
	f.expect("/repos/acme/widget", "", 200, "repository.json")
	name, id, err := f.client(t, newClock()).Repository(context.Background(), owner, repo)
	if err != nil || name != "acme/widget" || id != 702187311 {
		t.Fatalf("Repository = %q, %d, %v", name, id, err)
	}
}

func TestSplitRepository(t *testing.T) {
	for in, ok := range map[string]bool{"acme/widget": true, "acme": false, "/widget": false, "acme/": false, "a/b/c": false, "": false} {
		_, _, err := github.SplitRepository(in)
		if (err == nil) != ok {
			t.Errorf("SplitRepository(%q) = %v; want ok %v", in, err, ok)
		}
	}
}

func TestRunArtifactsAndDownload(t *testing.T) {
	f := newFake(t)
	list := "/repos/acme/widget/actions/runs/12099218311/artifacts"
	f.expect(list, "per_page=100", 200, "artifacts_page1.json", "Link", `<{base}`+list+`?per_page=100&page=2>; rel="next"`)
	f.expect(list, "per_page=100&page=2", 200, "artifacts_page2.json")
	c := f.client(t, newClock())
	as, err := c.RunArtifacts(context.Background(), owner, repo, 12099218311)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Fatalf("%d artifacts over two pages; want 3", len(as))
	}
	// A re-run uploads another artifact of the same name: the newest counts.
	a, err := github.PickArtifact(as, "runmill-evidence")
	if err != nil || a.ID != 2046398733 {
		t.Fatalf("PickArtifact = %+v, %v; want id 2046398733", a, err)
	}
	if _, err := github.PickArtifact(as, "nope"); rmerr.CodeOf(err) != rmerr.GitHubArtifact {
		t.Fatalf("missing artifact: %v", err)
	}
	// The API redirects to blob storage, which must never see the token.
	f.expect("/repos/acme/widget/actions/artifacts/2046398733/zip", "", 302, "", "Location", "{base}/blob/artifact.zip?sig=abc")
	f.Add(githubtest.Exchange{Path: "/blob/artifact.zip", Query: "sig=abc", Status: 200, Body: []byte("PK-zip-bytes"), NoAuth: true})
	var buf bytes.Buffer
	if n, err := c.DownloadArtifact(context.Background(), owner, repo, a.ID, &buf, 1<<20); err != nil || n != 12 || buf.String() != "PK-zip-bytes" {
		t.Fatalf("DownloadArtifact = %d, %q, %v", n, buf.String(), err)
	}
	// One byte over the cap is an error, not a truncated archive.
	f.expect("/repos/acme/widget/actions/artifacts/2046398733/zip", "", 302, "", "Location", "{base}/blob/artifact.zip?sig=abc")
	f.Add(githubtest.Exchange{Path: "/blob/artifact.zip", Query: "sig=abc", Status: 200, Body: []byte("PK-zip-bytes"), NoAuth: true})
	buf.Reset()
	if _, err := c.DownloadArtifact(context.Background(), owner, repo, a.ID, &buf, 11); rmerr.CodeOf(err) != rmerr.GitHubArtifact {
		t.Fatalf("over the cap: %v", err)
	}
}

func TestExpiredArtifact(t *testing.T) {
	f := newFake(t)
	f.expect("/repos/acme/widget/actions/runs/9099218311/artifacts", "per_page=100", 200, "artifacts_expired.json")
	as, err := f.client(t, newClock()).RunArtifacts(context.Background(), owner, repo, 9099218311)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := github.PickArtifact(as, "runmill-evidence"); rmerr.CodeOf(err) != rmerr.GitHubArtifact || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired artifact: %v", err)
	}
}

// TestCheckRunAnnotationBatches: 120 annotations go out as 50 with the
// create, then 50 and 20 in two updates; a secondary rate limit on the
// create resends the same body.
func TestCheckRunAnnotationBatches(t *testing.T) {
	f := newFake(t)
	var anns []github.Annotation
	for i := range 120 {
		anns = append(anns, github.Annotation{Path: "x_test.go", StartLine: i + 1, Level: "failure", Title: "t", Message: "m"})
	}
	batch := func(method string, first int, n int) func(t testing.TB, body []byte) {
		return func(t testing.TB, body []byte) {
			var b struct {
				Name       string `json:"name"`
				HeadSHA    string `json:"head_sha"`
				Conclusion string `json:"conclusion"`
				Output     struct {
					Title       string `json:"title"`
					Annotations []struct {
						StartLine int `json:"start_line"`
					} `json:"annotations"`
				} `json:"output"`
			}
			if err := json.Unmarshal(body, &b); err != nil {
				t.Errorf("%s body: %v", method, err)
				return
			}
			if len(b.Output.Annotations) != n || b.Output.Annotations[0].StartLine != first+1 || b.Name != "runmill" || b.Output.Title == "" {
				t.Errorf("%s: %d annotations from line %d (name %q); want %d from %d", method, len(b.Output.Annotations), b.Output.Annotations[0].StartLine, b.Name, n, first+1)
			}
			if method == http.MethodPost && (b.HeadSHA != headSHA || b.Conclusion != "failure") {
				t.Errorf("create: head %q conclusion %q", b.HeadSHA, b.Conclusion)
			}
		}
	}
	runs := "/repos/acme/widget/check-runs"
	f.Add(githubtest.Exchange{Method: http.MethodPost, Path: runs, Status: 403, File: "error_secondary_rate_limit.json",
		Header: map[string]string{"Retry-After": "5"}, Check: batch(http.MethodPost, 0, 50)})
	f.Add(githubtest.Exchange{Method: http.MethodPost, Path: runs, Status: 201, File: "check_run_created.json", Check: batch(http.MethodPost, 0, 50)})
	f.Add(githubtest.Exchange{Method: http.MethodPatch, Path: runs + "/31870456810", Status: 200, File: "check_run_created.json", Check: batch(http.MethodPatch, 50, 50)})
	f.Add(githubtest.Exchange{Method: http.MethodPatch, Path: runs + "/31870456810", Status: 200, File: "check_run_created.json", Check: batch(http.MethodPatch, 100, 20)})
	id, err := f.client(t, newClock()).CreateCheckRun(context.Background(), owner, repo, github.CheckRunReport{
		Name: "runmill", HeadSHA: headSHA, Conclusion: "failure", Title: "runmill: not merge-ready", Summary: "s", Annotations: anns})
	if err != nil || id != 31870456810 {
		t.Fatalf("CreateCheckRun = %d, %v", id, err)
	}
}

// A 5xx on a write is not resent: the run may exist already.
func TestCheckRunNotResentAfter5xx(t *testing.T) {
	f := newFake(t)
	f.Add(githubtest.Exchange{Method: http.MethodPost, Path: "/repos/acme/widget/check-runs", Status: 502, File: "error_502.json"})
	_, err := f.client(t, newClock()).CreateCheckRun(context.Background(), owner, repo, github.CheckRunReport{
		Name: "runmill", HeadSHA: headSHA, Conclusion: "success", Title: "ok", Summary: "s"})
	if rmerr.CodeOf(err) != rmerr.GitHubAPI {
		t.Fatalf("err = %v; want %s", err, rmerr.GitHubAPI)
	}
}
