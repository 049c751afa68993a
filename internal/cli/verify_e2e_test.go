package cli

// The whole pipeline driven through the real command: these tests were the
// engine's, and moved here so that internal/engine's tests do not import
// internal/cli (issue 18); the fixtures they share with the engine's are
// in internal/verifytest.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/verifytest"
	"github.com/runmill/verify/pkg/evidence"
)

// The kill -9 test re-executes this test binary as the runmill CLI; init
// runs before TestMain, so the re-executed binary starts no daemon of its
// own.
func init() {
	if os.Getenv("RUNMILL_TEST_AS_CLI") == "1" {
		os.Exit(Run(context.Background(), os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
}

// TestKilledRunIsSwept: runmill killed with SIGKILL in the middle of a check
// leaves a container, a checkout and state behind; the next run sweeps them
// and says what it removed, and no task of the killed run survives.
func TestKilledRunIsSwept(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	// A duration no other process on the machine is likely to sleep, so the
	// pgrep below finds only this test's task.
	hang := fmt.Sprintf("sleep %d.%03d", 300+os.Getpid()%100, time.Now().Nanosecond()%1000)
	pol := "checks:\n  - id: hang\n    run: " + hang + "\n"
	r, base := verifytest.ShopRepo(t, pol)
	state := t.TempDir()
	args := []string{"verify", "--repo", r.Dir, "--base", base, "--candidate", base, "--out", state, "--containerd-address", containerdAddress}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RUNMILL_TEST_AS_CLI=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	started := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "hang (candidate): starting") {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the check never started")
	}
	// The task is running (the control for the pgrep at the end).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ps, _ := exec.Command("pgrep", "-f", hang).Output(); len(strings.TrimSpace(string(ps))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the check's %q never ran", hang)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	leftovers, _ := os.ReadDir(filepath.Join(state, "checkouts"))
	if len(leftovers) == 0 {
		t.Log("note: no checkout directory left behind by the killed run")
	}
	// As root the checkouts are overlay mounts: the killed run left one.
	if m := mountsBelow(t, state); len(m) == 0 {
		t.Errorf("the killed run left no overlay mount under %s", state)
	}

	// The next run: a quick check, same state directory.
	r.Write(".runmill/checks.yaml", "checks:\n  - id: ok\n    run: \"true\"\n")
	cand := r.Commit("quick")
	cmd = exec.Command(os.Args[0], "verify", "--repo", r.Dir, "--base", cand, "--candidate", cand, "--out", state, "--containerd-address", containerdAddress)
	cmd.Env = append(os.Environ(), "RUNMILL_TEST_AS_CLI=1")
	out, _ := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "swept a leftover of an earlier run") {
		t.Fatalf("the next run did not report a sweep:\n%s", text)
	}
	for _, want := range []string{"container", "checkout", "overlay mount"} {
		if !strings.Contains(text, want) {
			t.Errorf("sweep report does not mention a %s:\n%s", want, text)
		}
	}
	if m := mountsBelow(t, state); len(m) != 0 {
		t.Errorf("mounts survive the next run: %q", m)
	}
	if ps, _ := exec.Command("pgrep", "-f", hang).Output(); len(strings.TrimSpace(string(ps))) > 0 {
		t.Errorf("the killed run's task survives: pids %s", ps)
	}
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
	r, base := verifytest.ShopRepo(t, verifytest.TAPPolicy)
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
	event, err := os.ReadFile(filepath.Join("testdata", "github", "pull_request_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	eventFile := filepath.Join(dir, "event.json")
	os.WriteFile(eventFile, []byte(strings.NewReplacer(verifytest.FixtureHead, cand, "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d", base).Replace(string(event))), 0o644)

	f := githubtest.New(t)
	for _, kv := range [][2]string{{"{head}", cand}, {"{base}", base}, {"{old}", base}, {verifytest.FixtureHead, cand}} {
		f.Replace(kv[0], kv[1])
	}
	t.Setenv("GITHUB_TOKEN", githubtest.Token)
	t.Setenv("GITHUB_REPOSITORY", "acme/widget")
	t.Setenv("GITHUB_JOB", "runmill")
	t.Setenv("GITHUB_API_URL", f.URL())
	t.Setenv("GITHUB_EVENT_PATH", eventFile)
	t.Setenv("RUNMILL_SIGNING_KEY", string(keyPEM))

	verifytest.ObservePR(f)
	f.Expect("/repos/acme/widget/commits/"+cand+"/check-runs", "filter=all&per_page=100", 200, "check_runs_completed.json")
	f.Expect("/repos/acme/widget/commits/"+cand+"/statuses", "per_page=100", 200, "statuses_empty.json")
	code, stdout, stderr := runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", filepath.Join(dir, "state"),
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
	verifytest.ObservePR(f)
	code, expDoc, stderr := runCLI(t, "", "evidence", "expect", "--repo", r.Dir, "--out", filepath.Join(dir, "expect-state"))
	if code != 0 {
		t.Fatalf("expect: exit %d %s", code, stderr)
	}
	expFile := filepath.Join(dir, "expect.json")
	os.WriteFile(expFile, []byte(expDoc), 0o644)
	code, res, stderr := runCLI(t, "", "evidence", "verify", sum.Bundle, "--trust", trustFile, "--expectations", expFile)
	var vr evidence.Result
	if code != 0 || json.Unmarshal([]byte(res), &vr) != nil || !vr.Valid {
		t.Fatalf("evidence verify: exit %d %s %s", code, res, stderr)
	}

	// The same run without a token: no request at all, and it says so.
	t.Setenv("GITHUB_TOKEN", "")
	before := f.Requests()
	code, stdout, stderr = runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", filepath.Join(dir, "state"),
		"--containerd-address", containerdAddress)
	if code != 0 || f.Requests() != before {
		t.Fatalf("verify without a token: exit %d, %d GitHub requests\n%s\n%s", code, f.Requests()-before, stdout, stderr)
	}
	if !strings.Contains(stderr, "GitHub sources are NOT consulted") || !strings.Contains(stdout, "GitHub: NOT consulted") {
		t.Fatalf("the output does not say GitHub was not consulted:\n%s\n%s", stdout, stderr)
	}
}

// TestRelativeStateDir: `--out relstate` works (it used to end with exit 3
// and an RM-SANDBOX error).
func TestRelativeStateDir(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r := gittest.New(t)
	verifytest.Apply(r, verifytest.Files{".runmill/checks.yaml": verifytest.TAPListPolicy, "tests/tap.sh": verifytest.TAPScript, "tests/list": "total\n"})
	base := r.Commit("base")
	r.Write("README.md", "docs\n")
	cand := r.Commit("docs")
	t.Chdir(t.TempDir())
	var stdout, stderr strings.Builder
	code := Run(context.Background(), []string{"verify", "--repo", r.Dir, "--base", base, "--candidate", cand,
		"--out", "relstate", "--containerd-address", containerdAddress}, IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if runs, err := os.ReadDir(filepath.Join("relstate", "runs")); err != nil || len(runs) != 1 {
		t.Fatalf("relstate/runs: %v %v", runs, err)
	}
}

// mountsBelow lists this namespace's mount points below dir.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	out, err := mountinfo.Under(dir + "/")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
