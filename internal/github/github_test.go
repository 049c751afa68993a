package github_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

func TestNewRefusesImpossibleOptions(t *testing.T) {
	run := func(t *testing.T, opts github.Options) {
		t.Helper()
		c, err := github.New(opts)
		if c != nil || rmerr.CodeOf(err) != rmerr.GitHubOptions {
			t.Fatalf("New(%+v) = %v, %v; want nil and %s", opts, c, err, rmerr.GitHubOptions)
		}
	}
	for name, opts := range map[string]github.Options{
		// Without a token runmill makes no GitHub call at all.
		"no token":       {BaseURL: "https://api.github.com"},
		"blank token":    {Token: "  "},
		"relative base":  {Token: "t", BaseURL: "api.github.com"},
		"ftp base":       {Token: "t", BaseURL: "ftp://api.github.com"},
		"negative retry": {Token: "t", RetryWindow: -time.Second},
	} {
		t.Run(name, func(t *testing.T) { run(t, opts) })
	}
	if _, err := github.New(github.Options{Token: "t"}); err != nil {
		t.Fatalf("New with a token: %v", err)
	}
}

func TestRequiredContexts(t *testing.T) {
	type tc struct {
		setup   func(f *fakeGitHub)
		want    github.Contexts
		wantErr rmerr.Code
	}
	protection := func(names ...string) github.Source {
		return github.Source{Name: github.SourceBranchProtection, Endpoint: "GET /repos/{owner}/{repo}/branches/{branch}", Known: true, Names: append([]string{}, names...)}
	}
	rulesets := func(names ...string) github.Source {
		return github.Source{Name: github.SourceRulesets, Endpoint: "GET /repos/{owner}/{repo}/rules/branches/{branch}", Known: true, Names: append([]string{}, names...)}
	}
	unknown := func(s github.Source, status int) github.Source {
		s.Known, s.Names = false, []string{}
		s.Reason = "HTTP " + strconv.Itoa(status) + ": the token cannot see this endpoint, so its required contexts are unknown"
		return s
	}
	run := func(t *testing.T, c tc) {
		t.Helper()
		f := newFake(t)
		c.setup(f)
		got, err := f.client(t, newClock()).RequiredContexts(context.Background(), owner, repo, "main")
		if c.wantErr != "" {
			if rmerr.CodeOf(err) != c.wantErr {
				t.Fatalf("err = %v; want %s", err, c.wantErr)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("got  %+v\nwant %+v", got, c.want)
		}
	}
	for name, c := range map[string]tc{
		"protection and rulesets": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 200, "branch_protected.json")
				f.expect(rulesPath, rulesQuery, 200, "rules_branch.json")
			},
			want: github.Contexts{Names: []string{"build", "lint", "test"}, Known: true,
				Sources: []github.Source{protection("build", "lint"), rulesets("build", "test")}},
		},
		"unprotected branch without rules is known and empty": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 200, "branch_unprotected.json")
				f.expect(rulesPath, rulesQuery, 200, "rules_empty.json")
			},
			want: github.Contexts{Names: []string{}, Known: true,
				Sources: []github.Source{protection(), rulesets()}},
		},
		"403 on branch protection is unknown, not none": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 403, "error_403.json")
				f.expect(rulesPath, rulesQuery, 200, "rules_branch.json")
			},
			want: github.Contexts{Names: []string{"build", "test"}, Known: false,
				Sources: []github.Source{unknown(protection(), 403), rulesets("build", "test")}},
		},
		"404 on rules is unknown": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 200, "branch_protected.json")
				f.expect(rulesPath, rulesQuery, 404, "error_404.json")
			},
			want: github.Contexts{Names: []string{"build", "lint"}, Known: false,
				Sources: []github.Source{protection("build", "lint"), unknown(rulesets(), 404)}},
		},
		"rules paginated": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 200, "branch_unprotected.json")
				f.expect(rulesPath, rulesQuery, 200, "rules_empty.json",
					"Link", `<{base}`+rulesPath+`?per_page=100&page=2>; rel="next", <{base}`+rulesPath+`?per_page=100&page=2>; rel="last"`)
				f.expect(rulesPath, "per_page=100&page=2", 200, "rules_branch.json")
			},
			want: github.Contexts{Names: []string{"build", "test"}, Known: true,
				Sources: []github.Source{protection(), rulesets("build", "test")}},
		},
		"secondary rate limit then success": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 403, "error_secondary_rate_limit.json", "Retry-After", "60")
				f.expect(branchPath, "", 200, "branch_protected.json")
				f.expect(rulesPath, rulesQuery, 200, "rules_empty.json")
			},
			want: github.Contexts{Names: []string{"build", "lint"}, Known: true,
				Sources: []github.Source{protection("build", "lint"), rulesets()}},
		},
		"5xx then success": {
			setup: func(f *fakeGitHub) {
				f.expect(branchPath, "", 200, "branch_protected.json")
				f.expect(rulesPath, rulesQuery, 502, "error_502.json")
				f.expect(rulesPath, rulesQuery, 503, "")
				f.expect(rulesPath, rulesQuery, 200, "rules_empty.json")
			},
			want: github.Contexts{Names: []string{"build", "lint"}, Known: true,
				Sources: []github.Source{protection("build", "lint"), rulesets()}},
		},
		// A rate-limit 403 is not a permission answer: past the window it is
		// an error, never "unknown" and never "none".
		"primary rate limit past the window is an error": {
			setup: func(f *fakeGitHub) {
				reset := strconv.FormatInt(epoch.Add(time.Hour).Unix(), 10)
				f.expect(branchPath, "", 403, "error_rate_limit.json",
					"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset)
			},
			wantErr: rmerr.GitHubAPI,
		},
	} {
		t.Run(name, func(t *testing.T) { run(t, c) })
	}
}

