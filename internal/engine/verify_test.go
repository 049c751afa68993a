package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
	"github.com/runmill/verify/internal/verifytest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// These tests run checks for real: a private containerd with runc started by
// TestMain (or RUNMILL_CONTAINERD_ADDRESS). With CI=true a missing
// containerd fails instead of skipping.
var (
	containerdAddress string
	noSandbox         string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	defer removeSharedGoToolCache()
	defer removeCLIBinary()
	return sandboxtest.Main(m, "the engine integration tests", &containerdAddress, &noSandbox)
}

// The fixtures these tests share with internal/cli's (internal/verifytest).
const (
	tapRunner = verifytest.TAPRunner
	tapPolicy = verifytest.TAPPolicy
)

func shopRepo(t testing.TB, policy string) (*gittest.Repo, string) {
	t.Helper()
	return verifytest.ShopRepo(t, policy)
}

func verify(t *testing.T, r *gittest.Repo, base, cand string, mod func(*engine.VerifyOptions)) *engine.Run {
	t.Helper()
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	o := engine.VerifyOptions{
		Discover:          engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand},
		StateDir:          t.TempDir(),
		ContainerdAddress: containerdAddress,
		Version:           "test",
		GoToolCacheDir:    sharedGoToolCache(),
	}
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	if mod != nil {
		mod(&o)
	}
	run, err := engine.Verify(context.Background(), o)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return run
}

func rules(run *engine.Run) []string {
	var out []string
	for _, f := range run.Delivery.Verdict.Reasons() {
		out = append(out, f.Rule+"|"+string(f.Code)+"|"+f.Check+"|"+f.Message+"|"+fmt.Sprint(f.IDs))
	}
	return out
}

func hasRule(run *engine.Run, substr string) bool {
	for _, r := range rules(run) {
		if strings.Contains(r, substr) {
			return true
		}
	}
	return false
}

func TestVerifyEndToEnd(t *testing.T) {
	r, base := shopRepo(t, tapPolicy)
	for _, tc := range []struct {
		name      string
		change    func(r *gittest.Repo)
		ready     bool
		wantRules []string
	}{
		{"adds a test", func(r *gittest.Repo) { r.Write("tests/discount.t", "x\n") }, true, nil},
		{"relaxes its own policy", func(r *gittest.Repo) {
			r.Write(".runmill/checks.yaml", "checks: []\n")
			r.Remove("tests/zero_qty.t")
		}, false, []string{"zero_qty"}},
		{"deletes a test", func(r *gittest.Repo) { r.Remove("tests/zero_qty.t") }, false, []string{"RM-VERIFY-003", "zero_qty"}},
		{"skips a test", func(r *gittest.Repo) { r.Write("tests/fixture.t", "SKIP\n") }, false, []string{"RM-VERIFY-003", "fixture"}},
		{"declares the skip exactly", func(r *gittest.Repo) {
			r.Write("tests/fixture.t", "SKIP\n")
			r.Write(".runmill/checks.yaml", tapPolicy) // the base policy rules: a candidate declaration does not count
		}, false, []string{"fixture"}},
		{"focuses a test", func(r *gittest.Repo) {
			r.Write("web/cart.test.js", "describe('cart', () => {\n  it.only('totals', () => {});\n});\n")
		}, false, []string{"web/cart.test.js"}},
		{"runs no test", func(r *gittest.Repo) {
			r.Remove("tests/total.t")
			r.Remove("tests/zero_qty.t")
			r.Remove("tests/fixture.t")
		}, false, []string{"unit"}},
		{"commits its own report", func(r *gittest.Repo) {
			r.Write("reports/unit.tap", "1..1\nok 1 total\n")
		}, false, []string{"report.unusable"}},
		{"points the report directory out of the checkout", func(r *gittest.Repo) {
			if err := os.Symlink(t.TempDir(), filepath.Join(r.Dir, "reports")); err != nil {
				t.Fatal(err)
			}
		}, false, []string{"symlink"}},
		{"rewrites its runner to write a fixture", func(r *gittest.Repo) {
			// The runner is the check's harness, read from the base (issue
			// 19): the base's passes; the rewritten one runs too (issue
			// 25) and fails on the read-only checkout, which fails the
			// change. (That a check cannot write its read-only checkout is
			// the sandbox probe's and TestTreeMovedIsInvalidated's.)
			r.Write("tests/run.sh", "set -e\necho 'a 1' > fixtures/prices.txt\n"+tapRunner)
		}, false, []string{verdict.CandidateHarnessWords}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Checkout("main", false)
			r.Checkout("c-"+strings.ReplaceAll(tc.name, " ", "-"), true)
			tc.change(r)
			cand := r.Commit(tc.name)
			run := verify(t, r, base, cand, nil)
			if run.MergeReady() != tc.ready {
				t.Fatalf("merge-ready %v, want %v; reasons:\n%s", run.MergeReady(), tc.ready, strings.Join(rules(run), "\n"))
			}
			for _, w := range tc.wantRules {
				if !hasRule(run, w) {
					t.Errorf("no reason mentions %q; reasons:\n%s", w, strings.Join(rules(run), "\n"))
				}
			}
			for _, c := range run.Delivery.Checks {
				if c.Executor != record.Orchestrator || c.TreeBefore == "" || c.TreeBefore != c.TreeAfter {
					t.Errorf("record %+v: executor/tree", c)
				}
			}
			if _, err := os.Stat(run.StatementPath); err != nil {
				t.Fatalf("no statement written: %v", err)
			}
		})
	}
}

