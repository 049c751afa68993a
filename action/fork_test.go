package action_test

import (
	"slices"
	"strings"
	"testing"
)

// TestForkPullRequest (issue 27 item 5): on a pull request from a fork
// GitHub gives the workflow no variables or secrets, so the inputs the
// workflow fills from vars.* and secrets.* arrive empty. The action names
// that cause and the safe patterns instead of a message about inputs, and
// fails closed where the empty input would make a green that proves
// nothing: a policy the workflow declares required, an unsigned shard, a
// merge without its trust document. The event is GitHub's pull_request
// payload (testdata/pull_request.json: the head is octocat/shop, a fork of
// octo-org/shop); "same repository" rewrites the head's repository.
func TestForkPullRequest(t *testing.T) {
	f := shop(t)
	const cause = "is empty because this is a pull request from the fork octocat/shop: GitHub gives pull_request workflows of forks no variables or secrets"
	for _, tc := range []struct {
		name     string
		sameRepo bool
		inputs   map[string]string
		want     string // an annotation's prefix; "" none but the denied sudo's
		started  bool   // runmill was started (the stub sudo denies it)
		output   string // the verify step's retention-days output, when started
	}{
		{"empty policy", false, map[string]string{}, "warning runmill (fork pull request): the policy input " + cause, true, ""},
		{"empty policy required", false, map[string]string{"policy-required": "true"}, "error runmill (RM-ACTIONS-003): the policy input " + cause, false, ""},
		{"policy given", false, map[string]string{"policy": "autonomy: pr-only", "policy-required": "true"}, "", true, ""},
		{"same repository, empty policy", true, map[string]string{}, "", true, ""},
		{"same repository, empty policy required", true, map[string]string{"policy-required": "true"},
			"error runmill (RM-ACTIONS-003): policy-required is true but policy and policy-file are empty", false, ""},
		{"unsigned shard", false, map[string]string{"shard": "1/2", "policy": "autonomy: pr-only"}, "error runmill (RM-ACTIONS-003): signing-key " + cause, false, ""},
		{"same repository, unsigned shard", true, map[string]string{"shard": "1/2"}, "error runmill (RM-ACTIONS-003): a shard job needs signing-key", false, ""},
		{"signed shard keeps 1 day", false, map[string]string{"shard": "1/2", "signing-key": "PEM", "policy": "autonomy: pr-only"}, "", true, "1"},
		{"retention-days", false, map[string]string{"retention-days": "30", "policy": "autonomy: pr-only"}, "", true, "30"},
		{"merge without trust", false, map[string]string{"merge": "true", "shards-dir": "shards"}, "error runmill (RM-ACTIONS-003): the trust input " + cause, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.inputs["github-token"] = ""
			j := newJob(t, f, "pull_request", f.good, tc.inputs)
			if tc.sameRepo {
				head := j.event["pull_request"].(map[string]any)["head"].(map[string]any)
				head["repo"].(map[string]any)["full_name"] = "octo-org/shop"
			}
			r := verifyAlone(t, j)
			own := slices.DeleteFunc(slices.Clone(r.Annotations), func(a string) bool {
				return !strings.HasPrefix(a, "warning runmill (") && !strings.HasPrefix(a, "error runmill (RM-ACTIONS-003)")
			})
			if tc.want == "" && len(own) > 0 {
				t.Errorf("annotations %q, want none of the action's", own)
			}
			if tc.want != "" && !slices.ContainsFunc(own, func(a string) bool { return strings.HasPrefix(a, tc.want) }) {
				t.Errorf("annotations %q lack %q:\n%s", r.Annotations, tc.want, r.Log)
			}
			if strings.Contains(tc.want, cause) && !strings.Contains(r.Log, "pull_request_target with the base checked out") {
				t.Errorf("the fork's cause names no safe pattern:\n%s", r.Log)
			}
			if started := strings.Contains(j.sudoLog(), " verify --github-actions") || strings.Contains(j.sudoLog(), " evidence merge "); started != tc.started {
				t.Errorf("runmill started %v, want %v:\n%s\n%s", started, tc.started, j.sudoLog(), r.Log)
			}
			if tc.started && r.Outputs["retention-days"] != tc.output {
				t.Errorf("retention-days output %q, want %q", r.Outputs["retention-days"], tc.output)
			}
		})
	}
}