func TestReconcile(t *testing.T) {
	type tc struct {
		required  []string
		exclude   []string
		setup     func(f *fakeGitHub)
		want      github.Result
		mergeable bool
		waited    []time.Duration // backoff on the injected clock
	}
	observe := func(runs, statuses string) func(f *fakeGitHub) {
		return func(f *fakeGitHub) { f.observe(runs, statuses) }
	}
	remote := func(pairs ...string) []record.RemoteResult {
		out := []record.RemoteResult{}
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, record.RemoteResult{Context: pairs[i], Conclusion: record.Conclusion(pairs[i+1])})
		}
		return out
	}
	none := []record.Finding{}
	run := func(t *testing.T, c tc) {
		t.Helper()
		f := newFake(t)
		c.setup(f)
		clock := newClock()
		r, err := f.client(t, clock).Reconciler(github.ReconcileOptions{Owner: owner, Repo: repo, Exclude: c.exclude})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Reconcile(context.Background(), c.required, headSHA)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("got  %+v\nwant %+v", got, c.want)
		}
		if !reflect.DeepEqual(clock.Waited(), c.waited) {
			t.Errorf("waited %v; want %v", clock.Waited(), c.waited)
		}
		// What reconciliation produces is what the verdict judges; the
		// excluded job is runmill itself, so it is not a requirement of the
		// verdict it produces.
		in := verdict.Input{Remote: got.Remote, PendingContexts: got.Pending, Failures: got.Findings}
		for _, ctx := range c.required {
			if slices.Contains(got.Excluded, ctx) {
				continue
			}
			in.Requirements = append(in.Requirements, verdict.Requirement{CheckID: ctx, Required: true, Remote: true})
		}
		if v := verdict.Evaluate(in); v.MergeReady != c.mergeable {
			t.Errorf("merge-ready = %v; want %v (%+v)", v.MergeReady, c.mergeable, v.Reasons())
		}
	}
	cases := map[string]tc{
		"success": {required: []string{"success"}, setup: observe("check_runs_conclusions.json", "statuses_empty.json"),
			want: github.Result{Remote: remote("success", "success"), Pending: []string{}, Findings: none}, mergeable: true},
		"queued and in progress are pending": {required: []string{"build", "lint"}, setup: observe("check_runs_in_progress.json", "statuses_empty.json"),
			want: github.Result{Remote: remote(), Pending: []string{"build", "lint"}, Findings: none}},
		"re-runs: the most recent counts, not the best": {required: []string{"build", "deploy-preview", "lint"},
			setup: observe("check_runs_reruns.json", "statuses_empty.json"),
			want:  github.Result{Remote: remote("build", "failure", "lint", "success"), Pending: []string{"deploy-preview"}, Findings: none}},
		"commit statuses: most recent per context": {required: []string{"ci/docs", "ci/errored", "ci/legacy", "ci/slow"},
			setup: observe("check_runs_empty.json", "statuses.json"),
			want:  github.Result{Remote: remote("ci/docs", "success", "ci/errored", "failure", "ci/legacy", "failure"), Pending: []string{"ci/slow"}, Findings: none}},
		"runmill's own job is excluded": {required: []string{"build", "lint", "runmill"}, exclude: []string{"runmill"},
			setup: observe("check_runs_completed.json", "statuses_empty.json"),
			want:  github.Result{Remote: remote("build", "success", "lint", "success"), Pending: []string{}, Findings: none, Excluded: []string{"runmill"}}, mergeable: true},
		"pagination past 100 check runs": {required: []string{"build", "shard-001", "shard-101"},
			setup: func(f *fakeGitHub) {
				f.expect(checkRunsPath, checkRunsQ, 200, "check_runs_page1.json",
					"Link", `<{base}`+checkRunsPath+`?filter=all&per_page=100&page=2>; rel="next", <{base}`+checkRunsPath+`?filter=all&per_page=100&page=2>; rel="last"`)
				f.expect(checkRunsPath, checkRunsQ+"&page=2", 200, "check_runs_page2.json")
				f.expect(statusesPath, statusesQ, 200, "statuses_empty.json")
			},
			want: github.Result{Remote: remote("build", "failure", "shard-001", "success", "shard-101", "success"), Pending: []string{}, Findings: none}},
		"secondary rate limit then success": {required: []string{"success"},
			setup: func(f *fakeGitHub) {
				f.expect(checkRunsPath, checkRunsQ, 429, "error_secondary_rate_limit.json", "Retry-After", "30")
				f.expect(checkRunsPath, checkRunsQ, 403, "error_secondary_rate_limit.json")
				f.observe("check_runs_conclusions.json", "statuses_empty.json")
			},
			want:   github.Result{Remote: remote("success", "success"), Pending: []string{}, Findings: none},
			waited: []time.Duration{30 * time.Second, time.Minute}, mergeable: true},
		"5xx then success": {required: []string{"success"},
			setup: func(f *fakeGitHub) {
				f.expect(checkRunsPath, checkRunsQ, 200, "check_runs_conclusions.json")
				f.expect(statusesPath, statusesQ, 500, "error_502.json")
				f.expect(statusesPath, statusesQ, 502, "error_502.json")
				f.expect(statusesPath, statusesQ, 200, "statuses_empty.json")
			},
			want:   github.Result{Remote: remote("success", "success"), Pending: []string{}, Findings: none},
			waited: []time.Duration{2 * time.Second, 4 * time.Second}, mergeable: true},
	}
	// Spec § Remote checks: neutral and skipped are not coverage; every
	// failing conclusion fails. Reconciliation passes each on unchanged and
	// the verdict decides; none of them is merge-ready.
	for _, c := range []string{"neutral", "skipped", "failure", "cancelled", "timed_out", "action_required", "stale"} {
		cases[c] = tc{required: []string{c}, setup: observe("check_runs_conclusions.json", "statuses_empty.json"),
			want: github.Result{Remote: remote(c, c), Pending: []string{}, Findings: none}}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { run(t, c) })
	}
}

