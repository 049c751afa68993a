package engine

import (
	"slices"
	"testing"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/rmerr"
)

// TestGitHubFindings: which facts of the GitHub sources become verdict
// inputs, and which are only recorded.
func TestGitHubFindings(t *testing.T) {
	const cand, other = "cccccccccccccccccccccccccccccccccccccccc", "dddddddddddddddddddddddddddddddddddddddd"
	unknown := []discovery.UnknownSource{{Name: github.SourceRulesets, Reason: "HTTP 403"}}
	pr := &githubFacts{pr: &github.PullRequest{Number: 42, Head: cand}}
	moved := &githubFacts{pr: &github.PullRequest{Number: 42, Head: other}}
	for _, tc := range []struct {
		name     string
		gh       discovery.GitHub
		required bool
		facts    *githubFacts
		want     []string // Rule|Code
	}{
		{"not consulted, not required: recorded only", discovery.GitHub{}, false, nil, nil},
		{"not consulted, required", discovery.GitHub{}, true, nil, []string{RuleGitHubNotConsulted + "|" + string(rmerr.GitHubNotConsulted)}},
		{"unknown, not required: recorded only", discovery.GitHub{Consulted: true, Unknown: unknown}, false, pr, nil},
		{"unknown, required", discovery.GitHub{Consulted: true, Unknown: unknown}, true, pr, []string{RuleGitHubUnknown + "|" + string(rmerr.GitHubNotConsulted)}},
		{"consulted and known", discovery.GitHub{Consulted: true}, true, pr, nil},
		{"pull request head moved on", discovery.GitHub{Consulted: true}, false, moved, []string{RuleGitHubHeadMoved + "|"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &discovery.Manifest{Candidate: cand, GitHub: tc.gh}
			var got []string
			for _, f := range githubFindings(m, tc.required, tc.facts) {
				got = append(got, f.Rule+"|"+string(f.Code))
				if f.Hint == "" {
					t.Errorf("finding %s says not what to do", f.Rule)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("findings %v; want %v", got, tc.want)
			}
		})
	}
}

// TestApprovals: an expectations document lists each approval once,
// sorted; other review states are not approvals.
func TestApprovals(t *testing.T) {
	f := &githubFacts{pr: &github.PullRequest{Reviews: []github.Review{
		{Reviewer: "b", State: "approved", Commit: "2"}, {Reviewer: "a", State: "approved", Commit: "1"},
		{Reviewer: "b", State: "approved", Commit: "2"}, {Reviewer: "c", State: "commented", Commit: "1"},
		{Reviewer: "d", State: "dismissed", Commit: "1"},
	}}}
	got := f.approvals()
	if len(got) != 2 || got[0].Reviewer != "a" || got[1].Reviewer != "b" {
		t.Fatalf("approvals %+v", got)
	}
	var none *githubFacts
	if len(none.approvals()) != 0 || len(none.reviews()) != 0 {
		t.Fatal("no GitHub facts must mean no reviews")
	}
}
