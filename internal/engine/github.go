package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// GitHubOptions say how a run consults GitHub. A nil *GitHubOptions means
// not at all: no call is made, and the evidence records that the GitHub
// sources were not consulted.
type GitHubOptions struct {
	Client      *github.Client
	Owner, Repo string
	// PullRequest is the pull request number; 0 for a commit outside one,
	// when Branch names the base branch whose protection applies.
	PullRequest int64
	Branch      string
	// Exclude names runmill's own job (its check-run name): it is itself a
	// required context, and its result is the verdict being taken.
	Exclude []string
	// Window, PollInterval and MaxWait of remote reconciliation (spec §
	// Remote checks: 10 minutes to be scheduled; scheduled runs are waited
	// for up to MaxWait); the package defaults when zero.
	Window, PollInterval, MaxWait time.Duration
	// CheckRun, when not empty, names a check run created on the candidate
	// with the verdict and line annotations (needs checks: write; off by
	// default because fork pull requests get read-only tokens).
	CheckRun string
}

// Rules of the findings this file adds (record.Finding.Rule).
const (
	RuleGitHubNotConsulted = "github.not-consulted"
	RuleGitHubUnknown      = "github.contexts-unknown"
	RuleGitHubHeadMoved    = "github.head-mismatch"
)

// githubFacts is one independent observation of GitHub: what Verify records
// and what Expect holds a bundle to, read the same way by both.
type githubFacts struct {
	repo     evidence.Repository
	pr       *github.PullRequest // nil outside a pull request
	contexts github.Contexts
}

func observeGitHub(ctx context.Context, g *GitHubOptions) (*githubFacts, error) {
	if g.Client == nil || g.Owner == "" || g.Repo == "" {
		return nil, rmerr.New(rmerr.GitHubOptions, "consulting GitHub needs a client and the repository OWNER/NAME")
	}
	f := &githubFacts{}
	branch := g.Branch
	if g.PullRequest > 0 {
		pr, err := g.Client.PullRequest(ctx, g.Owner, g.Repo, g.PullRequest)
		if err != nil {
			return nil, err
		}
		f.pr = &pr
		f.repo = evidence.Repository{Name: pr.Repository, ID: pr.RepositoryID}
		branch = pr.BaseRef
	} else {
		if branch == "" {
			return nil, rmerr.New(rmerr.GitHubOptions, "consulting GitHub outside a pull request needs the base branch").
				WithHint("pass --pr N, or --github-branch with the branch whose protection applies")
		}
		name, id, err := g.Client.Repository(ctx, g.Owner, g.Repo)
		if err != nil {
			return nil, err
		}
		f.repo = evidence.Repository{Name: name, ID: id}
	}
	var err error
	if f.contexts, err = g.Client.RequiredContexts(ctx, g.Owner, g.Repo, branch); err != nil {
		return nil, err
	}
	return f, nil
}

// apply hands the observed contexts to Discovery as the github source,
// without runmill's own job, and records what was unknown or excluded.
func (f *githubFacts) apply(o *DiscoverOptions, exclude []string) {
	o.GitHubConsulted = true
	o.GitHubContexts = []string{}
	for _, c := range f.contexts.Names {
		if slices.Contains(exclude, c) {
			o.GitHubExcluded = append(o.GitHubExcluded, c)
			continue
		}
		o.GitHubContexts = append(o.GitHubContexts, c)
	}
	for _, s := range f.contexts.Sources {
		if !s.Known {
			o.GitHubUnknown = append(o.GitHubUnknown, discovery.UnknownSource{Name: s.Name, Reason: s.Reason})
		}
	}
}

func (f *githubFacts) reviews() []evidence.Review {
	out := []evidence.Review{}
	if f == nil || f.pr == nil {
		return out
	}
	for _, r := range f.pr.Reviews {
		out = append(out, evidence.Review{Reviewer: r.Reviewer, State: r.State, Commit: r.Commit})
	}
	return out
}

// author is the pull request's author, "" outside one.
func (f *githubFacts) author() string {
	if f == nil || f.pr == nil {
		return ""
	}
	return f.pr.Author
}

// approvals are the approving reviews as an expectations document lists
// them: distinct, sorted.
func (f *githubFacts) approvals() []evidence.Approval {
	out := []evidence.Approval{}
	if f == nil || f.pr == nil {
		return out
	}
	for _, r := range f.pr.Reviews {
		if a := (evidence.Approval{Reviewer: r.Reviewer, Commit: r.Commit}); r.State == "approved" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b evidence.Approval) int {
		return cmp.Or(cmp.Compare(a.Reviewer, b.Reviewer), cmp.Compare(a.Commit, b.Commit))
	})
	return out
}

// githubFindings are the verdict inputs the GitHub sources decide before
// reconciliation: not consulted although the operator requires them, some
// required contexts unknown, and a pull request whose head is not the
// candidate.
func githubFindings(m *discovery.Manifest, required bool, f *githubFacts) []record.Finding {
	var out []record.Finding
	switch {
	case required && !m.GitHub.Consulted:
		out = append(out, record.Finding{Code: rmerr.GitHubNotConsulted, Rule: RuleGitHubNotConsulted,
			Message: "the operator policy requires the GitHub sources, but this run did not consult them (no token, or --no-github)",
			Hint:    "pass --github-token (or GITHUB_TOKEN) with contents: read, checks: read and statuses: read, or drop github.required from the operator policy"})
	case required && len(m.GitHub.Unknown) > 0:
		for _, u := range m.GitHub.Unknown {
			out = append(out, record.Finding{Code: rmerr.GitHubNotConsulted, Rule: RuleGitHubUnknown, Check: u.Name,
				Message: fmt.Sprintf("the required contexts of %s are unknown: %s", u.Name, u.Reason),
				Hint:    "give the token read access to the branch's protection and rulesets (contents: read), or drop github.required from the operator policy"})
		}
	}
	if f != nil && f.pr != nil && f.pr.Head != m.Candidate {
		out = append(out, record.Finding{Rule: RuleGitHubHeadMoved,
			Message: fmt.Sprintf("pull request #%d's head is %s, not the candidate %s", f.pr.Number, f.pr.Head, m.Candidate),
			Hint:    "verify the pull request's current head; a run on an older head says nothing about the one that would merge"})
	}
	return out
}

