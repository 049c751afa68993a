package github_test

import (
	"testing"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/githubtest"
)

const (
	testToken = githubtest.Token
	owner     = "acme"
	repo      = "widget"
	headSHA   = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
)

// fakeGitHub is the shared fake (internal/githubtest) with this package's
// shorthands.
type fakeGitHub struct{ *githubtest.Server }

func newFake(t *testing.T) *fakeGitHub { return &fakeGitHub{githubtest.New(t)} }

func (f *fakeGitHub) expect(path, query string, status int, file string, header ...string) {
	f.Expect(path, query, status, file, header...)
}

func (f *fakeGitHub) client(t *testing.T, clock github.Clock) *github.Client {
	t.Helper()
	c, err := github.New(github.Options{Token: testToken, BaseURL: f.URL(), HTTPClient: f.Client(), Clock: clock})
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

type fakeClock = githubtest.Clock

var epoch = githubtest.Epoch

func newClock() *fakeClock { return githubtest.NewClock() }

var _ github.Clock = (*fakeClock)(nil)