func TestDeclaredSkipAtBase(t *testing.T) {
	pol := tapPolicy + "    declared_skips:\n      - test_id: fixture\n        cause: needs the live price feed; ENG-88\n"
	r, _ := shopRepo(t, pol)
	r.Write("tests/fixture.t", "x\n")
	base := r.Commit("declare")
	r.Checkout("skip", true)
	r.Write("tests/fixture.t", "SKIP\n")
	cand := r.Commit("skip exactly the declared test")
	if run := verify(t, r, base, cand, nil); !run.MergeReady() {
		t.Fatalf("declared skip refused:\n%s", strings.Join(rules(run), "\n"))
	}
	r.Write("tests/fixture.t", "x\n")
	r.Write("tests/total.t", "SKIP\n")
	cand2 := r.Commit("skip another test instead")
	run := verify(t, r, base, cand2, nil)
	if run.MergeReady() || !hasRule(run, "total") {
		t.Fatalf("declaring fixture authorised total:\n%s", strings.Join(rules(run), "\n"))
	}
}

func TestTimeoutAndUnknownProposal(t *testing.T) {
	pol := tapPolicy + "  - id: slow\n    run: sleep 30\n    timeout: 1s\n" +
		// 5 MB of output (over the 4 MiB kept) before the runner's closing line: zero tests is
		// found past the stored prefix.
		"  - id: empty\n    run: head -c 5000000 /dev/zero | tr '\\\\0' x; echo; echo 'Ran 0 tests in 0.000s'\n"
	r, base := shopRepo(t, pol)
	r.Checkout("pr", true)
	r.Write("README", "x\n")
	cand := r.Commit("pr")
	marker := filepath.Join(t.TempDir(), "pwned")
	props := filepath.Join(t.TempDir(), "proposals")
	os.WriteFile(props, []byte("unit\nevil\n"), 0o644)
	start := time.Now()
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Discover.ProposalsFile = props })
	if time.Since(start) > 25*time.Second {
		t.Fatalf("the timeout was not enforced (%s)", time.Since(start))
	}
	if run.MergeReady() || !hasRule(run, verdict.RuleTimedOut) {
		t.Fatalf("timeout not a failure:\n%s", strings.Join(rules(run), "\n"))
	}
	if !hasRule(run, "output.zero-tests|") || !hasRule(run, "|empty|") {
		t.Fatalf("zero tests after 5 MB of output not found:\n%s", strings.Join(rules(run), "\n"))
	}
	for _, c := range run.Delivery.Checks {
		if c.CheckID == "evil" {
			t.Fatal("an unknown proposal was executed")
		}
	}
	if len(run.Delivery.Manifest.IgnoredProposals) != 1 {
		t.Fatalf("ignored proposals %+v", run.Delivery.Manifest.IgnoredProposals)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("marker exists")
	}
}

