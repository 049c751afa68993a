package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/cgrouptest"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// boundsChange is a base with one check whose harness is `conftest*.py`
// and a candidate adding dir to the base's tree: issue 23's pull requests,
// made of a few small objects with git plumbing (nothing is written as a
// file).
func boundsChange(t *testing.T, dir func(r *gittest.Repo) string) (r *gittest.Repo, base, cand string) {
	t.Helper()
	r = gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: \"true\"\n    harness: [\"conftest*.py\"]\n")
	base = r.Commit("base")
	cand = r.CommitTree(r.Tree(
		gittest.TreeEntry{Mode: "040000", ID: r.Git("rev-parse", base+":.runmill"), Name: ".runmill"},
		gittest.TreeEntry{Mode: "040000", ID: dir(r), Name: "added"},
	), base, "the pull request")
	return r, base, cand
}

// wideHarness: 200 000 files matching the harness glob, 200 directories
// of 1 000.
func wideHarness(r *gittest.Repo) string {
	return r.Fanout("pkg%03d", 200, "040000", r.Fanout("conftest%03d.py", 1000, "100644", r.Blob(strings.NewReader("x"))))
}

// manyPaths: 1 000 000 paths, 1 000 directories of 1 000.
func manyPaths(r *gittest.Repo) string {
	return r.Fanout("d%03d", 1000, "040000", r.Fanout("f%03d", 1000, "100644", r.Blob(strings.NewReader("x"))))
}

// threeGB: 3 000 references to 1 MiB of zeros.
func threeGB(r *gittest.Repo) string {
	return r.Fanout("zeros%04d", 3000, "100644", r.Zeros(1<<20))
}

// terminalEvent is the detail of the terminal statement's event kind in
// the state dir's one run.
func terminalEvent(t *testing.T, state, kind string) string {
	t.Helper()
	terms, _ := filepath.Glob(filepath.Join(state, "runs", "*", "terminal-statement.json"))
	if len(terms) != 1 {
		t.Fatalf("terminal statements: %v", terms)
	}
	var ts evidence.Statement[evidence.Terminal]
	b, err := os.ReadFile(terms[0])
	if err != nil || json.Unmarshal(b, &ts) != nil {
		t.Fatalf("reading the terminal statement: %v", err)
	}
	if ts.Predicate.Outcome != "no-verdict" || !ts.Predicate.Cleanup.Complete {
		t.Fatalf("terminal statement: outcome %s, cleanup complete %v", ts.Predicate.Outcome, ts.Predicate.Cleanup.Complete)
	}
	for _, e := range ts.Predicate.Events {
		if e.Kind == kind {
			return string(e.Detail)
		}
	}
	t.Fatalf("the terminal statement has no %s event: %s", kind, b)
	return ""
}

// TestWideHarnessRefused (issue 23): a change adding 200 000 files that
// match a check's harness glob is refused by the harness cap, named, from
// the trees' listings: `evidence expect` before it checks the candidate
// out, Verify before any check run or focus scan writes a checkout, with
// the refusal in the signed terminal statement.
func TestWideHarnessRefused(t *testing.T) {
	r, base, cand := boundsChange(t, wideHarness)
	ctx := context.Background()
	_, err := engine.Expect(ctx, engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}, StateDir: t.TempDir()})
	if rmerr.CodeOf(err) != rmerr.LimitHarnessFiles || !strings.Contains(err.Error(), "names 200000 files") {
		t.Fatalf("Expect: %v", err)
	}
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	state := t.TempDir()
	_, err = engine.Verify(ctx, engine.VerifyOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand},
		StateDir: state, ContainerdAddress: containerdAddress, Version: "test"})
	if rmerr.CodeOf(err) != rmerr.LimitHarnessFiles {
		t.Fatalf("Verify: %v", err)
	}
	if d := terminalEvent(t, state, "limit.refused"); !strings.Contains(d, string(rmerr.LimitHarnessFiles)) || !strings.Contains(d, "names 200000 files") {
		t.Fatalf("limit.refused: %s", d)
	}
	for _, e := range []string{"check.started", "checkout.removed"} {
		if strings.Contains(terminalEvents(t, state), e) {
			t.Errorf("the refused run has a %s event", e)
		}
	}
}

