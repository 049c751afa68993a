package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/internal/verifytest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// The fixtures' fixed head SHA; Replace swaps in the test's real commit.
const fixtureHead = verifytest.FixtureHead

func githubOptions(t *testing.T, f *githubtest.Server, pr int64) *engine.GitHubOptions {
	t.Helper()
	c, err := github.New(github.Options{Token: githubtest.Token, BaseURL: f.URL(), HTTPClient: f.Client(), Clock: githubtest.NewClock()})
	if err != nil {
		t.Fatal(err)
	}
	return &engine.GitHubOptions{Client: c, Owner: "acme", Repo: "widget", PullRequest: pr, Exclude: []string{"runmill"}}
}

// observePR registers what Verify and Expect each read first
// (verifytest.ObservePR).
func observePR(f *githubtest.Server) { verifytest.ObservePR(f) }

// TestGitHubVerifyAndExpectAgree: a verify run that consults the (fake) API
// and an expect run that consults it again, independently, produce bindings
// that agree, and the signed bundle verifies against them offline. The
// token is in runmill's environment and a check looks for it: it never
// enters the sandbox.
func TestGitHubVerifyAndExpectAgree(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", githubtest.Token)
	_, key, trust := newTestKey(t)
	pol := tapPolicy + "  - id: token\n    required: false\n    run: '! env | grep -q ghs_ && ! grep -q ghs_ /proc/self/environ'\n"
	r, base := shopRepo(t, pol)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")

	f := githubtest.New(t)
	f.Replace("{head}", cand)
	f.Replace("{base}", base)
	f.Replace("{old}", base)
	f.Replace(fixtureHead, cand)
	observePR(f)
	// Reconciliation: build succeeded; runmill (this job) is in progress and
	// excluded, so it is neither waited on nor judged.
	f.Expect("/repos/acme/widget/commits/"+cand+"/check-runs", "filter=all&per_page=100", 200, "check_runs_completed.json")
	f.Expect("/repos/acme/widget/commits/"+cand+"/statuses", "per_page=100", 200, "statuses_empty.json")
	// The optional check run, merge-ready so without annotations.
	f.Add(githubtest.Exchange{Method: http.MethodPost, Path: "/repos/acme/widget/check-runs", Status: 201, File: "check_run_created.json",
		Check: func(t testing.TB, body []byte) {
			var b struct {
				HeadSHA    string `json:"head_sha"`
				Conclusion string `json:"conclusion"`
			}
			json.Unmarshal(body, &b)
			if b.HeadSHA != cand || b.Conclusion != "success" {
				t.Errorf("check run body %s", body)
			}
		}})
	gh := githubOptions(t, f, 42)
	gh.CheckRun = "runmill evidence"
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) {
		o.SigningKey, o.GitHub, o.PullRequest = key, gh, 42
	})
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s", strings.Join(rules(run), "\n"))
	}
	d := run.Delivery
	if d.Candidate.Repository != (evidence.Repository{Name: "acme/widget", ID: 702187311}) || d.Candidate.PullRequest != 42 {
		t.Fatalf("candidate %+v", d.Candidate)
	}
	if g := d.Manifest.GitHub; !g.Consulted || !slices.Equal(g.Contexts, []string{"build"}) || !slices.Equal(g.Excluded, []string{"runmill"}) || len(g.Unknown) != 0 {
		t.Fatalf("manifest github %+v", g)
	}
	if c, ok := d.Manifest.Check("build"); !ok || c.Command != "" || !c.Required {
		t.Fatalf("build is not a github-sourced required check: %+v", c)
	}
	if !slices.Equal(d.Remote, []record.RemoteResult{{Context: "build", Conclusion: record.Success}}) || len(d.PendingContexts) != 0 {
		t.Fatalf("remote %+v pending %v", d.Remote, d.PendingContexts)
	}
	if len(d.Reviews) != 4 {
		t.Fatalf("reviews %+v", d.Reviews)
	}
	ran := false
	for _, c := range d.Checks {
		if c.CheckID == "token" {
			ran = true
			if c.ExitCode != 0 {
				t.Fatalf("the token check failed (exit %d): the token reached the sandbox", c.ExitCode)
			}
		}
	}
	if !ran {
		t.Fatal("the token check did not run")
	}

	// The verifier host observes for itself.
	observePR(f)
	exp, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir}, StateDir: t.TempDir(), PullRequest: 42,
		GitHub: githubOptions(t, f, 42)})
	if err != nil {
		t.Fatal(err)
	}
	if exp.Head != cand || exp.Base != base || exp.Repository.ID != 702187311 || !slices.Contains(exp.RequiredChecks, "build") ||
		!slices.Equal(exp.Reviews.Approvals, []evidence.Approval{{Reviewer: "hubot", Commit: base}, {Reviewer: "monalisa", Commit: cand}}) {
		t.Fatalf("expectations %+v", exp)
	}
	expDoc, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := os.ReadFile(run.BundlePath)
	res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: filepath.Join(run.Dir, "artifacts")})
	if !res.Valid {
		t.Fatalf("verify+expect with GitHub do not agree: %s %s", res.Reason, res.Message)
	}
	// An expectation that saw no GitHub cannot pass the same bundle: the
	// repository id and the required set differ.
	plain, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}, StateDir: t.TempDir(), PullRequest: 42, Repository: "acme/widget"})
	if err != nil {
		t.Fatal(err)
	}
	plainDoc, _ := plain.Encode()
	if res := evidence.Verify(bundle, trust, plainDoc, evidence.VerifyOptions{Now: time.Now()}); res.Valid {
		t.Fatal("expectations without GitHub accepted a bundle whose run consulted GitHub")
	}
	// The terminal ledger names the API calls the run made.
	term, _ := os.ReadFile(filepath.Join(run.Dir, "terminal-statement.json"))
	for _, call := range []string{"GET " + f.URL() + "/repos/acme/widget/pulls/42", "POST " + f.URL() + "/repos/acme/widget/check-runs"} {
		if !strings.Contains(string(term), `"kind":"api-call"`) || !strings.Contains(string(term), call) {
			t.Fatalf("the side-effect ledger lacks %q", call)
		}
	}
	if strings.Contains(string(term), githubtest.Token) {
		t.Fatal("the token is in the terminal statement")
	}
}