// TestSigningKeyNeverEntersSandbox: a run with a signing key writes a signed
// bundle, and a check cannot read the key file (nor find it in the
// environment of the task).
func TestSigningKeyNeverEntersSandbox(t *testing.T) {
	keyPEM, key, _ := newTestKey(t)
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(keyFile, keyPEM, 0o600)
	pol := tapPolicy + fmt.Sprintf("  - id: steal\n    run: cat %s /proc/1/environ; test ! -r %s\n", keyFile, keyFile)
	r, base := shopRepo(t, pol)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
	for _, c := range run.Delivery.Checks {
		if c.CheckID == "steal" && c.ExitCode != 0 {
			t.Fatalf("the check could read the signing key (exit %d)", c.ExitCode)
		}
	}
	found := false
	for _, c := range run.Delivery.Checks {
		found = found || c.CheckID == "steal"
	}
	if !found || run.BundlePath == "" {
		t.Fatalf("steal check ran: %v; bundle %q", found, run.BundlePath)
	}
}

// TestSignedRunVerifiesOffline: the bundle of a merge-ready run passes the
// portable verifier against expectations observed independently
// (engine.Expect), with every artifact re-hashed; one flipped byte in an
// artifact makes it fail.
func TestSignedRunVerifiesOffline(t *testing.T) {
	_, key, trust := newTestKey(t)
	r, base := shopRepo(t, tapPolicy)
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s", strings.Join(rules(run), "\n"))
	}
	expDoc := expectations(t, r, base, cand)
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(run.Dir, "artifacts")
	res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: artifacts})
	if !res.Valid {
		t.Fatalf("runmill's own bundle does not verify: %s %s", res.Reason, res.Message)
	}
	// The terminal bundle: the run's event chain, every checkout and
	// container observed gone, the budget and side-effect ledgers.
	texp, err := engine.ExpectTerminal(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}})
	if err != nil {
		t.Fatal(err)
	}
	texpDoc, _ := texp.Encode()
	term, err := os.ReadFile(run.TerminalPath)
	if err != nil {
		t.Fatalf("no terminal bundle: %v", err)
	}
	if res := evidence.Verify(term, trust, texpDoc, evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
		b, _ := os.ReadFile(filepath.Join(run.Dir, "terminal-statement.json"))
		t.Fatalf("the terminal bundle does not verify: %s %s\n%s", res.Reason, res.Message, b)
	}
	// What the cleanup observation looked for: per check run its checkout,
	// its overlay mount (runs as root here, so checkouts are layered) and
	// its container, plus the checkout session holding the commits' trees.
	var ts evidence.Statement[evidence.Terminal]
	if b, err := os.ReadFile(filepath.Join(run.Dir, "terminal-statement.json")); err != nil || json.Unmarshal(b, &ts) != nil {
		t.Fatalf("reading the terminal statement: %v", err)
	}
	kinds := map[string]int{}
	for _, r := range ts.Predicate.Cleanup.Resources {
		if !r.Gone {
			t.Errorf("not gone: %+v", r)
		}
		kinds[r.Kind]++
	}
	checkouts := len(run.Delivery.Checks) + 2 // and the candidate's and the baseline's focus scans, which are no check runs
	// Containers: every check run's, the sandbox probe's and the shim
	// keeper's (at least one; a keeper dropped at Idle may be made again).
	if kinds["container"] < len(run.Delivery.Checks)+2 || kinds["task"] != kinds["container"] || kinds["mount"] != checkouts || kinds["checkout"] != checkouts+1 /* the session */ {
		t.Errorf("cleanup observed %v for %d check runs", kinds, len(run.Delivery.Checks))
	}
	if res := evidence.Verify(term, trust, texpDoc, evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: artifacts}); res.Valid || res.Reason != evidence.ReasonTerminalArtifacts {
		t.Fatalf("a terminal bundle was accepted with --artifacts-dir: %+v", res)
	}
	// Flip one byte of one stored artifact.
	var victim string
	filepath.Walk(artifacts, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && victim == "" {
			victim = p
		}
		return nil
	})
	b, _ := os.ReadFile(victim)
	b[0] ^= 1
	os.WriteFile(victim, b, 0o644)
	res = evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: artifacts})
	if res.Valid || res.Reason != evidence.ReasonArtifact {
		t.Fatalf("a flipped artifact byte was not caught: %+v", res)
	}
}