// TestNeverScheduled: a required context with no run stays pending until 10
// minutes of injected clock after the first observation, then becomes
// RM-CI-002 — not a second before. A context that is running is scheduled, so
// it stays pending.
func TestNeverScheduled(t *testing.T) {
	f := newFake(t)
	clock := newClock()
	r, err := f.client(t, clock).Reconciler(github.ReconcileOptions{Owner: owner, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	required := []string{"build", "integration"}
	for _, step := range []struct {
		advance     time.Duration
		runs        string
		wantPending []string
		escalated   bool
	}{
		{0, "check_runs_empty.json", []string{"build", "integration"}, false},
		{9*time.Minute + 59*time.Second, "check_runs_in_progress.json", []string{"build", "integration"}, false},
		{time.Second, "check_runs_in_progress.json", []string{"build"}, true},
		// Scheduled only after the window: the escalation stands.
		{time.Minute, "check_runs_integration_late.json", []string{"build"}, true},
	} {
		clock.Advance(step.advance)
		f.observe(step.runs, "statuses_empty.json")
		res, err := r.Reconcile(context.Background(), required, headSHA)
		if err != nil {
			t.Fatal(err)
		}
		at := clock.Now().Sub(epoch)
		if !reflect.DeepEqual(res.Pending, step.wantPending) {
			t.Fatalf("at %s: pending %v; want %v", at, res.Pending, step.wantPending)
		}
		if !step.escalated {
			if len(res.Findings) != 0 {
				t.Fatalf("at %s: findings %+v before the window ended", at, res.Findings)
			}
			continue
		}
		if len(res.Findings) != 1 || res.Findings[0].Code != rmerr.CINeverScheduled ||
			res.Findings[0].Check != "integration" || res.Findings[0].Rule != github.RuleNeverScheduled {
			t.Fatalf("at %s: findings %+v; want one RM-CI-002 for integration", at, res.Findings)
		}
	}
}

func TestWait(t *testing.T) {
	type tc struct {
		required []string
		setup    func(f *fakeGitHub)
		want     github.Result
		elapsed  time.Duration
	}
	run := func(t *testing.T, c tc) {
		t.Helper()
		f := newFake(t)
		c.setup(f)
		clock := newClock()
		r, err := f.client(t, clock).Reconciler(github.ReconcileOptions{Owner: owner, Repo: repo, Exclude: []string{"runmill"}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Wait(context.Background(), c.required, headSHA)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("got  %+v\nwant %+v", got, c.want)
		}
		if el := clock.Now().Sub(epoch); el != c.elapsed {
			t.Errorf("elapsed %s of injected clock; want %s", el, c.elapsed)
		}
	}
	for name, c := range map[string]tc{
		"pending then success": {
			required: []string{"build", "lint", "runmill"},
			setup: func(f *fakeGitHub) {
				f.observe("check_runs_in_progress.json", "statuses_empty.json")
				f.observe("check_runs_in_progress.json", "statuses_empty.json")
				f.observe("check_runs_completed.json", "statuses_empty.json")
			},
			want: github.Result{Pending: []string{}, Findings: []record.Finding{}, Excluded: []string{"runmill"},
				Remote: []record.RemoteResult{{Context: "build", Conclusion: record.Success}, {Context: "lint", Conclusion: record.Success}}},
			elapsed: time.Minute,
		},
		// Spec § Remote checks makes only the never-scheduled case a failure
		// at 10 minutes; a scheduled run is waited for past it.
		"running past the window is waited for": {
			required: []string{"build", "lint", "runmill"},
			setup: func(f *fakeGitHub) {
				for range 22 { // 0s … 630s
					f.observe("check_runs_in_progress.json", "statuses_empty.json")
				}
				f.observe("check_runs_completed.json", "statuses_empty.json")
			},
			want: github.Result{Pending: []string{}, Findings: []record.Finding{}, Excluded: []string{"runmill"},
				Remote: []record.RemoteResult{{Context: "build", Conclusion: record.Success}, {Context: "lint", Conclusion: record.Success}}},
			elapsed: 11 * time.Minute,
		},
		"still running at the maximum wait stays pending": {
			required: []string{"build", "lint", "runmill"},
			setup: func(f *fakeGitHub) {
				for range 61 { // 0s … 1800s
					f.observe("check_runs_in_progress.json", "statuses_empty.json")
				}
			},
			want:    github.Result{Remote: []record.RemoteResult{}, Pending: []string{"build", "lint"}, Findings: []record.Finding{}, Excluded: []string{"runmill"}},
			elapsed: github.DefaultMaxWait,
		},
		"never scheduled escalates at 10 minutes": {
			required: []string{"integration"},
			setup: func(f *fakeGitHub) {
				// Observations at 0s, 30s, …, 600s: 21 polls.
				for range 21 {
					f.observe("check_runs_empty.json", "statuses_empty.json")
				}
			},
			want: github.Result{Remote: []record.RemoteResult{}, Pending: []string{}, Findings: []record.Finding{{
				Code: rmerr.CINeverScheduled, Rule: github.RuleNeverScheduled, Check: "integration",
				Message: `required context "integration" was never scheduled on ` + headSHA + " within 10m0s",
				Hint:    "make a workflow report this context for this branch (its trigger and path filters must match), or remove it from the required checks"}}},
			elapsed: 10 * time.Minute,
		},
	} {
		t.Run(name, func(t *testing.T) { run(t, c) })
	}
}

func TestRetriesExhaustedIsTyped(t *testing.T) {
	f := newFake(t)
	clock := newClock()
	r, err := f.client(t, clock).Reconciler(github.ReconcileOptions{Owner: owner, Repo: repo, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Backoff 2s, 4s, 8s, 16s fits the window (ends at 1m); after the 5th
	// answer, at 30s, another 32s would not.
	for range 5 {
		f.expect(checkRunsPath, checkRunsQ, 502, "error_502.json")
	}
	_, err = r.Reconcile(context.Background(), []string{"build"}, headSHA)
	var ex *github.RetriesExhaustedError
	if rmerr.CodeOf(err) != rmerr.GitHubAPI || !errors.As(err, &ex) || ex.Status != 502 || ex.Attempts != 5 {
		t.Fatalf("err = %v; want RM-GITHUB-002 wrapping 5 exhausted attempts", err)
	}
}

// A refusal on check runs cannot be read as "nothing scheduled": that would
// start the RM-CI-002 clock on a token problem. It is an error.
func TestCheckRunsRefusedIsAnError(t *testing.T) {
	f := newFake(t)
	r, err := f.client(t, newClock()).Reconciler(github.ReconcileOptions{Owner: owner, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	f.expect(checkRunsPath, checkRunsQ, 403, "error_403.json")
	res, err := r.Reconcile(context.Background(), []string{"build"}, headSHA)
	if rmerr.CodeOf(err) != rmerr.GitHubAPI {
		t.Fatalf("Reconcile = %+v, %v; want RM-GITHUB-002", res, err)
	}
}