// TestGitHubRequiredButNotConsulted: an operator policy with github:
// {required: true} turns a run without a token into RM-GITHUB-003, and a
// 403 on branch protection into "unknown" (recorded, never none) and
// RM-GITHUB-003 — never a silent pass on local checks alone.
func TestGitHubRequiredButNotConsulted(t *testing.T) {
	r, base := shopRepo(t, tapPolicy)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	opFile := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(opFile, []byte("github: {required: true}\n"), 0o644)

	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = opFile })
	if run.MergeReady() || !hasRule(run, engine.RuleGitHubNotConsulted+"|"+string(rmerr.GitHubNotConsulted)) || run.Delivery.Manifest.GitHub.Consulted {
		t.Fatalf("no token with github.required:\n%s", strings.Join(rules(run), "\n"))
	}

	f := githubtest.New(t)
	f.Replace("{head}", cand)
	f.Replace("{base}", base)
	f.Replace("{old}", base)
	f.Expect("/repos/acme/widget/pulls/42", "", 200, "pull_request.json")
	f.Expect("/repos/acme/widget/pulls/42/reviews", "per_page=100", 200, "pull_reviews_page2.json")
	f.Expect("/repos/acme/widget/branches/main", "", 403, "error_403.json")
	f.Expect("/repos/acme/widget/rules/branches/main", "per_page=100&page=1", 200, "rules_empty.json")
	run = verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = opFile; o.GitHub = githubOptions(t, f, 42) })
	g := run.Delivery.Manifest.GitHub
	if !g.Consulted || len(g.Unknown) != 1 || g.Unknown[0].Name != github.SourceBranchProtection {
		t.Fatalf("manifest github %+v", g)
	}
	if run.MergeReady() || !hasRule(run, engine.RuleGitHubUnknown+"|"+string(rmerr.GitHubNotConsulted)+"|"+github.SourceBranchProtection) {
		t.Fatalf("403 with github.required:\n%s", strings.Join(rules(run), "\n"))
	}
}

