package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/rmerr"
	githubactions "github.com/sethvargo/go-githubactions"
)

// githubFlags are the flags with which verify and evidence expect consult
// GitHub. Defaults come from the variables GitHub Actions sets, so a
// workflow step needs none of them.
type githubFlags struct {
	token        string
	repo         string
	pr           int64
	branch       string
	job          string
	off          bool
	wait         time.Duration
	checkRun     bool
	checkRunName string
	verify       bool // the command is verify (check runs, job exclusion defaults)
	// given are the flags the command line set (a flag set to its default
	// still wins over the environment).
	given map[string]bool
}

func (g *githubFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.token, "github-token", "", "GitHub token (default $GITHUB_TOKEN; prefer the variable: flags show in ps); without one no GitHub call is made")
	fs.StringVar(&g.repo, "github-repo", "", "repository `OWNER/NAME` (default $GITHUB_REPOSITORY)")
	fs.Int64Var(&g.pr, "pr", 0, "pull request `N` (default: the pull_request event in $GITHUB_EVENT_PATH)")
	fs.StringVar(&g.branch, "github-branch", "", "base `BRANCH` whose protection applies outside a pull request (default $GITHUB_BASE_REF, else the branch of $GITHUB_REF)")
	fs.StringVar(&g.job, "github-job", "", "runmill's own required check (its job's check-run `NAME`), excluded from reconciliation (default $GITHUB_JOB)")
	fs.BoolVar(&g.off, "no-github", false, "do not consult GitHub even with a token (the evidence says so)")
	if g.verify {
		fs.DurationVar(&g.wait, "github-wait", github.DefaultMaxWait, "how long to wait for required remote checks that are scheduled but still running (a context never scheduled fails after 10m regardless)")
		fs.BoolVar(&g.checkRun, "check-run", false, "also create a check run with the verdict and annotations (needs checks: write; off by default: fork pull requests get read-only tokens)")
		fs.StringVar(&g.checkRunName, "check-run-name", DefaultCheckRunName, "the check run's `NAME` (must not be a required context)")
	}
}

// options returns the engine's GitHub options, or nil when GitHub is not to
// be consulted. notice receives one line saying why not. The defaults are
// the workflow's context as go-githubactions reads it from getenv; the
// event file is read here (eventPullRequest), strictly.
func (g *githubFlags) options(getenv func(string) string, notice io.Writer) (*engine.GitHubOptions, error) {
	wf := workflowContext(getenv)
	token, fromFlag := g.token, g.given["github-token"]
	if !fromFlag {
		token = getenv("GITHUB_TOKEN")
	}
	if g.repo == "" {
		g.repo = wf.Repository
	}
	if !g.given["pr"] {
		pr, err := eventPullRequest(getenv("GITHUB_EVENT_PATH"))
		if err != nil {
			return nil, err
		}
		g.pr = pr
	}
	if g.pr < 0 {
		return nil, rmerr.New(rmerr.Usage, "--pr %d is negative", g.pr).InField("--pr")
	}
	if why := g.notConsulted(token, fromFlag); why != "" {
		fmt.Fprintln(notice, why)
		return nil, nil
	}
	owner, name, err := github.SplitRepository(g.repo)
	if err != nil {
		return nil, err
	}
	g.defaults(wf)
	c, err := github.New(github.Options{Token: token, BaseURL: wf.APIURL})
	if err != nil {
		return nil, err
	}
	if g.wait < github.DefaultWindow && g.verify {
		return nil, rmerr.New(rmerr.Usage, "--github-wait %s is shorter than the 10-minute scheduling window", g.wait).InField("--github-wait").
			WithHint("use at least 10m")
	}
	o := &engine.GitHubOptions{Client: c, Owner: owner, Repo: name, PullRequest: g.pr, Branch: g.branch, MaxWait: g.wait}
	if g.checkRun {
		o.CheckRun = g.checkRunName
	}
	if g.job != "" {
		o.Exclude = []string{g.job}
	}
	return o, nil
}

// notConsulted says why GitHub is not to be consulted, or "".
func (g *githubFlags) notConsulted(token string, fromFlag bool) string {
	switch {
	case g.off:
		return "runmill: --no-github: the GitHub sources are NOT consulted"
	case strings.TrimSpace(token) == "":
		return "runmill: no GitHub token (--github-token or GITHUB_TOKEN): the GitHub sources are NOT consulted"
	case g.repo == "" && !fromFlag && !g.given["github-repo"] && !g.given["pr"]:
		// A developer's shell may export GITHUB_TOKEN for other tools; that
		// alone does not make a local run a GitHub run.
		return "runmill: GITHUB_TOKEN is set but no repository is named (--github-repo or GITHUB_REPOSITORY): the GitHub sources are NOT consulted"
	}
	return ""
}

// defaults fills the base branch and runmill's own job from the workflow.
func (g *githubFlags) defaults(wf *githubactions.GitHubContext) {
	if g.branch == "" {
		g.branch = wf.BaseRef
	}
	if g.branch == "" && strings.HasPrefix(wf.Ref, "refs/heads/") {
		// A push: the branch pushed to is the one whose protection applies.
		g.branch = strings.TrimPrefix(wf.Ref, "refs/heads/")
	}
	if g.job == "" {
		g.job = wf.Job
	}
}

// workflowContext is the GitHub Actions context go-githubactions reads from
// getenv, without the event: the library reads the event file unbounded,
// decodes numbers as float64 and takes a missing file for no event, so
// eventPullRequest reads it instead. The library's own errors are for
// variables runmill does not use (GITHUB_RUN_ID, GITHUB_ACTIONS, …): a
// malformed one must not fail a run, so they are ignored.
func workflowContext(getenv func(string) string) *githubactions.GitHubContext {
	noEvent := func(k string) string {
		if k == "GITHUB_EVENT_PATH" {
			return ""
		}
		return getenv(k)
	}
	wf, _ := githubactions.New(githubactions.WithGetenv(noEvent)).Context()
	if wf == nil {
		// Context returns nil only when it fails to read the event, which
		// it is never given.
		wf = &githubactions.GitHubContext{}
	}
	return wf
}

// DefaultCheckRunName names the optional check run. It differs from the
// job's own check so the two are never confused in branch protection.
const DefaultCheckRunName = "runmill evidence"

// maxEventBytes bounds the event file read: GitHub caps webhook payloads at
// 25 MB.
const maxEventBytes = 25 << 20

// eventPullRequest reads the pull request number from the event that
// triggered the workflow (pull_request and pull_request_target carry
// pull_request.number); 0 for any other event or no event file.
func eventPullRequest(path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, rmerr.Wrap(rmerr.Usage, err, "reading the workflow event").At(path, 0).
			WithHint("GITHUB_EVENT_PATH must name the event file the runner wrote, or be unset")
	}
	defer f.Close()
	var ev struct {
		PullRequest *struct {
			Number int64 `json:"number"`
		} `json:"pull_request"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxEventBytes)).Decode(&ev); err != nil {
		return 0, rmerr.Wrap(rmerr.Usage, err, "parsing the workflow event").At(path, 0)
	}
	if ev.PullRequest == nil {
		return 0, nil
	}
	return ev.PullRequest.Number, nil
}