// TestTreeMovedIsInvalidated: the checkout is read-only inside the sandbox,
// so a check cannot move its tree; a process outside it can. A host-side
// writer that adds a file to the checkout while the check runs must turn the
// result into RM-VERIFY-002 (spec § 3: "it does not care why the tree moved").
func TestTreeMovedIsInvalidated(t *testing.T) {
	pol := "checks:\n  - id: slow\n    run: sleep 5\n"
	r, base := shopRepo(t, pol)
	state := t.TempDir()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]time.Time{}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			dirs, _ := filepath.Glob(filepath.Join(state, "checkouts", "*", "*", "tests"))
			for _, d := range dirs {
				co := filepath.Dir(d)
				if first, ok := seen[co]; !ok {
					seen[co] = time.Now()
				} else if time.Since(first) > 2500*time.Millisecond {
					// New content on every tick: whenever the "before"
					// hash ran, the "after" hash sees something else.
					os.WriteFile(filepath.Join(co, "injected.txt"), []byte(time.Now().String()), 0o644)
				}
			}
		}
	}()
	run := verify(t, r, base, base, func(o *engine.VerifyOptions) { o.StateDir = state })
	close(stop)
	<-done
	if run.MergeReady() || !hasRule(run, "RM-VERIFY-002") {
		t.Fatalf("a moved tree was not invalidated:\n%s", strings.Join(rules(run), "\n"))
	}
	for _, c := range run.Delivery.Checks {
		if c.TreeBefore == c.TreeAfter {
			t.Fatalf("record claims an unchanged tree: %+v", c)
		}
	}
}

// TestNoCheckRunsWhenTheProbeFails: with toolchain binds that give the
// canary no shell, the probe cannot confirm the guarantees; verification
// stops with an RM-SANDBOX code and no check runs (no weaker fallback).
func TestNoCheckRunsWhenTheProbeFails(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, base := shopRepo(t, "checks:\n  - id: hang\n    run: sleep 60\n")
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte("sandbox:\n  host_paths: [/usr/share/doc]\n"), 0o644)
	start := time.Now()
	state := t.TempDir()
	_, err := engine.Verify(context.Background(), engine.VerifyOptions{
		Discover:          engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: base, PolicyFile: pol},
		StateDir:          state,
		ContainerdAddress: containerdAddress,
		Version:           "test",
	})
	if err == nil || !strings.HasPrefix(string(rmerr.CodeOf(err)), "RM-SANDBOX-") {
		t.Fatalf("got %v, want an RM-SANDBOX error", err)
	}
	t.Logf("verification stopped: %v", err)
	if time.Since(start) > 45*time.Second {
		t.Fatalf("the check ran although the probe failed (%s)", time.Since(start))
	}
	// Even a run without a verdict ends with a terminal statement.
	terms, _ := filepath.Glob(filepath.Join(state, "runs", "*", "terminal-statement.json"))
	if len(terms) != 1 {
		t.Fatalf("terminal statements: %v", terms)
	}
	b, _ := os.ReadFile(terms[0])
	if !strings.Contains(string(b), `"outcome":"no-verdict"`) || !strings.Contains(string(b), `"complete":true`) {
		t.Fatalf("terminal statement of a failed run: %s", b)
	}
}

