package evidence

import "testing"

// TestChangeApprover: who lets the change's own declared skips count — a
// reviewer other than the pull request's author whose latest deciding
// review approves its head; nobody outside a pull request.
func TestChangeApprover(t *testing.T) {
	head, old := fixHead, fixBase
	for _, tc := range []struct {
		name    string
		reviews []Review
		author  string
		want    string
	}{
		{"an approval on the head by another user", []Review{{"monalisa", "approved", head}}, "octocat", "monalisa"},
		{"the author's own approval", []Review{{"octocat", "approved", head}}, "octocat", ""},
		{"an approval of an older commit", []Review{{"monalisa", "approved", old}}, "octocat", ""},
		{"changes requested after approving", []Review{{"monalisa", "approved", head}, {"monalisa", "changes_requested", head}}, "octocat", ""},
		{"a dismissed approval", []Review{{"monalisa", "dismissed", head}}, "octocat", ""},
		{"a comment after approving decides nothing", []Review{{"monalisa", "approved", head}, {"monalisa", "commented", head}}, "octocat", "monalisa"},
		{"approving after requesting changes", []Review{{"hubot", "changes_requested", old}, {"hubot", "approved", head}}, "octocat", "hubot"},
		{"the first approver by name", []Review{{"zed", "approved", head}, {"amy", "approved", head}}, "octocat", "amy"},
		{"no pull request, no author", []Review{{"monalisa", "approved", head}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChangeApprover(tc.reviews, tc.author, head); got != tc.want {
				t.Errorf("approver %q, want %q", got, tc.want)
			}
		})
	}
}
