package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/cli"
	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/pkg/evidence"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestGitHubThroughTheCLI drives `runmill verify`, `runmill evidence expect`
// and `runmill evidence verify` the way a workflow does: everything GitHub
// comes from the runner's variables (GITHUB_TOKEN, GITHUB_REPOSITORY,
// GITHUB_JOB, GITHUB_API_URL, and a recorded pull_request event in
// GITHUB_EVENT_PATH); the signing key from RUNMILL_SIGNING_KEY.
func TestGitHubThroughTheCLI(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base := shopRepo(t, tapPolicy)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	dir := t.TempDir()
	keyPEM, trust, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	trustFile := filepath.Join(dir, "trust.json")
	os.WriteFile(trustFile, trust, 0o644)
	event, err := os.ReadFile(filepath.Join("..", "cli", "testdata", "github", "pull_request_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	eventFile := filepath.Join(dir, "event.json")
	os.WriteFile(eventFile, []byte(strings.NewReplacer(fixtureHead, cand, "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d", base).Replace(string(event))), 0o644)

	f := githubtest.New(t)
	for _, kv := range [][2]string{{"{head}", cand}, {"{base}", base}, {"{old}", base}, {fixtureHead, cand}} {
		f.Replace(kv[0], kv[1])
	}
	t.Setenv("GITHUB_TOKEN", githubtest.Token)
	t.Setenv("GITHUB_REPOSITORY", "acme/widget")
	t.Setenv("GITHUB_JOB", "runmill")
	t.Setenv("GITHUB_API_URL", f.URL())
	t.Setenv("GITHUB_EVENT_PATH", eventFile)
	t.Setenv("RUNMILL_SIGNING_KEY", string(keyPEM))

	observePR(f)
	f.Expect("/repos/acme/widget/commits/"+cand+"/check-runs", "filter=all&per_page=100", 200, "check_runs_completed.json")
	f.Expect("/repos/acme/widget/commits/"+cand+"/statuses", "per_page=100", 200, "statuses_empty.json")
	code, stdout, stderr := runCLI(t, "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", filepath.Join(dir, "state"),
		"--containerd-address", containerdAddress, "--json")
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, githubtest.Token) {
		t.Fatal("the token was printed")
	}
	var sum struct {
		Bundle   string             `json:"bundle"`
		Delivery *evidence.Delivery `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Bundle == "" {
		t.Fatalf("verify --json: %v %s", err, stdout)
	}
	if c := sum.Delivery.Candidate; c.Repository.ID != 702187311 || c.PullRequest != 42 || len(sum.Delivery.Remote) != 1 {
		t.Fatalf("candidate %+v remote %+v", c, sum.Delivery.Remote)
	}

	// The verifier host: no --base, no --candidate; the pull request says.
	observePR(f)
	code, expDoc, stderr := runCLI(t, "evidence", "expect", "--repo", r.Dir, "--out", filepath.Join(dir, "expect-state"))
	if code != 0 {
		t.Fatalf("expect: exit %d %s", code, stderr)
	}
	expFile := filepath.Join(dir, "expect.json")
	os.WriteFile(expFile, []byte(expDoc), 0o644)
	code, res, stderr := runCLI(t, "evidence", "verify", sum.Bundle, "--trust", trustFile, "--expectations", expFile)
	var vr evidence.Result
	if code != 0 || json.Unmarshal([]byte(res), &vr) != nil || !vr.Valid {
		t.Fatalf("evidence verify: exit %d %s %s", code, res, stderr)
	}

	// The same run without a token: no request at all, and it says so.
	t.Setenv("GITHUB_TOKEN", "")
	before := f.Requests()
	code, stdout, stderr = runCLI(t, "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", filepath.Join(dir, "state"),
		"--containerd-address", containerdAddress)
	if code != 0 || f.Requests() != before {
		t.Fatalf("verify without a token: exit %d, %d GitHub requests\n%s\n%s", code, f.Requests()-before, stdout, stderr)
	}
	if !strings.Contains(stderr, "GitHub sources are NOT consulted") || !strings.Contains(stdout, "GitHub: NOT consulted") {
		t.Fatalf("the output does not say GitHub was not consulted:\n%s\n%s", stdout, stderr)
	}
}
