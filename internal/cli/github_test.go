package cli

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/rmerr"
)

// TestGitHubFlags: the defaults come from the variables the runner sets;
// without a token (or with --no-github) the engine gets no GitHub options at
// all, so no call can be made, and the notice says the sources were not
// consulted. A token alone in a developer's shell does not make a local run
// a GitHub run.
func TestGitHubFlags(t *testing.T) {
	actions := map[string]string{
		"GITHUB_REPOSITORY": "acme/widget", "GITHUB_EVENT_PATH": "testdata/github/pull_request_event.json",
		"GITHUB_TOKEN": "ghs_secret", "GITHUB_JOB": "verify", "GITHUB_API_URL": "https://ghe.example/api/v3",
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		on      bool
		pr      int64
		exclude string
		branch  string
		notice  string
		err     rmerr.Code
	}{
		{name: "actions pull_request", env: actions, on: true, pr: 42, exclude: "verify"},
		{name: "flags win", env: actions, args: []string{"--pr", "7", "--github-job", "runmill", "--github-repo", "acme/other"}, on: true, pr: 7, exclude: "runmill"},
		{name: "push event has no pull request", env: with(actions, "GITHUB_EVENT_PATH", "testdata/github/push_event.json", "GITHUB_REF", "refs/heads/main"), on: true, exclude: "verify", branch: "main"},
		{name: "pull request base ref", env: with(actions, "GITHUB_BASE_REF", "release", "GITHUB_REF", "refs/pull/42/merge"), on: true, pr: 42, exclude: "verify", branch: "release"},
		{name: "no token", env: with(actions, "GITHUB_TOKEN", ""), pr: 42, notice: "no GitHub token"},
		{name: "turned off", env: actions, args: []string{"--no-github"}, pr: 42, notice: "--no-github"},
		{name: "token alone in a local shell", env: map[string]string{"GITHUB_TOKEN": "ghs_secret"}, notice: "no repository is named"},
		{name: "token flag without a repository", env: map[string]string{}, args: []string{"--github-token", "t"}, err: rmerr.GitHubOptions},
		{name: "bad repository", env: with(actions, "GITHUB_REPOSITORY", "widget"), err: rmerr.GitHubOptions},
		{name: "wait shorter than the window", env: actions, args: []string{"--github-wait", "5m"}, err: rmerr.Usage},
		{name: "bad API URL", env: with(actions, "GITHUB_API_URL", "ftp://x"), err: rmerr.GitHubOptions},
		{name: "missing event file", env: with(actions, "GITHUB_EVENT_PATH", "testdata/github/nope.json"), err: rmerr.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := githubFlags{verify: true}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			g.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			g.given = (&flags{FlagSet: fs}).given()
			var notice bytes.Buffer
			o, err := g.options(func(k string) string { return tc.env[k] }, &notice)
			if tc.err != "" {
				if rmerr.CodeOf(err) != tc.err {
					t.Fatalf("err = %v; want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (o != nil) != tc.on || g.pr != tc.pr {
				t.Fatalf("consulted %v pr %d; want %v %d", o != nil, g.pr, tc.on, tc.pr)
			}
			if o != nil && o.Branch != tc.branch {
				t.Fatalf("branch %q; want %q", o.Branch, tc.branch)
			}
			if o != nil && (tc.exclude == "" && len(o.Exclude) != 0 || tc.exclude != "" && (len(o.Exclude) != 1 || o.Exclude[0] != tc.exclude)) {
				t.Fatalf("exclude %v; want %q", o.Exclude, tc.exclude)
			}
			if !strings.Contains(notice.String(), tc.notice) || (tc.notice != "" && !strings.Contains(notice.String(), "NOT consulted")) {
				t.Fatalf("notice %q; want %q", notice.String(), tc.notice)
			}
			if strings.Contains(notice.String(), "ghs_secret") {
				t.Fatal("the token was printed")
			}
		})
	}
}

// TestCheckRunFlag: off by default; --check-run turns it on under its
// default name, --check-run-name renames it.
func TestCheckRunFlag(t *testing.T) {
	env := map[string]string{"GITHUB_REPOSITORY": "acme/widget", "GITHUB_TOKEN": "t"}
	for _, tc := range []struct {
		args []string
		want string
	}{{nil, ""}, {[]string{"--check-run"}, DefaultCheckRunName}, {[]string{"--check-run", "--check-run-name", "evidence"}, "evidence"}, {[]string{"--check-run=false"}, ""}} {
		g := githubFlags{verify: true}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		g.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		g.given = (&flags{FlagSet: fs}).given()
		o, err := g.options(func(k string) string { return env[k] }, io.Discard)
		if err != nil || o.CheckRun != tc.want {
			t.Errorf("%v: check run %q, %v; want %q", tc.args, o.CheckRun, err, tc.want)
		}
	}
}
