// Package githubtest is the one fake of GitHub's REST API that runmill's tests
// use: an httptest server that answers with recorded GitHub responses (the
// JSON files under internal/github/testdata) in the order a test registers
// them. It fails the test on any request that is not the next expected one and
// on any registered answer that was never requested, so a test that passes
// while runmill skipped a call, or made one too many, proves nothing and fails.
//
// It is the only fake the project allows (docs: real parts, not mocks, except
// GitHub's HTTP API).
package githubtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the token every authenticated request must carry.
const Token = "ghs_test-token"

// Exchange is one expected request and its recorded answer.
type Exchange struct {
	Method string // GET when empty
	Path   string // escaped path
	Query  string // as url.Values would encode it; order does not matter
	Status int
	// File is a recorded answer under Testdata; "" with Body nil for an
	// empty body.
	File string
	// Body is served instead of File (zip bytes of an artifact).
	Body []byte
	// Header is set on the answer; "{base}" in a value becomes the fake's URL.
	Header map[string]string
	// NoAuth: the request must carry no Authorization header at all (blob
	// storage behind a redirect must never see the token).
	NoAuth bool
	// Check inspects the request body of a POST or PATCH.
	Check func(t testing.TB, body []byte)
}

// Server is the fake.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	mu   sync.Mutex
	want []Exchange
	// Requests counts every request the server received.
	requests int
	subst    []string // old, new pairs applied to recorded answers
}

// Replace substitutes new for every old in the recorded answers served from
// now on: fixtures say {head} where a test's real commit id belongs.
func (f *Server) Replace(old, new string) {
	f.mu.Lock()
	f.subst = append(f.subst, old, new)
	f.mu.Unlock()
}

// Testdata is the directory of recorded answers.
var Testdata = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "github", "testdata")
}()

// New starts a fake that is closed, and checked for unused answers, when the
// test ends.
func New(t testing.TB) *Server {
	t.Helper()
	f := &Server{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.want {
			t.Errorf("registered answer never requested: %s %s?%s", method(e), e.Path, e.Query)
		}
	})
	return f
}

// URL is the API root (GITHUB_API_URL).
func (f *Server) URL() string { return f.srv.URL }

// Client is an http.Client that reaches the fake.
func (f *Server) Client() *http.Client { return f.srv.Client() }

// Requests is how many requests the fake received.
func (f *Server) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// Expect registers a GET answered from a recorded file; header is key, value
// pairs.
func (f *Server) Expect(path, query string, status int, file string, header ...string) {
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	f.Add(Exchange{Path: path, Query: query, Status: status, File: file, Header: h})
}

// Add registers any exchange.
func (f *Server) Add(e Exchange) {
	q, err := url.ParseQuery(e.Query)
	if err != nil {
		f.t.Fatal(err)
	}
	e.Query = q.Encode()
	f.mu.Lock()
	f.want = append(f.want, e)
	f.mu.Unlock()
}

func method(e Exchange) string {
	if e.Method == "" {
		return http.MethodGet
	}
	return e.Method
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	got := r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.Query().Encode()
	if len(f.want) == 0 {
		f.t.Errorf("unexpected request %s", got)
		http.Error(w, "unexpected", http.StatusTeapot)
		return
	}
	e := f.want[0]
	if want := method(e) + " " + e.Path + "?" + e.Query; got != want {
		f.t.Errorf("request %s; want %s", got, want)
		http.Error(w, "unexpected", http.StatusTeapot)
		return
	}
	f.want = f.want[1:]
	a := r.Header.Get("Authorization")
	switch {
	case e.NoAuth && a != "":
		f.t.Errorf("%s: carries Authorization %q; the token must not leave the API host", got, a)
	case !e.NoAuth && a != "Bearer "+Token:
		f.t.Errorf("%s: Authorization %q", got, a)
	}
	if e.Check != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			f.t.Errorf("%s: reading body: %v", got, err)
		}
		e.Check(f.t, b)
	}
	for k, v := range e.Header {
		w.Header().Set(k, strings.ReplaceAll(v, "{base}", f.srv.URL))
	}
	if e.Body != nil {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/zip")
		}
		w.WriteHeader(e.Status)
		_, _ = w.Write(e.Body)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	if e.File != "" {
		b, err := os.ReadFile(filepath.Join(Testdata, e.File))
		if err != nil {
			f.t.Errorf("reading fixture: %v", err)
			return
		}
		if len(f.subst) > 0 {
			b = []byte(strings.NewReplacer(f.subst...).Replace(string(b)))
		}
		_, _ = w.Write(b)
	}
}

// Clock advances only when told to or when something waits on it, so the
// 10-minute window and every backoff take no wall time. It satisfies
// internal/github's Clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	waited []time.Duration
}

// Epoch is where every Clock starts.
var Epoch = time.Date(2026, 11, 30, 6, 10, 0, 0, time.UTC)

// NewClock returns a Clock at Epoch.
func NewClock() *Clock { return &Clock{now: Epoch} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After advances the clock by d at once and fires.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waited = append(c.waited, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Advance moves the clock without a waiter.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Waited lists every wait, in order.
func (c *Clock) Waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waited...)
}
