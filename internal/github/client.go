// Package github reads what GitHub knows about a pull request's checks: the
// contexts the base branch requires (branch protection and rulesets) and the
// conclusions of check runs and commit statuses on the candidate head SHA,
// reconciled by spec § Remote checks (issue 6 item 3).
//
// Without a token runmill makes no GitHub call at all: New refuses an empty
// token, so a caller has to decide explicitly to skip the GitHub sources and
// record that they were not consulted.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runmill/verify/pkg/rmerr"
)

// Clock is the time source for backoff, polling and the RM-CI-002 window.
// It is injected so tests advance time without sleeping.
type Clock interface {
	Now() time.Time
	// After fires once d has elapsed on this clock.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

var _ Clock = realClock{}

// DefaultBaseURL is GitHub.com's REST API root; on Actions the caller passes
// GITHUB_API_URL instead (GitHub Enterprise Server lives under /api/v3).
const DefaultBaseURL = "https://api.github.com/"

// DefaultRetryWindow bounds how long one request is retried on rate limits
// and 5xx answers when no reconciliation window applies. It equals the spec's
// 10-minute scheduling window so no single request outlives it.
const DefaultRetryWindow = 10 * time.Minute

// Options configure a Client. Everything is explicit: this package never
// reads the environment, so a test or a local run cannot reach GitHub by
// accident.
type Options struct {
	// Token authenticates every request. Required.
	Token string
	// BaseURL is the REST API root (GITHUB_API_URL); DefaultBaseURL when empty.
	BaseURL string
	// HTTPClient carries the transport (proxies, test servers); its
	// Transport is wrapped with the retry layer. http.DefaultClient when nil.
	HTTPClient *http.Client
	// Clock defaults to the wall clock.
	Clock Clock
	// RetryWindow bounds retries of one request outside a reconciliation
	// window; DefaultRetryWindow when zero.
	RetryWindow time.Duration
}

// Client talks to one GitHub API.
type Client struct {
	gh *gh.Client
	// blob fetches what the API redirects to (artifact archives on blob
	// storage): same transport and retries, never the token.
	blob        *http.Client
	clock       Clock
	retryWindow time.Duration

	mu    sync.Mutex
	calls []string
}

// Calls lists every HTTP request the client made, retries included, in
// order: the side-effect ledger of a run records them.
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *Client) record(call string) {
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
}

// New returns a Client, or an RM-GITHUB-001 error for options that cannot
// work. An empty token is refused rather than sent anonymously: anonymous
// calls would silently see less (no protection, 60 requests an hour).
func New(opts Options) (*Client, error) {
	if strings.TrimSpace(opts.Token) == "" {
		return nil, rmerr.New(rmerr.GitHubOptions, "no GitHub token").
			WithHint("pass a token, or skip the GitHub sources so the evidence records they were not consulted")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, rmerr.New(rmerr.GitHubOptions, "GitHub API base URL %q is not an absolute http(s) URL", base).
			WithHint("pass GITHUB_API_URL, e.g. https://api.github.com")
	}
	// go-github resolves paths against BaseURL and requires the trailing
	// slash; GITHUB_API_URL has none. WithEnterpriseURLs is not used because
	// it appends /api/v3/ to a URL that already ends in it on GHES.
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if opts.RetryWindow < 0 {
		return nil, rmerr.New(rmerr.GitHubOptions, "negative retry window %s", opts.RetryWindow)
	}
	c := &Client{clock: opts.Clock, retryWindow: opts.RetryWindow}
	if c.clock == nil {
		c.clock = realClock{}
	}
	if c.retryWindow == 0 {
		c.retryWindow = DefaultRetryWindow
	}
	hc := http.Client{}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	}
	base2 := hc.Transport
	if base2 == nil {
		base2 = http.DefaultTransport
	}
	// Retrying below go-github rather than above it keeps go-github from
	// ever seeing a rate-limit answer it would remember against the wall
	// clock (it refuses further requests until the real reset time, which an
	// injected clock cannot advance).
	hc.Transport = &retryTransport{base: base2, clock: c.clock, record: c.record}
	blob := hc
	c.blob = &blob
	c.gh = gh.NewClient(&hc).WithAuthToken(opts.Token)
	c.gh.BaseURL = u
	return c, nil
}

// withRetryDeadline bounds the retries of every request made with ctx,
// unless an earlier bound is already set (a reconciliation window).
func (c *Client) withRetryDeadline(ctx context.Context, d time.Time) context.Context {
	if prev, ok := ctx.Value(retryDeadlineKey{}).(time.Time); ok && !prev.After(d) {
		return ctx
	}
	return context.WithValue(ctx, retryDeadlineKey{}, d)
}

// apiError wraps a failed request as RM-GITHUB-002.
func apiError(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	return rmerr.Wrap(rmerr.GitHubAPI, err, format, args...)
}

// statusOf returns the HTTP status of a go-github answer, or 0.
func statusOf(resp *gh.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
