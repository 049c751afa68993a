package github

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type retryDeadlineKey struct{}

// Backoff for 5xx answers and for secondary rate limits that name no wait.
// GitHub asks for at least a minute after a secondary limit without
// Retry-After; 5xx answers are usually transient, so they start short.
const (
	firstBackoff     = 2 * time.Second
	maxBackoff       = time.Minute
	secondaryDefault = time.Minute
	// maxErrorBody caps how much of a 403/429 body is read to classify it.
	maxErrorBody = 64 << 10
)

// retryTransport retries rate-limited (403/429 with Retry-After or
// X-RateLimit-Remaining: 0, or a secondary-rate-limit message) and 5xx
// answers with backoff on the injected clock, until the request context's
// retry deadline. A GET is always safe to resend. A write (the optional check
// run) is resent only after a rate-limit answer, which GitHub gives before
// doing anything; after a 5xx it may have been applied, and a second check run
// would be worse than a missing one.
type retryTransport struct {
	base  http.RoundTripper
	clock Clock
	// record is told of every attempt ("GET /repos/…", no query: queries
	// carry pagination and blob signatures, not what was touched).
	record func(string)
}

// RetriesExhaustedError is returned instead of the last rate-limited or 5xx
// answer once the retry window is spent, so callers never mistake a
// rate-limit 403 for a permission 403 (which means "unknown").
type RetriesExhaustedError struct {
	Status   int
	Attempts int
	Reason   string
}

func (e *RetriesExhaustedError) Error() string {
	return fmt.Sprintf("gave up after %d attempts: %s (HTTP %d)", e.Attempts, e.Reason, e.Status)
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline, ok := ctx.Value(retryDeadlineKey{}).(time.Time)
	if !ok {
		deadline = t.clock.Now().Add(DefaultRetryWindow)
	}
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		if t.record != nil {
			t.record(req.Method + " " + req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath())
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		write := req.Method != http.MethodGet && req.Method != http.MethodHead
		if write && resp.StatusCode >= 500 {
			return resp, nil
		}
		wait, reason, retry := t.classify(resp, &backoff)
		if !retry {
			return resp, nil
		}
		if write {
			if req.GetBody == nil {
				return nil, &RetriesExhaustedError{Status: resp.StatusCode, Attempts: attempt, Reason: reason + "; the request body cannot be resent"}
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
		// The first attempt always happens; a retry only when it fits the
		// window (a wait past it would be waiting on a decision already due).
		if t.clock.Now().Add(wait).After(deadline) {
			return nil, &RetriesExhaustedError{Status: resp.StatusCode, Attempts: attempt, Reason: reason}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.clock.After(wait):
		}
	}
}

// classify decides whether resp is worth retrying and how long to wait. It
// consumes and closes resp's body when it retries, and restores it when not.
func (t *retryTransport) classify(resp *http.Response, backoff *time.Duration) (time.Duration, string, bool) {
	next := func() time.Duration {
		d := *backoff
		*backoff = min(2**backoff, maxBackoff)
		return d
	}
	switch {
	case resp.StatusCode >= 500:
		drain(resp)
		return next(), resp.Status, true
	case resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests:
		return 0, "", false
	}
	// GitHub's rate-limit answers, in the order its docs give them:
	// Retry-After wins; then X-RateLimit-Remaining: 0 waits for
	// X-RateLimit-Reset; then a secondary limit without either waits a minute.
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			drain(resp)
			*backoff = firstBackoff
			return time.Duration(n) * time.Second, "rate limited (Retry-After)", true
		}
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		wait := secondaryDefault
		if n, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			wait = max(time.Unix(n, 0).Sub(t.clock.Now()), 0) + time.Second
		}
		drain(resp)
		return wait, "primary rate limit exhausted", true
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	var msg struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url"`
	}
	_ = json.Unmarshal(body, &msg)
	if resp.StatusCode == http.StatusTooManyRequests ||
		strings.Contains(strings.ToLower(msg.Message), "secondary rate limit") ||
		strings.HasSuffix(msg.DocumentationURL, "secondary-rate-limits") ||
		strings.HasSuffix(msg.DocumentationURL, "#abuse-rate-limits") {
		return max(next(), secondaryDefault), "secondary rate limit", true
	}
	// A plain 403 is a permission answer: hand it back intact.
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return 0, "", false
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}
