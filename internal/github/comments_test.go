package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/pkg/rmerr"
)

// TestStickyComment: the first run creates the comment; a later one finds
// the bot's comment by its marker, past a person's comment that starts
// with the same marker, and updates it in place; a read-only token (a
// fork's) is told apart.
func TestStickyComment(t *testing.T) {
	const marker = "<!-- runmill verify: runmill-evidence -->"
	const list, listQuery = "/repos/acme/widget/issues/42/comments", "per_page=100&page=1"
	body := func(want string) func(testing.TB, []byte) {
		return func(t testing.TB, b []byte) {
			var c struct{ Body string }
			if err := json.Unmarshal(b, &c); err != nil || c.Body != want {
				t.Errorf("request body %s (%v); want the body %q", b, err, want)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		exchange []githubtest.Exchange
		id       int64
		created  bool
		readOnly bool
	}{
		{"first run creates", []githubtest.Exchange{
			{Path: list, Query: listQuery, Status: 200, File: "issue_comments_empty.json"},
			{Method: http.MethodPost, Path: list, Status: 201, File: "issue_comment.json", Check: body(marker + "\nfirst")},
		}, 2510000002, true, false},
		{"a later run updates the bot's comment", []githubtest.Exchange{
			{Path: list, Query: listQuery, Status: 200, File: "issue_comments_sticky.json"},
			{Method: http.MethodPatch, Path: "/repos/acme/widget/issues/comments/2510000002", Status: 200, File: "issue_comment.json", Check: body(marker + "\nfirst")},
		}, 2510000002, false, false},
		{"a fork's read-only token", []githubtest.Exchange{
			{Path: list, Query: listQuery, Status: 200, File: "issue_comments_empty.json"},
			{Method: http.MethodPost, Path: list, Status: 403, File: "error_403.json"},
		}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			for _, e := range tc.exchange {
				f.Add(e)
			}
			id, created, err := f.client(t, newClock()).StickyComment(context.Background(), owner, repo, 42, marker, marker+"\nfirst")
			if tc.readOnly {
				if !github.ReadOnly(err) || rmerr.CodeOf(err) != rmerr.GitHubAPI {
					t.Fatalf("err %v; want an RM-GITHUB-002 a read-only token explains", err)
				}
				return
			}
			if err != nil || id != tc.id || created != tc.created {
				t.Fatalf("StickyComment = %d, %v, %v; want %d, %v", id, created, err, tc.id, tc.created)
			}
		})
	}
	if _, _, err := newFake(t).client(t, newClock()).StickyComment(context.Background(), owner, repo, 42, marker, "no marker"); err == nil || !strings.Contains(err.Error(), "marker") {
		t.Errorf("a body without its marker: %v", err)
	}
}
