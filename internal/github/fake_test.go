package github_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runmill/verify/internal/github"
)

const (
	testToken = "ghs_test-token"
	owner     = "acme"
	repo      = "widget"
	headSHA   = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
)

// exchange is one expected request and its recorded answer.
type exchange struct {
	path   string // escaped path
	query  string // canonical (url.Values.Encode)
	status int
	file   string // under testdata/; "" for an empty body
	header map[string]string
}

// fakeGitHub serves recorded GitHub answers in the order registered. It fails
// the test on any request that is not the next expected one, and on any
// registered answer that was never requested: a test that passes while
// runmill skipped a call, or made one too many, would prove nothing.
type fakeGitHub struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	want []exchange
}

func newFake(t *testing.T) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.want {
			t.Errorf("registered answer never requested: GET %s?%s", e.path, e.query)
		}
	})
	return f
}

func (f *fakeGitHub) expect(path, query string, status int, file string, header ...string) {
	q, err := url.ParseQuery(query)
	if err != nil {
		f.t.Fatal(err)
	}
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	f.mu.Lock()
	f.want = append(f.want, exchange{path: path, query: q.Encode(), status: status, file: file, header: h})
	f.mu.Unlock()
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.Query().Encode()
	if len(f.want) == 0 {
		f.t.Errorf("unexpected request %s", got)
		http.Error(w, "unexpected", http.StatusTeapot)
		return
	}
	e := f.want[0]
	if want := "GET " + e.path + "?" + e.query; got != want {
		f.t.Errorf("request %s; want %s", got, want)
		http.Error(w, "unexpected", http.StatusTeapot)
		return
	}
	f.want = f.want[1:]
	if a := r.Header.Get("Authorization"); a != "Bearer "+testToken {
		f.t.Errorf("%s: Authorization %q", got, a)
	}
	for k, v := range e.header {
		w.Header().Set(k, strings.ReplaceAll(v, "{base}", f.srv.URL))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.status)
	if e.file != "" {
		b, err := os.ReadFile(filepath.Join("testdata", e.file))
		if err != nil {
			f.t.Errorf("reading fixture: %v", err)
			return
		}
		_, _ = w.Write(b)
	}
}

func (f *fakeGitHub) client(t *testing.T, clock github.Clock) *github.Client {
	t.Helper()
	c, err := github.New(github.Options{Token: testToken, BaseURL: f.srv.URL, HTTPClient: f.srv.Client(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Paths and queries of the endpoints, as go-github sends them.
var (
	branchPath    = "/repos/acme/widget/branches/main"
	rulesPath     = "/repos/acme/widget/rules/branches/main"
	rulesQuery    = "per_page=100&page=1"
	checkRunsPath = "/repos/acme/widget/commits/" + headSHA + "/check-runs"
	checkRunsQ    = "filter=all&per_page=100"
	statusesPath  = "/repos/acme/widget/commits/" + headSHA + "/statuses"
	statusesQ     = "per_page=100"
)

// observe registers one reconciliation's requests: check runs then statuses.
func (f *fakeGitHub) observe(runs, statuses string) {
	f.expect(checkRunsPath, checkRunsQ, 200, runs)
	f.expect(statusesPath, statusesQ, 200, statuses)
}

// fakeClock advances only when told to or when something waits on it, so
// the 10-minute window and every backoff take no wall time.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	waited []time.Duration
}

var epoch = time.Date(2026, 11, 30, 6, 10, 0, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waited = append(c.waited, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var _ github.Clock = (*fakeClock)(nil)