// TestCheckRunAnnotatesFailedTests: with --check-run, a failed run's check
// run carries an annotation at the file and line the JUnit report gives
// for each failed test, and the conclusion failure. Outside a pull request
// the repository is read for its id and the branch for its contexts.
func TestCheckRunAnnotatesFailedTests(t *testing.T) {
	const junit = `<testsuite name="shop" tests="2" failures="1">` +
		`<testcase classname="shop" name="total" file="tests/total_test.go" line="12"><failure message="want 250, got 0">boom</failure></testcase>` +
		`<testcase classname="shop" name="zero" file="tests/zero_test.go" line="3"/></testsuite>`
	pol := "checks:\n  - id: unit\n    run: cat tests/report.xml > reports/unit.xml; exit 1\n    report: {path: reports/unit.xml, format: junit}\n"
	r, _ := shopRepo(t, pol)
	r.Write("tests/report.xml", junit)
	base := r.Commit("report")
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")

	f := githubtest.New(t)
	f.Expect("/repos/acme/widget", "", 200, "repository.json")
	f.Expect("/repos/acme/widget/branches/main", "", 200, "branch_unprotected.json")
	f.Expect("/repos/acme/widget/rules/branches/main", "per_page=100&page=1", 200, "rules_empty.json")
	f.Add(githubtest.Exchange{Method: http.MethodPost, Path: "/repos/acme/widget/check-runs", Status: 201, File: "check_run_created.json",
		Check: func(t testing.TB, body []byte) {
			var b struct {
				HeadSHA    string `json:"head_sha"`
				Conclusion string `json:"conclusion"`
				Output     struct {
					Summary     string `json:"summary"`
					Annotations []struct {
						Path      string `json:"path"`
						StartLine int    `json:"start_line"`
						Level     string `json:"annotation_level"`
						Message   string `json:"message"`
					} `json:"annotations"`
				} `json:"output"`
			}
			if err := json.Unmarshal(body, &b); err != nil {
				t.Errorf("check run body: %v", err)
				return
			}
			// One line per cause, as the job summary: the exit code is
			// folded into the failing test that explains it.
			if s := b.Output.Summary; strings.Contains(s, "outcome.check-failed") || !strings.Contains(s, "(the check exited with code 1)") {
				t.Errorf("check run summary lists the exit code apart from its test:\n%s", s)
			}
			a := b.Output.Annotations
			if b.HeadSHA != cand || b.Conclusion != "failure" || len(a) != 1 || a[0].Path != "tests/total_test.go" || a[0].StartLine != 12 ||
				a[0].Level != "failure" || a[0].Message != "want 250, got 0" {
				t.Errorf("check run body %s", body)
			}
		}})
	gh := githubOptions(t, f, 0)
	gh.Branch, gh.CheckRun = "main", "runmill evidence"
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.GitHub = gh })
	if run.MergeReady() || run.Delivery.Candidate.Repository.ID != 702187311 {
		t.Fatalf("merge-ready %v, repository %+v", run.MergeReady(), run.Delivery.Candidate.Repository)
	}
}

// TestExpectRefusesRevisionsThePullRequestDoesNotName: a verifier host that
// names a candidate other than the pull request's head has two different
// observations; expect says so instead of choosing one.
func TestExpectRefusesRevisionsThePullRequestDoesNotName(t *testing.T) {
	r, base := shopRepo(t, tapPolicy)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	f := githubtest.New(t)
	f.Replace("{head}", cand)
	f.Replace("{base}", base)
	f.Replace("{old}", base)
	f.Expect("/repos/acme/widget/pulls/42", "", 200, "pull_request.json")
	f.Expect("/repos/acme/widget/pulls/42/reviews", "per_page=100", 200, "pull_reviews_page2.json")
	f.Expect("/repos/acme/widget/branches/main", "", 200, "branch_unprotected.json")
	f.Expect("/repos/acme/widget/rules/branches/main", "per_page=100&page=1", 200, "rules_empty.json")
	_, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Candidate: base}, StateDir: t.TempDir(), PullRequest: 42,
		GitHub: githubOptions(t, f, 42)})
	if rmerr.CodeOf(err) != rmerr.GitHubOptions || !strings.Contains(err.Error(), "pull request #42 says "+cand) {
		t.Fatalf("err = %v; want RM-GITHUB-001 naming the pull request's head", err)
	}
}
