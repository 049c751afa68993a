package github

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Spec § Remote checks: "After 10 minutes with no run scheduled, the run
// escalates with RM-CI-002 rather than waiting forever."
const (
	DefaultWindow       = 10 * time.Minute
	DefaultPollInterval = 30 * time.Second
	// DefaultMaxWait bounds how long Wait waits for contexts that were
	// scheduled but are still queued or running. The spec makes only the
	// never-scheduled case a failure at 10 minutes; a scheduled run is worth
	// waiting for, since GitHub will not re-run runmill when it finishes.
	DefaultMaxWait = 30 * time.Minute
)

// RuleNeverScheduled is the Finding.Rule of an RM-CI-002 escalation.
const RuleNeverScheduled = "ci.never-scheduled"

// ReconcileOptions configure a Reconciler.
type ReconcileOptions struct {
	Owner, Repo string
	// Exclude names runmill's own job: it is itself a required check, and
	// waiting on it from inside it would never end. Excluded contexts are
	// neither results nor pending; Result.Excluded lists them.
	Exclude []string
	// Window is how long a required context may go unscheduled before
	// RM-CI-002; DefaultWindow when zero.
	Window time.Duration
	// PollInterval is Wait's pause between reconciliations;
	// DefaultPollInterval when zero.
	PollInterval time.Duration
	// MaxWait is how long after the first observation Wait keeps waiting
	// for scheduled contexts that have not concluded; DefaultMaxWait when
	// zero, and never less than Window.
	MaxWait time.Duration
}

// Reconciler reconciles one repository's remote checks over time. It
// remembers when it first observed each head SHA, which starts the window.
type Reconciler struct {
	c    *Client
	opts ReconcileOptions

	mu    sync.Mutex
	first map[string]time.Time // head SHA → first observation
	// escalated remembers RM-CI-002 per head SHA and context: a context
	// that shows up after the window (while Wait still waits for others)
	// was still never scheduled in time, and the finding stands.
	escalated map[string]map[string]bool
}