// TestCheckInImage: a check that names an image runs with the image as its
// root (not the host toolchain), in the same checkout and with the same
// report handling; the image is probed too, and the probe is recorded.
func TestCheckInImage(t *testing.T) {
	image := sandboxtest.MinimalImage(t)
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", `checks:
  - id: in-image
    run: cat /usr/share/runmill-image-marker.txt; cat tests/one.t > /dev/null; printf '1..1\nok 1 one\n' > out.tap
    report: {path: out.tap, format: tap}
    image: `+image+`
  - id: on-host
    run: test -x /usr/bin/git && printf '1..1\nok 1 git\n' > host.tap
    report: {path: host.tap, format: tap}
`)
	r.Write("tests/one.t", "x\n")
	c := r.Commit("image check")
	run := verify(t, r, c, c, nil)
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s", strings.Join(rules(run), "\n"))
	}
	var probe sandbox.ProbeReport
	if err := json.Unmarshal(run.Delivery.Sandbox, &probe); err != nil {
		t.Fatal(err)
	}
	if len(probe.Images) != 1 || probe.Images[0].Image != image || !probe.Images[0].OK() {
		t.Errorf("the image's probe is not recorded: %+v", probe.Images)
	}
	// Proof that the root was the image: its marker reached stdout, and
	// the host's git (present outside) was not there.
	for _, rec := range run.Delivery.Checks {
		if rec.CheckID != "in-image" || rec.Phase != record.Candidate {
			continue
		}
		out, err := os.ReadFile(filepath.Join(run.Dir, "artifacts", rec.Stdout.Artifact))
		if err != nil || !strings.Contains(string(out), "runmill test image") {
			t.Errorf("stdout %q (%v): the check did not run in the image", out, err)
		}
	}

	// The same check where the image root lacks what the command needs
	// fails: the image really is the root.
	r.Write(".runmill/checks.yaml", `checks:
  - id: in-image
    run: test -x /usr/bin/git && printf '1..1\nok 1 git\n' > out.tap
    report: {path: out.tap, format: tap}
    image: `+image+`
`)
	c2 := r.Commit("git in the image")
	run = verify(t, r, c2, c2, nil)
	for _, rec := range run.Delivery.Checks {
		if rec.Phase == record.Candidate && rec.ExitCode == 0 {
			t.Errorf("a check needing host git exited 0 inside the minimal image: %+v", rec)
		}
	}
	if run.MergeReady() {
		t.Error("merge-ready")
	}
}

// TestDiscoveryFailureEndsWithTerminalStatement: a base whose .runmill is a
// symlink (RM-VERIFY-004) stops the run before any check, and the run still
// ends with a terminal statement saying why, with the sandbox connection
// observed closed.
func TestDiscoveryFailureEndsWithTerminalStatement(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r := gittest.New(t)
	r.Write("elsewhere/checks.yaml", "checks: []\n")
	if err := os.Symlink("elsewhere", filepath.Join(r.Dir, ".runmill")); err != nil {
		t.Fatal(err)
	}
	base := r.Commit("symlinked policy directory")
	state := t.TempDir()
	_, err := engine.Verify(context.Background(), engine.VerifyOptions{
		Discover:          engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: base},
		StateDir:          state,
		ContainerdAddress: containerdAddress,
		Version:           "test",
	})
	if rmerr.CodeOf(err) != rmerr.VerifyManifest {
		t.Fatalf("got %v, want %s", err, rmerr.VerifyManifest)
	}
	terms, _ := filepath.Glob(filepath.Join(state, "runs", "*", "terminal-statement.json"))
	if len(terms) != 1 {
		t.Fatalf("terminal statements: %v", terms)
	}
	var ts evidence.Statement[evidence.Terminal]
	b, _ := os.ReadFile(terms[0])
	if err := json.Unmarshal(b, &ts); err != nil {
		t.Fatal(err)
	}
	p := ts.Predicate
	if p.Outcome != "no-verdict" || p.Candidate.Head != base || len(p.Events) != 3 || p.Events[1].Kind != "discovery.failed" ||
		!strings.Contains(string(p.Events[1].Detail), string(rmerr.VerifyManifest)) || !p.Cleanup.Complete {
		t.Fatalf("terminal statement of a run whose Discovery failed: %s", b)
	}
}

// TestBaseMovedOn: the base branch gained a test after the change forked.
// The baseline runs at the base tip and the candidate on the landing tree
// (the merge, which has the base's new test: docs/outcome.md § The landing
// tree), so the test the change never had is not "removed" by it; a test
// the change does remove is still caught. The merge base is recorded as
// where the change forked; the policy is read from the base.
func TestBaseMovedOn(t *testing.T) {
	r, fork := shopRepo(t, tapPolicy)
	r.Checkout("feature", true)
	r.Write("tests/discount.t", "x\n")
	good := r.Commit("adds a test")
	r.Remove("tests/zero_qty.t")
	bad := r.Commit("and removes one")
	r.Checkout("main", false)
	r.Write("tests/later.t", "x\n")
	base := r.Commit("the base branch gains a test after the fork")

	run := verify(t, r, base, good, nil)
	if !run.MergeReady() {
		t.Fatalf("a change behind its base is judged by tests it never had:\n%s", strings.Join(rules(run), "\n"))
	}
	for _, c := range run.Delivery.Checks {
		if c.Phase == record.Baseline && c.Commit != base {
			t.Errorf("baseline ran at %s, want the base tip %s", c.Commit, base)
		}
	}
	if run.Delivery.Candidate.MergeBase != fork || run.Delivery.Manifest.Base != base {
		t.Errorf("merge base %s (want %s), manifest base %s (want %s)", run.Delivery.Candidate.MergeBase, fork, run.Delivery.Manifest.Base, base)
	}

	run = verify(t, r, base, bad, nil)
	if run.MergeReady() || !hasRule(run, "zero_qty") || hasRule(run, "later") {
		t.Fatalf("want zero_qty (removed by the change) and not later (never in it):\n%s", strings.Join(rules(run), "\n"))
	}
}
