package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	doctorpkg "github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/download"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// parseOnly builds a command whose behaviour only records the options it is
// given, and runs it on args: the flag parsing alone.
func parseOnly[O any](newCmd func(func(context.Context, IO, *O) error) *command, args []string) (*O, error) {
	var got *O
	c := newCmd(func(_ context.Context, _ IO, o *O) error { got = o; return nil })
	var out bytes.Buffer
	err := c.run(context.Background(), IO{In: strings.NewReader(""), Out: &out, Err: &out}, args)
	return got, err
}

// flagCase is one command line: the options it parses into, or the usage
// error it is refused with (want nil).
type flagCase[O any] struct {
	name string
	args []string
	want *O
	err  string // a substring of the usage error
}

func testFlags[O any](t *testing.T, newCmd func(func(context.Context, IO, *O) error) *command, cases []flagCase[O]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOnly(newCmd, tc.args)
			if tc.want == nil {
				if err == nil || rmerr.CodeOf(err) != rmerr.Usage || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v (options %+v); want a usage error containing %q", err, got, tc.err)
				}
				if got != nil {
					t.Fatalf("the behaviour ran with %+v after a usage error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("options\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

var change = []string{"--repo", "r", "--base", "b", "--candidate", "c"}

func TestVerifyFlags(t *testing.T) {
	gh := func(given ...string) githubFlags {
		return githubFlags{verify: true, wait: github.DefaultMaxWait, checkRunName: DefaultCheckRunName, given: set(given...)}
	}
	full := gh("repo", "base", "candidate", "policy", "agent-proposals", "out", "signing-key", "json", "github-actions",
		"containerd-address", "parallel", "shard", "verification-id", "shard-durations", "reuse", "trust", "no-reuse", "github-repo", "pr",
		"github-job", "check-run", "check-run-name", "no-github", "github-wait", "github-token", "github-branch", "keep-runs", "keep-days", "no-job-summary")
	full.repo, full.pr, full.job, full.checkRun, full.checkRunName, full.off = "acme/widget", 7, "verify", true, "ev", true
	full.wait, full.token, full.branch = 20*time.Minute, "tok", "main"
	testFlags(t, newVerifyCmd, []flagCase[verifyOptions]{
		{name: "the change", args: change, want: &verifyOptions{
			change: engine.DiscoverOptions{RepoDir: "r", Base: "b", Candidate: "c"}, github: gh("repo", "base", "candidate"), retention: retentionFlags{runs: 200, days: 14}}},
		{name: "every flag", args: append(append([]string{}, change...), "--policy", "p.yaml", "--agent-proposals", "-", "--out", "o",
			"--signing-key", "k.pem", "--json", "--github-actions", "--containerd-address", "/run/c.sock", "--parallel", "3",
			"--shard", "2/4", "--verification-id", "p-7", "--shard-durations", "d.json", "--reuse", "r1", "--reuse", "r2", "--trust", "t.json", "--no-reuse",
			"--github-repo", "acme/widget", "--pr", "7", "--github-job", "verify", "--check-run", "--check-run-name", "ev",
			"--no-github", "--github-wait", "20m", "--github-token", "tok", "--github-branch", "main", "--keep-runs", "30", "--keep-days", "3", "--no-job-summary"),
			want: &verifyOptions{
				change:            engine.DiscoverOptions{RepoDir: "r", Base: "b", Candidate: "c", PolicyFile: "p.yaml", ProposalsFile: "-"},
				output:            outputFlags{out: "o", signingKey: "k.pem", json: true, githubActions: true},
				containerdAddress: "/run/c.sock", parallel: 3, github: full,
				shard: shardFlags{spec: "2/4", verification: "p-7", durations: "d.json"}, reuse: reuseFlags{dirs: []string{"r1", "r2"}, trust: "t.json", off: true},
				retention: retentionFlags{runs: 30, days: 3}, noJobSummary: true,
			}},
		{name: "missing flags", args: []string{"--repo", "r"}, err: "missing required flag(s) --base, --candidate"},
		{name: "a base proof", args: []string{"--repo", "r", "--prove-base", "main", "--signing-key", "k.pem", "--github-repo", "acme/widget"},
			want: &verifyOptions{change: engine.DiscoverOptions{RepoDir: "r", Base: "main"}, output: outputFlags{signingKey: "k.pem"},
				github: func() githubFlags {
					g := gh("repo", "prove-base", "signing-key", "github-repo")
					g.repo, g.off = "acme/widget", true
					return g
				}(), retention: retentionFlags{runs: 200, days: 14}, prove: proveFlags{rev: "main"}}},
		{name: "a base proof needs the repository", args: []string{"--prove-base", "main"}, err: "missing required flag(s) --repo"},
		{name: "a base proof of one commit", args: append(append([]string{}, change...), "--prove-base", "main"),
			err: "--prove-base main proves one base commit for no pull request and reuses nothing: --base, --candidate do not apply"},
		{name: "a base proof for no pull request", args: []string{"--repo", "r", "--prove-base", "main", "--pr", "3", "--check-run", "--shard", "1/2", "--reuse", "d", "--agent-proposals", "a"},
			err: "--shard, --agent-proposals, --pr, --check-run, --reuse do not apply"},
		{name: "positional", args: append(append([]string{}, change...), "extra"), err: `unexpected argument "extra"`},
		{name: "unknown flag", args: append(append([]string{}, change...), "--nope"), err: "flag provided but not defined: -nope"},
		{name: "bad number", args: append(append([]string{}, change...), "--parallel", "x"), err: "invalid value"},
		{name: "keep no runs", args: append(append([]string{}, change...), "--keep-runs", "0"), err: "--keep-runs 0 --keep-days 14: each must be at least 1"},
		{name: "keep no days", args: append(append([]string{}, change...), "--keep-days", "-1"), err: "--keep-runs 200 --keep-days -1: each must be at least 1"},
	})
	// What the flags keep reaches the engine.
	o, err := parseOnly(newVerifyCmd, append(append([]string{}, change...), "--keep-runs", "30", "--keep-days", "3"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := o.retention.retention(); err != nil || r != (engine.Retention{MaxRuns: 30, MaxAge: 3 * 24 * time.Hour}) {
		t.Errorf("retention = %+v, %v; want 30 runs, 3 days", r, err)
	}
}

func TestManifestFlags(t *testing.T) {
	testFlags(t, newManifestCmd, []flagCase[manifestOptions]{
		{name: "every flag", args: append(append([]string{}, change...), "--policy", "p", "--agent-proposals", "a", "--github-contexts", "x, y"),
			want: &manifestOptions{change: engine.DiscoverOptions{RepoDir: "r", Base: "b", Candidate: "c", PolicyFile: "p", ProposalsFile: "a"}, contexts: "x, y"}},
		{name: "missing", args: nil, err: "missing required flag(s) --repo, --base, --candidate"},
		{name: "positional", args: append(append([]string{}, change...), "x"), err: "unexpected argument"},
	})
}

func TestEvidenceExpectFlags(t *testing.T) {
	testFlags(t, newEvidenceExpectCmd, []flagCase[expectOptions]{
		// --base and --candidate may come from the pull request: required
		// only once GitHub has been asked (runExpect).
		{name: "repo only", args: []string{"--repo", "r", "--terminal", "--pr", "4"},
			want: &expectOptions{change: engine.DiscoverOptions{RepoDir: "r"}, terminal: true, github: githubFlags{pr: 4, given: set("repo", "terminal", "pr")}}},
		{name: "no agent proposals", args: []string{"--repo", "r", "--agent-proposals", "a"}, err: "flag provided but not defined: -agent-proposals"},
	})
}

func TestEvidenceMergeFlags(t *testing.T) {
	testFlags(t, newEvidenceMergeCmd, []flagCase[mergeOptions]{
		{name: "shards and repeated flags", args: []string{"a/shard.json", "--trust", "t", "b/shard.json", "--artifacts-dir", "x", "--artifacts-dir", "y",
			"--job-result", "s1=success", "--job-result", "s2=failure", "--json"},
			want: &mergeOptions{shards: []string{"a/shard.json", "b/shard.json"}, trust: "t", artifactDirs: multiFlag{"x", "y"},
				jobs: multiFlag{"s1=success", "s2=failure"}, output: outputFlags{json: true}, github: githubFlags{given: set("trust", "artifacts-dir", "job-result", "json")}}},
		{name: "no trust", args: []string{"a/shard.json"}, err: "missing required flag(s) --trust"},
		{name: "no shard", args: []string{"--trust", "t"}, err: "no SHARD_BUNDLE given"},
	})
}

func TestEvidenceVerifyFlags(t *testing.T) {
	testFlags(t, newEvidenceVerifyCmd, []flagCase[evidenceVerifyOptions]{
		{name: "every flag", args: []string{"-", "--trust", "t", "--expectations", "e", "--artifacts-dir", "d", "--now", "2026-03-01T12:00:00Z"},
			want: &evidenceVerifyOptions{bundle: "-", trust: "t", expectations: "e", artifactsDir: "d", now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}},
		{name: "now defaults to the clock", args: []string{"b.json", "--trust", "t", "--expectations", "e"},
			want: &evidenceVerifyOptions{bundle: "b.json", trust: "t", expectations: "e"}},
		{name: "two bundles", args: []string{"a", "b", "--trust", "t", "--expectations", "e"}, err: "expected exactly one BUNDLE, got 2"},
		{name: "bad time", args: []string{"a", "--trust", "t", "--expectations", "e", "--now", "yesterday"}, err: `--now "yesterday" is not an RFC 3339 time`},
		{name: "missing", args: []string{"a"}, err: "--trust, --expectations"},
	})
}

func TestEvidenceKeygenFlags(t *testing.T) {
	testFlags(t, newEvidenceKeygenCmd, []flagCase[keygenOptions]{
		{name: "default window", args: []string{"--key-out", "k", "--trust-out", "t"}, want: &keygenOptions{keyOut: "k", trustOut: "t", validFor: 90 * 24 * time.Hour}},
		{name: "a Go duration", args: []string{"--key-out", "k", "--trust-out", "t", "--valid-for", "36h"}, want: &keygenOptions{keyOut: "k", trustOut: "t", validFor: 36 * time.Hour}},
		{name: "bad window", args: []string{"--key-out", "k", "--trust-out", "t", "--valid-for", "0d"}, err: "not a positive number of days"},
		{name: "same file", args: []string{"--key-out", "k", "--trust-out", "k"}, err: "name the same file"},
	})
}

func TestEvidenceDownloadFlags(t *testing.T) {
	run := download.Options{Owner: "acme", Repo: "widget", RunID: 12, Name: download.DefaultArtifactName, Dir: "runmill-evidence-12", MaxBytes: 1 << 30}
	named := run
	named.Name, named.Dir, named.MaxBytes = "ev", "out", 10
	testFlags(t, newEvidenceDownloadCmd, []flagCase[downloadOptions]{
		{name: "defaults", args: []string{"--repo", "acme/widget", "--run-id", "12"}, want: &downloadOptions{run: run}},
		{name: "verify", args: []string{"--repo", "acme/widget", "--run-id", "12", "--name", "ev", "--out", "out", "--max-bytes", "10",
			"--verify", "--trust", "t", "--expectations", "e", "--artifacts", "--now", "2026-03-01T12:00:00Z", "--github-token", "tok"},
			want: &downloadOptions{run: named, token: "tok", verify: true, trust: "t", expect: "e", withCAS: true, now: "2026-03-01T12:00:00Z"}},
		{name: "verify needs trust", args: []string{"--repo", "acme/widget", "--run-id", "12", "--verify"}, err: "--trust, --expectations"},
		{name: "trust needs verify", args: []string{"--repo", "acme/widget", "--run-id", "12", "--trust", "t"}, err: "belong to --verify"},
		{name: "run id", args: []string{"--repo", "acme/widget", "--run-id", "-1"}, err: "must be positive"},
		{name: "repository", args: []string{"--repo", "widget", "--run-id", "12"}, err: `--repo "widget" is not OWNER/NAME`},
	})
}

func TestReportInventoryFlags(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testFlags(t, newReportInventoryCmd, []flagCase[reportOptions]{
		{name: "suite path", args: []string{"--format", "junit", "r.xml", "--identity", "suite-path"},
			want: &reportOptions{file: "r.xml", format: report.Format("junit"), identity: report.IdentitySuitePath, root: cwd}},
		{name: "stdin", args: []string{"--format", "tap", "-"}, want: &reportOptions{file: "-", format: report.Format("tap"), root: cwd}},
		{name: "root", args: []string{"--format", "junit", "--root", "sub/../src", "r.xml"}, want: &reportOptions{file: "r.xml", format: report.Format("junit"), root: filepath.Join(cwd, "src")}},
		{name: "format", args: []string{"--format", "json", "r"}, err: `unsupported --format "json"`},
		{name: "identity", args: []string{"--format", "tap", "r", "--identity", "x"}, err: `unknown --identity "x"`},
		{name: "no file", args: []string{"--format", "tap"}, err: "expected exactly one report FILE, got 0"},
	})
}

func TestInspectFlags(t *testing.T) {
	testFlags(t, newInspectCmd, []flagCase[inspectOptions]{
		{name: "run id", args: []string{"20261201T000000Z-0000abcd", "--json", "--out", "s"}, want: &inspectOptions{run: "20261201T000000Z-0000abcd", out: "s", json: true}},
		{name: "none", args: nil, err: "inspect takes one RUN-ID or PATH"},
	})
}

func TestSummaryFlags(t *testing.T) {
	testFlags(t, newSummaryCmd, []flagCase[summaryOptions]{
		{name: "defaults", args: []string{"runs/x"}, want: &summaryOptions{run: "runs/x", repo: "."}},
		{name: "every flag", args: []string{"runs/x", "--repo", "r", "--out", "s.md", "--github-actions", "--comment", "--github-repo", "o/n", "--pr", "7"},
			want: &summaryOptions{run: "runs/x", repo: "r", out: "s.md", githubActions: true, comment: true, githubRepo: "o/n", pr: 7}},
		{name: "no run", args: nil, err: "summary takes one RUN-DIR"},
		{name: "actions without out", args: []string{"runs/x", "--github-actions"}, err: "--github-actions needs --out FILE"},
	})
}

func TestDoctorFlags(t *testing.T) {
	base := doctorpkg.Options{Checks: doctorpkg.Default, RepoDir: ".", Base: "HEAD"}
	named := doctorpkg.Options{Checks: []string{"policy", "sandbox", "checks"}, RepoDir: "r", Base: "main", PolicyFile: "p", ContainerdAddress: "a", StateDir: "s"}
	testFlags(t, newDoctorCmd, []flagCase[doctorOptions]{
		{name: "defaults", args: nil, want: &doctorOptions{run: base}},
		{name: "named checks", args: []string{"--check", "policy, sandbox", "--check", "checks", "--repo", "r", "--base", "main", "--policy", "p",
			"--containerd-address", "a", "--out", "s", "--json"}, want: &doctorOptions{run: named, json: true}},
		{name: "unknown check", args: []string{"--check", "network"}, err: `unknown check "network"`},
	})
}

func TestInitFlags(t *testing.T) {
	testFlags(t, newInitCmd, []flagCase[initOptions]{
		{name: "defaults", args: nil, want: &initOptions{repo: ".", base: "HEAD"}},
		{name: "every flag", args: []string{"--repo", "r", "--base", "b", "--operator-policy-out", "/etc/p.yaml"}, want: &initOptions{repo: "r", base: "b", operatorOut: "/etc/p.yaml"}},
		{name: "positional", args: []string{"r"}, err: "unexpected argument"},
	})
}

func TestDepsImportFlags(t *testing.T) {
	testFlags(t, newDepsImportCmd, []flagCase[depsImportOptions]{
		{name: "npm by default", args: []string{"--repo", "r", "--commit", "c", "--from", "f"}, want: &depsImportOptions{repo: "r", commit: "c", from: "f", strategy: "npm"}},
		{name: "go modules", args: []string{"--repo", "r", "--commit", "c", "--from", "f", "--strategy", "go-modules", "--out", "o"},
			want: &depsImportOptions{repo: "r", commit: "c", from: "f", strategy: "go-modules", out: "o"}},
		{name: "strategy", args: []string{"--repo", "r", "--commit", "c", "--from", "f", "--strategy", "pip"}, err: `--strategy "pip" is not one of npm, go-modules, cargo`},
	})
}

// TestExitPolicies: what each command's errors mean, against DESIGN.md's
// command table — the same code from every command unless its policy says
// otherwise.
func TestExitPolicies(t *testing.T) {
	coded := func(c rmerr.Code) error { return rmerr.New(c, "x") }
	uncoded := context.DeadlineExceeded
	for _, tc := range []struct {
		cmd  string
		err  error
		want int
	}{
		{"verify", nil, exitOK},
		{"verify", answer(), exitAnswer},
		{"verify", coded(rmerr.Usage), exitUsage},
		{"verify", coded(rmerr.PolicyInvalid), exitUsage},
		{"verify", coded(rmerr.VerifyManifest), exitAnswer},
		{"verify", coded(rmerr.GitRepository), exitNoAnswer},
		{"verify", coded(rmerr.GitHubAPI), exitNoAnswer},
		{"verify", coded(rmerr.SandboxUnavailable), exitNoAnswer},
		{"verify", uncoded, exitNoAnswer},
		{"manifest", coded(rmerr.VerifyManifest), exitAnswer},
		{"manifest", coded(rmerr.GitRepository), exitUsage},
		{"manifest", coded(rmerr.GitRevision), exitUsage},
		{"manifest", uncoded, exitUsage},
		{"evidence expect", coded(rmerr.GitHubAPI), exitUsage},
		{"evidence download", coded(rmerr.GitHubAPI), exitAnswer},
		{"evidence download", coded(rmerr.GitHubArtifact), exitAnswer},
		{"evidence download", coded(rmerr.GitHubOptions), exitUsage},
		{"evidence merge", coded("RM-EVIDENCE-019"), exitAnswer},
		{"evidence merge", coded(rmerr.Usage), exitUsage},
		{"evidence verify", coded("RM-EVIDENCE-019"), exitUsage},
		{"report inventory", coded("RM-REPORT-001"), exitAnswer},
		{"report inventory", coded(rmerr.Usage), exitUsage},
		{"inspect", negative{coded(rmerr.Usage)}, exitAnswer},
		{"init", coded(rmerr.InitExists), exitUsage},
		{"init", coded(rmerr.InitToolchain), exitAnswer},
	} {
		c, _ := lookup(strings.Fields(tc.cmd))
		if c == nil {
			t.Fatalf("no command %q", tc.cmd)
		}
		if got := exitCode(c.exit, tc.err); got != tc.want {
			t.Errorf("%s: %v → exit %d, want %d", tc.cmd, tc.err, got, tc.want)
		}
	}
}

// TestShardVerificationID: --verification-id wins; on GitHub Actions the
// default is the workflow run (every job and re-run job of it shares it,
// whatever the attempt); elsewhere there is none, and --shard is refused.
func TestShardVerificationID(t *testing.T) {
	gha := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo-org/shop", "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "2"}
	for _, tc := range []struct {
		name  string
		flag  string
		env   map[string]string
		want  string
		error string
	}{
		{"the flag", "pipeline-99", gha, "pipeline-99", ""},
		{"the workflow run on GitHub Actions", "", gha, "octo-org/shop/actions/runs/4242", ""},
		{"another attempt of the same run", "", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "octo-org/shop", "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "3"}, "octo-org/shop/actions/runs/4242", ""},
		{"a run id outside GitHub Actions", "", map[string]string{"GITHUB_REPOSITORY": "octo-org/shop", "GITHUB_RUN_ID": "4242"}, "", "needs --verification-id"},
		{"nothing", "", nil, "", "needs --verification-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := shardFlags{spec: "2/3", verification: tc.flag}
			var o engine.VerifyOptions
			err := f.apply(&o, func(k string) string { return tc.env[k] })
			if tc.error != "" {
				if err == nil || rmerr.CodeOf(err) != rmerr.Usage || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("apply = %v, want a usage error %q", err, tc.error)
				}
				return
			}
			if err != nil || o.Shard == nil || *o.Shard != (evidence.ShardSpec{Index: 2, Count: 3, VerificationID: tc.want}) {
				t.Fatalf("apply = %v, shard %+v; want 2/3 of %q", err, o.Shard, tc.want)
			}
		})
	}
}

func TestCacheFlags(t *testing.T) {
	testFlags(t, newCacheVetCmd, []flagCase[cacheOptions]{
		{name: "defaults", args: nil, want: &cacheOptions{}},
		{name: "trust", args: []string{"--out", "s", "--trust", "t.json", "--json"}, want: &cacheOptions{out: "s", trust: "t.json", json: true}},
		{name: "key", args: []string{"--signing-key", "k.pem"}, want: &cacheOptions{signingKey: "k.pem"}},
		{name: "trust and key", args: []string{"--trust", "t", "--signing-key", "k"}, err: "exclusive"},
		{name: "no repo flag", args: []string{"--repo", "."}, err: "-repo"},
	})
	testFlags(t, newCacheSealCmd, []flagCase[cacheOptions]{
		{name: "key", args: []string{"--out", "s", "--signing-key", "k.pem"}, want: &cacheOptions{out: "s", signingKey: "k.pem"}},
		{name: "no trust flag", args: []string{"--trust", "t"}, err: "trust"},
	})
	testFlags(t, newCacheKeyCmd, []flagCase[cacheOptions]{
		{name: "repo and base", args: []string{"--out", "s", "--repo", "r", "--base", "main"}, want: &cacheOptions{out: "s", repo: "r", base: "main"}},
		{name: "repo alone", args: []string{"--repo", "r"}, err: "go together"},
		{name: "no key flag", args: []string{"--signing-key", "k"}, err: "signing-key"},
	})
}
