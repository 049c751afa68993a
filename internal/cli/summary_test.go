package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/githubtest"
)

// TestSummaryCommand renders a recorded run's job summary (the run of
// internal/actions' goldens) into --out and the step's files, then
// comments: created on a pull request without one, and on a fork's
// read-only token a warning, exit 0 — the verdict is the gate's.
func TestSummaryCommand(t *testing.T) {
	run := filepath.Join(t.TempDir(), "runs", "shop-bad")
	if err := os.CopyFS(run, os.DirFS(filepath.Join("..", "actions", "testdata", "shop-bad"))); err != nil {
		t.Fatal(err)
	}
	const comments = "/repos/octo-org/shop/issues/42/comments"
	for _, tc := range []struct {
		name   string
		status int
		file   string
		say    string
	}{
		{"created", 201, "issue_comment.json", "runmill: commented on pull request #42 (comment 2510000002)"},
		{"a fork's read-only token", 403, "error_403.json", "::warning title=runmill (no pull-request comment)::the token cannot write to pull request #42 (a fork's pull request gets a read-only token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := githubtest.New(t)
			api.Add(githubtest.Exchange{Path: comments, Query: "per_page=100&page=1", Status: 200, File: "issue_comments_empty.json"})
			api.Add(githubtest.Exchange{Method: "POST", Path: comments, Status: tc.status, File: tc.file, Check: func(t testing.TB, b []byte) {
				var c struct{ Body string }
				if err := json.Unmarshal(b, &c); err != nil || !strings.HasPrefix(c.Body, "<!-- runmill verify: runmill-evidence -->\n### ❌ runmill: not merge-ready") ||
					!strings.Contains(c.Body, "| at the candidate | 2 | 3 | 0 | 1 | 1 | 0 | 1 |") || !strings.Contains(c.Body, "- `unit: example.com/shop/cart::TestRejectsZeroQty`") {
					t.Errorf("comment body %q (%v)", c.Body, err)
				}
			}})
			dir := t.TempDir()
			for k, v := range map[string]string{
				"GITHUB_TOKEN": githubtest.Token, "GITHUB_API_URL": api.URL(), "GITHUB_REPOSITORY": "octo-org/shop", "GITHUB_EVENT_PATH": "",
				"GITHUB_OUTPUT": filepath.Join(dir, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
				"RUNMILL_ARTIFACT_NAME": "runmill-evidence", "RUNMILL_ARTIFACT_URL": "", "RUNMILL_ACTION_REPOSITORY": "", "RUNMILL_ACTION_REF": "",
			} {
				t.Setenv(k, v)
			}
			out := filepath.Join(dir, "summary.md")
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), []string{"summary", run, "--repo", dir, "--out", out, "--github-actions", "--comment", "--pr", "42"}, IO{Out: &stdout, Err: &stderr})
			if code != 0 || !strings.Contains(stderr.String(), tc.say) {
				t.Fatalf("exit %d; stderr lacks %q:\n%s", code, tc.say, stderr.String())
			}
			md, err := os.ReadFile(out)
			if err != nil || !strings.HasPrefix(string(md), "## ❌ runmill: not merge-ready") {
				t.Fatalf("--out: %v\n%s", err, md)
			}
			if step, _ := os.ReadFile(os.Getenv("GITHUB_STEP_SUMMARY")); string(step) != string(md)+"\n" {
				t.Errorf("the step summary is not the --out file:\n%s", step)
			}
			if o, _ := os.ReadFile(os.Getenv("GITHUB_OUTPUT")); !strings.Contains(string(o), "summary-path<<") || !strings.Contains(string(o), out) {
				t.Errorf("GITHUB_OUTPUT %q names no summary-path %s", o, out)
			}
		})
	}
}