// Reconciler returns a Reconciler, or an RM-GITHUB-001 error for impossible
// options.
func (c *Client) Reconciler(opts ReconcileOptions) (*Reconciler, error) {
	if opts.Owner == "" || opts.Repo == "" {
		return nil, rmerr.New(rmerr.GitHubOptions, "reconciliation needs the repository owner and name")
	}
	if opts.Window < 0 || opts.PollInterval < 0 || opts.MaxWait < 0 {
		return nil, rmerr.New(rmerr.GitHubOptions, "negative window %s, poll interval %s or maximum wait %s", opts.Window, opts.PollInterval, opts.MaxWait)
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	opts.MaxWait = max(opts.MaxWait, opts.Window)
	opts.Exclude = slices.Clone(opts.Exclude)
	return &Reconciler{c: c, opts: opts, first: map[string]time.Time{}, escalated: map[string]map[string]bool{}}, nil
}

// Result is one reconciliation of the required contexts.
type Result struct {
	// Remote holds the conclusion of the most recent run of each resolved
	// required context, one entry per producer (check run, commit status),
	// sorted by context. It is verdict.Input.Remote.
	Remote []record.RemoteResult `json:"remote"`
	// Pending are required contexts still inside the window: queued or in
	// progress, or not scheduled yet. It is verdict.Input.PendingContexts.
	Pending []string `json:"pending"`
	// Findings are RM-CI-002 escalations (Check = context). They go to
	// verdict.Input.Failures.
	Findings []record.Finding `json:"findings"`
	// Excluded are required contexts skipped as runmill's own job. The
	// caller leaves them out of the verdict's requirements: runmill's own
	// verdict is what that context will report.
	Excluded []string `json:"excluded,omitempty"`
}

// run is the most recent producer of a context.
type run struct {
	id        int64
	completed bool
	concl     record.Conclusion
}

// Reconcile observes the check runs and commit statuses of headSHA once and
// judges every required context (spec § Remote checks):
//
//   - only success passes; neutral and skipped are passed on as such, and the
//     verdict does not count them as coverage although GitHub's merge gating
//     does;
//   - failure, cancelled, timed_out, action_required and stale fail, as do a
//     commit status's failure and error;
//   - a queued or in-progress run, or a pending status, is pending;
//   - a context with no run at all is pending until Window after the first
//     observation of headSHA, then an RM-CI-002 finding.
//
// Re-runs leave several check runs (or statuses) with one name; the most
// recent counts, not the best: an older success does not cover a newer
// failure. "Most recent" is the highest id. GitHub assigns ids in creation
// order, while started_at and completed_at are set by the app that reports the
// run (they may be backdated, equal to the second, or absent while queued).
func (r *Reconciler) Reconcile(ctx context.Context, required []string, headSHA string) (Result, error) {
	if headSHA == "" {
		return Result{}, rmerr.New(rmerr.GitHubOptions, "reconciliation needs the candidate head SHA")
	}
	now := r.c.clock.Now()
	r.mu.Lock()
	start, seen := r.first[headSHA]
	if !seen {
		start = now
		r.first[headSHA] = now
	}
	r.mu.Unlock()
	// Retries never outlast the window, but a request made at its very end
	// still gets a minute so the final observation is not lost to one 5xx.
	ctx = r.c.withRetryDeadline(ctx, maxTime(start.Add(r.opts.Window), now.Add(time.Minute)))

	runs, err := r.checkRuns(ctx, headSHA)
	if err != nil {
		return Result{}, err
	}
	statuses, err := r.statuses(ctx, headSHA)
	if err != nil {
		return Result{}, err
	}

	res := Result{Remote: []record.RemoteResult{}, Pending: []string{}, Findings: []record.Finding{}}
	req := slices.Clone(required)
	slices.Sort(req)
	for _, name := range slices.Compact(req) {
		if slices.Contains(r.opts.Exclude, name) {
			res.Excluded = append(res.Excluded, name)
			continue
		}
		var producers []run
		for _, m := range []map[string]run{runs, statuses} {
			if p, ok := m[name]; ok {
				producers = append(producers, p)
			}
		}
		r.mu.Lock()
		late := r.escalated[headSHA][name] || (len(producers) == 0 && !now.Before(start.Add(r.opts.Window)))
		if late {
			if r.escalated[headSHA] == nil {
				r.escalated[headSHA] = map[string]bool{}
			}
			r.escalated[headSHA][name] = true
		}
		r.mu.Unlock()
		switch {
		case late:
			res.Findings = append(res.Findings, record.Finding{
				Code: rmerr.CINeverScheduled, Rule: RuleNeverScheduled, Check: name,
				Message: fmt.Sprintf("required context %q was never scheduled on %s within %s", name, headSHA, r.opts.Window),
				Hint:    "make a workflow report this context for this branch (its trigger and path filters must match), or remove it from the required checks",
			})
		case len(producers) == 0 || slices.ContainsFunc(producers, func(p run) bool { return !p.completed }):
			// A producer still running means the context has not concluded,
			// even if another producer of the same name already has.
			res.Pending = append(res.Pending, name)
		default:
			for _, p := range producers {
				res.Remote = append(res.Remote, record.RemoteResult{Context: name, Conclusion: p.concl})
			}
		}
	}
	return res, nil
}

// Wait reconciles until no required context is pending, pausing
// PollInterval on the injected clock between observations. At the window's
// end (10 minutes after the first observation of headSHA) contexts never
// scheduled become RM-CI-002 findings; contexts that were scheduled and are
// still queued or running are waited for until MaxWait, then stay Pending,
// which the verdict reads as not merge-ready.
func (r *Reconciler) Wait(ctx context.Context, required []string, headSHA string) (Result, error) {
	for {
		res, err := r.Reconcile(ctx, required, headSHA)
		if err != nil || len(res.Pending) == 0 {
			return res, err
		}
		r.mu.Lock()
		first := r.first[headSHA]
		r.mu.Unlock()
		// Before the window ends a pending context may be unscheduled, so
		// the next observation must come no later than the window's end;
		// after it, every pending context is a scheduled one.
		end := first.Add(r.opts.Window)
		if !r.c.clock.Now().Before(end) {
			end = first.Add(r.opts.MaxWait)
		}
		left := end.Sub(r.c.clock.Now())
		if left <= 0 {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-r.c.clock.After(min(r.opts.PollInterval, left)):
		}
	}
}

// checkRuns returns the most recent check run per name on headSHA.
// filter=all: GitHub's default (latest) picks by completed_at,
// which hides a queued re-run behind its completed predecessor.
func (r *Reconciler) checkRuns(ctx context.Context, headSHA string) (map[string]run, error) {
	out := map[string]run{}
	opts := &gh.ListCheckRunsOptions{Filter: gh.String("all"), ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		page, resp, err := r.c.gh.Checks.ListCheckRunsForRef(ctx, r.opts.Owner, r.opts.Repo, headSHA, opts)
		if err != nil {
			return nil, apiError(err, "listing check runs of %s/%s@%s", r.opts.Owner, r.opts.Repo, headSHA)
		}
		for _, cr := range page.CheckRuns {
			if cr == nil || cr.GetName() == "" || (cr.HeadSHA != nil && cr.GetHeadSHA() != headSHA) {
				continue
			}
			cand := run{id: cr.GetID(), completed: cr.GetStatus() == "completed", concl: record.Conclusion(cr.GetConclusion())}
			if prev, ok := out[cr.GetName()]; !ok || cand.id > prev.id {
				out[cr.GetName()] = cand
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// statuses returns the most recent commit status per context on headSHA.
// ListStatuses rather than GetCombinedStatus: the combined view already
// collapses contexts, but its state for a context gives no id to order by
// against a re-reported status, and it pages differently.
func (r *Reconciler) statuses(ctx context.Context, headSHA string) (map[string]run, error) {
	out := map[string]run{}
	opts := &gh.ListOptions{PerPage: 100}
	for {
		page, resp, err := r.c.gh.Repositories.ListStatuses(ctx, r.opts.Owner, r.opts.Repo, headSHA, opts)
		if err != nil {
			return nil, apiError(err, "listing commit statuses of %s/%s@%s", r.opts.Owner, r.opts.Repo, headSHA)
		}
		for _, st := range page {
			if st == nil || st.GetContext() == "" {
				continue
			}
			cand := run{id: st.GetID(), completed: true}
			switch s := st.GetState(); s {
			case "pending":
				cand.completed = false
			case "success":
				cand.concl = record.Success
			case "failure", "error":
				// A status has no cancelled or timed_out; error is the
				// reporter failing, which proves nothing either.
				cand.concl = record.Failure
			default:
				// Unknown states reach the verdict as themselves, which it
				// fails as unrecognised rather than passing.
				cand.concl = record.Conclusion(s)
			}
			if prev, ok := out[st.GetContext()]; !ok || cand.id > prev.id {
				out[st.GetContext()] = cand
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