// TestWideHarnessVerifyCancelled (issue 23: verify at 200 000 files
// ignored SIGTERM): a Verify over the same change, cancelled once its
// sandbox and checkouts are ready, ends with the cancellation rather than
// with the harness's answer, and still signs a terminal statement and
// leaves no mount (pkg/harness's TestResolveCancelled: the resolution's
// own loop looks at the context too).
func TestWideHarnessVerifyCancelled(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base, cand := boundsChange(t, wideHarness)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	state := t.TempDir()
	// The last line before the harnesses are resolved (stage_prepare.go).
	progress := &lineWatch{on: "runmill: checkouts: ", do: cancel}
	_, err := engine.Verify(ctx, engine.VerifyOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand},
		StateDir: state, ContainerdAddress: containerdAddress, Version: "test", Progress: progress})
	if !errors.Is(err, context.Canceled) || rmerr.CodeOf(err) != "" {
		t.Fatalf("Verify after cancel: %v", err)
	}
	if !progress.seen() {
		t.Fatal("the run never said how it makes checkouts: cancelled elsewhere")
	}
	terminalEvent(t, state, "run.started")
	for _, e := range []string{"check.started", "limit.refused"} {
		if strings.Contains(terminalEvents(t, state), e) {
			t.Errorf("the cancelled run has a %s event", e)
		}
	}
	if mounts, err := mountinfo.Under(state); err != nil || len(mounts) > 0 {
		t.Errorf("mounts left under the state dir: %q, %v", mounts, err)
	}
}

// lineWatch is a Progress writer calling do once a line starting with on
// has been written.
type lineWatch struct {
	on string
	do func()
	mu sync.Mutex
	ok bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		if !w.ok && strings.HasPrefix(line, w.on) {
			w.ok = true
			w.do()
		}
	}
	return len(p), nil
}

func (w *lineWatch) seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ok
}

// terminalEvents lists the kinds of the run's terminal events.
func terminalEvents(t *testing.T, state string) string {
	t.Helper()
	terms, _ := filepath.Glob(filepath.Join(state, "runs", "*", "terminal-statement.json"))
	var ts evidence.Statement[evidence.Terminal]
	b, _ := os.ReadFile(terms[0])
	json.Unmarshal(b, &ts)
	var kinds []string
	for _, e := range ts.Predicate.Events {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, " ")
}

// TestLargeTreesRefusedUnderMemoryLimit (issue 23): runmill verify, as a
// process in a 2 GiB memory cgroup (where a commit of 3 GB OOM-killed it
// in 1.1 s, its layer filling a tmpfs charged to that cgroup), refuses a
// candidate of 3 GB by the checkout byte limit and one of 1 000 000 paths
// by the entry limit: from the objects, in Discovery, before a file is
// written — no OOM kill, exit 1, the limit and the setting named on
// stderr, the refusal in the signed terminal statement, no mount left
// under the state dir.
func TestLargeTreesRefusedUnderMemoryLimit(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	keyFile, _ := testKeyFile(t)
	for _, c := range []struct {
		name string
		dir  func(*gittest.Repo) string
		code rmerr.Code
		says string
	}{
		{"3 GB in 1 MB of objects", threeGB, rmerr.LimitTreeBytes, "budgets.checkout_bytes"},
		{"1 000 000 paths", manyPaths, rmerr.LimitTreeEntries, "budgets.checkout_entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, base, cand := boundsChange(t, c.dir)
			state := t.TempDir()
			code, stderr, elapsed, cg := runmillUnderLimit(t, 2<<30, "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", state,
				"--containerd-address", containerdAddress, "--signing-key", keyFile, "--no-github")
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr)
			}
			for _, w := range []string{string(c.code), c.says} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if d := terminalEvent(t, state, "discovery.failed"); !strings.Contains(d, string(c.code)) {
				t.Errorf("discovery.failed: %s", d)
			}
			if mounts, err := mountinfo.Under(state); err != nil || len(mounts) > 0 {
				t.Errorf("mounts left under the state dir: %q, %v", mounts, err)
			}
			t.Logf("refused in %s; peak memory of the cgroup: %d MiB", elapsed.Round(time.Millisecond), cg.Peak()>>20)
		})
	}
}

// runmillUnderLimit runs the runmill CLI with args as a process in a memory
// cgroup of limit bytes from its first page (a shell moved there first
// becomes runmill: cgroup v1 moves no earlier charges, so the cgroup's peak
// is all of runmill's memory and its children's). A runmill that was
// killed, or a cgroup that counts an OOM kill, fails the test. It returns
// the exit code, stderr, the wall-clock time and the cgroup.
func runmillUnderLimit(t *testing.T, limit int64, args ...string) (int, string, time.Duration, *cgrouptest.Memory) {
	t.Helper()
	cg := cgrouptest.New(t, "to run runmill under a memory limit")
	if err := cg.SetLimit(limit); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{"-c", `read go && exec "$@"`, "sh", runmillCLI(t)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cg.Start(cmd); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	elapsed := time.Since(start)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("runmill was killed (%v) under the %d MiB limit; OOM kills %d\n%s", err, limit>>20, cg.OOMKills(t), stderr.String())
	}
	if n := cg.OOMKills(t); n != 0 {
		t.Fatalf("the memory cgroup counts %d OOM kills", n)
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), elapsed, cg
}
