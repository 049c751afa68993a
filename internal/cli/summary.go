package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/internal/actions"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/rmerr"
)

// summaryOptions are summary's flags.
type summaryOptions struct {
	run           string // a run directory
	repo          string
	out           string
	githubActions bool
	comment       bool
	githubRepo    string
	pr            int64
}

func newSummaryCmd(runF func(context.Context, IO, *summaryOptions) error) *command {
	if runF == nil {
		runF = runSummaryCmd
	}
	c := &command{
		name:    "summary",
		usage:   "RUN-DIR [--repo DIR] [--out FILE] [--github-actions] [--comment [--github-repo OWNER/NAME] [--pr N]]",
		summary: "write a run's job summary (and its pull-request comment)",
		long: `Renders the job summary of a finished run (RUN-DIR: its directory, holding
statement.json) as Markdown: on stdout, or into --out FILE. --repo DIR (default
.) is the repository, whose candidate files locate the failing tests.

--github-actions (the action's Summary step, after the evidence is uploaded):
also append it to $GITHUB_STEP_SUMMARY and set the step output summary-path to
--out; the Evidence section links $RUNMILL_ARTIFACT_URL (upload-artifact's
artifact-url) and error codes link docs/errors.md at $RUNMILL_ACTION_REPOSITORY
and $RUNMILL_ACTION_REF.

--comment: create, or update in place, the pull request's one runmill comment
(the verdict and what the change did to the test inventory), with
$GITHUB_TOKEN; it needs pull-requests: write. A token that cannot write (a
fork's pull request) or a failed call is a warning, never a failure: the
verdict is the gate's.

Exit: 0 · 2 usage, or the run cannot be read.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &summaryOptions{}
		fs := newFlags(c, s)
		fs.StringVar(&o.repo, "repo", ".", "the repository `DIR` (its candidate's files locate failing tests)")
		fs.StringVar(&o.out, "out", "", "write the Markdown to `FILE` (required with --github-actions)")
		fs.BoolVar(&o.githubActions, "github-actions", false, "also append it to the step's job summary and set the summary-path output")
		fs.BoolVar(&o.comment, "comment", false, "create or update the pull request's sticky runmill comment (needs pull-requests: write)")
		fs.StringVar(&o.githubRepo, "github-repo", "", "repository `OWNER/NAME` (default $GITHUB_REPOSITORY)")
		fs.Int64Var(&o.pr, "pr", 0, "pull request `N` (default: the pull_request event in $GITHUB_EVENT_PATH)")
		if err := fs.parse(args); err != nil {
			return err
		}
		if len(fs.pos) != 1 {
			return rmerr.New(rmerr.Usage, "summary takes one RUN-DIR").WithHint("run 'runmill summary --help'")
		}
		o.run = fs.pos[0]
		if o.githubActions && o.out == "" {
			return rmerr.New(rmerr.Usage, "--github-actions needs --out FILE: the summary-path output names it").InField("--out")
		}
		return runF(ctx, s, o)
	}
	return c
}

func runSummaryCmd(ctx context.Context, s IO, o *summaryOptions) error {
	st, src, err := loadStatement(o.run, "")
	if err != nil {
		return err
	}
	dir := filepath.Dir(src)
	run := &actions.Run{Dir: dir, StatementPath: filepath.Join(dir, "statement.json"), Delivery: st.Predicate}
	if _, err := os.Stat(filepath.Join(dir, "evidence.json")); err == nil {
		run.BundlePath = filepath.Join(dir, "evidence.json")
	}
	if repo, err := git.Open(ctx, o.repo); err == nil {
		if run.Tracked, err = repo.TrackedFiles(ctx, run.Delivery.Candidate.Head); err != nil {
			fmt.Fprintln(s.Err, "runmill: listing the candidate's files for the summary:", err)
		}
	}
	rt := actions.New(s.Err, s.Err, os.Getenv)
	switch {
	case o.githubActions:
		if err := rt.WriteSummary(run, o.out); err != nil {
			return err
		}
	default:
		md, err := rt.SummaryMarkdown(run)
		if err != nil {
			return err
		}
		if o.out == "" {
			_, err = fmt.Fprint(s.Out, md)
			return err
		}
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "writing the summary").At(o.out, 0)
		}
	}
	if o.comment {
		postComment(ctx, s, o, run, rt.Where())
	}
	return nil
}

// postComment writes the sticky comment, saying on stderr (as a workflow
// warning) why not when it cannot.
func postComment(ctx context.Context, s IO, o *summaryOptions, run *actions.Run, where actions.Where) {
	warn := func(format string, args ...any) {
		fmt.Fprintf(s.Err, "::warning title=runmill (no pull-request comment)::"+format+"\n", args...)
	}
	repo := o.githubRepo
	if repo == "" {
		repo = os.Getenv("GITHUB_REPOSITORY")
	}
	pr := o.pr
	if pr == 0 {
		n, err := eventPullRequest(os.Getenv("GITHUB_EVENT_PATH"))
		if err != nil {
			warn("%s", oneLineErr(err))
			return
		}
		pr = n
	}
	if pr == 0 {
		pr = run.Delivery.Candidate.PullRequest
	}
	owner, name, err := github.SplitRepository(repo)
	if err != nil || pr <= 0 {
		warn("no pull request to comment on (this event names none; pass --pr and --github-repo)")
		return
	}
	c, err := github.New(github.Options{Token: os.Getenv("GITHUB_TOKEN"), BaseURL: workflowContext(os.Getenv).APIURL})
	if err != nil {
		warn("no GitHub token (the github-token input, GITHUB_TOKEN)")
		return
	}
	id, created, err := c.StickyComment(ctx, owner, name, pr, actions.CommentMarker(where.Artifact), actions.Comment(run, where))
	switch {
	case err != nil && github.ReadOnly(err):
		warn("the token cannot write to pull request #%d (a fork's pull request gets a read-only token; elsewhere give the job permissions: pull-requests: write). The verdict is unaffected", pr)
	case err != nil:
		warn("%s. The verdict is unaffected", oneLineErr(err))
	case created:
		fmt.Fprintf(s.Err, "runmill: commented on pull request #%d (comment %d)\n", pr, id)
	default:
		fmt.Fprintf(s.Err, "runmill: updated the comment %d on pull request #%d\n", id, pr)
	}
}

func oneLineErr(err error) string {
	return strings.ReplaceAll(strings.ReplaceAll(err.Error(), "\r", " "), "\n", " ")
}