// remoteContexts are the required github-sourced checks reconciliation
// judges.
func remoteContexts(m *discovery.Manifest) []string {
	var out []string
	for _, c := range m.Checks {
		if c.Required && c.HasSource(discovery.SourceGitHub) {
			out = append(out, c.ID)
		}
	}
	return out
}

// reconcile waits for the remote contexts on the candidate (spec § Remote
// checks) and records the outcome in d.
func reconcile(ctx context.Context, g *GitHubOptions, d *evidence.Delivery, logf func(string, ...any)) error {
	names := remoteContexts(&d.Manifest)
	if len(names) == 0 {
		return nil
	}
	r, err := g.Client.Reconciler(github.ReconcileOptions{Owner: g.Owner, Repo: g.Repo, Exclude: g.Exclude,
		Window: g.Window, PollInterval: g.PollInterval, MaxWait: g.MaxWait})
	if err != nil {
		return err
	}
	logf("reconciling %d required GitHub contexts on %s", len(names), d.Candidate.Head)
	res, err := r.Wait(ctx, names, d.Candidate.Head)
	if err != nil {
		return err
	}
	d.Remote = append(d.Remote, res.Remote...)
	d.PendingContexts = append(d.PendingContexts, res.Pending...)
	d.Failures = append(d.Failures, res.Findings...)
	for _, rr := range res.Remote {
		logf("remote context %s: %s", rr.Context, rr.Conclusion)
	}
	for _, p := range res.Pending {
		logf("remote context %s: still pending at the end of the window", p)
	}
	return nil
}

// publishCheckRun creates the optional check run. A refusal (a fork's
// read-only token) is logged, not fatal: the check run is a convenience, the
// job's own conclusion is the required check.
func publishCheckRun(ctx context.Context, g *GitHubOptions, runDir string, d *evidence.Delivery, logf func(string, ...any)) {
	if g.CheckRun == "" {
		return
	}
	r := github.CheckRunReport{Name: g.CheckRun, HeadSHA: d.Candidate.Head, Conclusion: "failure", Title: "runmill: not merge-ready"}
	if d.Verdict.MergeReady {
		r.Conclusion, r.Title = "success", "runmill: merge-ready"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** for %s (run %s).\n\n", r.Title, d.Candidate.Head, d.RunID)
	// One line per cause, as the job summary has it (explain.Causes): an
	// exit code its failing tests explain is folded into them.
	for _, c := range explain.Causes(d) {
		f := c.Finding
		code := string(f.Code)
		if code == "" {
			code = f.Rule
		}
		msg := f.Message
		if c.ExitCode != 0 {
			msg += fmt.Sprintf(" (the check exited with code %d)", c.ExitCode)
		}
		fmt.Fprintf(&b, "- `%s` %s: %s\n", code, f.Check, msg)
		if f.File != "" && f.Line > 0 {
			r.Annotations = append(r.Annotations, github.Annotation{Path: f.File, StartLine: f.Line, EndLine: f.Line,
				Level: "failure", Title: code + " " + f.Check, Message: f.Message + "\n" + f.Hint})
		}
	}
	r.Annotations = append(r.Annotations, failedTestAnnotations(runDir, d)...)
	// The Checks API caps a summary at 65 535 characters.
	r.Summary = b.String()
	if len(r.Summary) > 60_000 {
		cut := 60_000
		for cut > 0 && !utf8.RuneStart(r.Summary[cut]) {
			cut--
		}
		r.Summary = r.Summary[:cut] + "\n… truncated; the full list is in the evidence bundle\n"
	}
	id, err := g.Client.CreateCheckRun(ctx, g.Owner, g.Repo, r)
	if err != nil {
		logf("check run %q not created (it needs checks: write): %v", g.CheckRun, err)
		return
	}
	logf("check run %q (id %d): %s, %d annotations", g.CheckRun, id, r.Conclusion, len(r.Annotations))
}

// maxTestAnnotations bounds the failed-test annotations of one check run
// (each 50 cost a request); the summary and the bundle list every failure.
const maxTestAnnotations = 500

// failedTestAnnotations annotates the failed tests of the candidate runs at
// the file and line their report gives. The evidence keeps test ids only, so
// the reports are read again from the run's content-addressed store.
func failedTestAnnotations(runDir string, d *evidence.Delivery) []github.Annotation {
	var out []github.Annotation
	for _, c := range d.Checks {
		rep := c.Report
		if c.Phase != record.Candidate || rep == nil || rep.Inventory == nil || len(rep.Inventory.Failed) == 0 {
			continue
		}
		for _, t := range explain.StoredFailedTests(runDir, &c) {
			if t.File == "" || len(out) >= maxTestAnnotations {
				continue
			}
			line := max(t.Line, 1)
			out = append(out, github.Annotation{Path: t.File, StartLine: line, EndLine: line, Level: "failure",
				Title: fmt.Sprintf("%s: %s failed", c.CheckID, t.ID), Message: cmp.Or(t.Message, "the test failed")})
		}
	}
	return out
}
