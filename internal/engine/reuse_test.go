package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// reuseKey is a signing key with its trust document.
type reuseKey struct {
	key   *evidence.SigningKey
	trust []byte
}

func newReuseKey(t *testing.T) reuseKey {
	t.Helper()
	_, k, trust := newTestKey(t)
	return reuseKey{k, trust}
}

// push commits a new candidate on a branch of its own off base.
func push(r *gittest.Repo, base, name string) string {
	r.Checkout(base, false)
	r.Checkout(name, true)
	r.Write("tests/"+name+".t", "x\n")
	return r.Commit(name)
}

func baselineOf(t *testing.T, run *engine.Run) record.CheckRun {
	t.Helper()
	for _, c := range run.Delivery.Checks {
		if c.Phase == record.Baseline {
			return c
		}
	}
	t.Fatalf("no baseline run in %s", run.Dir)
	return record.CheckRun{}
}

func candidateOf(t *testing.T, run *engine.Run) record.CheckRun {
	t.Helper()
	for _, c := range run.Delivery.Checks {
		if c.Phase == record.Candidate {
			return c
		}
	}
	t.Fatalf("no candidate run in %s", run.Dir)
	return record.CheckRun{}
}

// verifyOffline verifies run's bundle against trust, with or without the
// run's artifacts directory.
func verifyOffline(t *testing.T, r *gittest.Repo, base, cand string, bundle, trust []byte, artifacts string) evidence.Result {
	t.Helper()
	return evidence.Verify(bundle, trust, expectations(t, r, base, cand), evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: artifacts})
}

// TestBaselineReused: a second push against the same base reuses the first
// verification's signed baseline, records where it came from, and verifies
// offline with and without --artifacts-dir; the candidate always runs.
func TestBaselineReused(t *testing.T) {
	k := newReuseKey(t)
	r, base := shopRepo(t, tapPolicy)
	cand1, cand2 := push(r, base, "push1"), push(r, base, "push2")
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state }
	first := verify(t, r, base, cand1, signed)
	second := verify(t, r, base, cand2, signed)
	for _, run := range []*engine.Run{first, second} {
		if !run.MergeReady() {
			t.Fatalf("%s not merge-ready:\n%s", run.ID, strings.Join(rules(run), "\n"))
		}
	}
	b1, b2 := baselineOf(t, first), baselineOf(t, second)
	if b1.ReusedFrom != nil || b1.InputKey == "" {
		t.Fatalf("first baseline: reused %+v, input key %q", b1.ReusedFrom, b1.InputKey)
	}
	if b2.ReusedFrom == nil {
		t.Fatalf("the second push's baseline was executed again (key %s, first %s)", b2.InputKey, b1.InputKey)
	}
	if c2 := candidateOf(t, second); c2.ReusedFrom != nil || c2.InputKey == "" || c2.InputKey == b2.InputKey {
		t.Fatalf("candidate reused or keyed like the baseline: %+v", c2)
	}
	bundle1, err := os.ReadFile(first.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	ref := b2.ReusedFrom
	if ref.RunID != first.ID || ref.Bundle != evidence.ArtifactAddress(digest.Hex(bundle1)) || ref.BundleSize != int64(len(bundle1)) || b2.InputKey != b1.InputKey {
		t.Fatalf("reused_from %+v does not name the first run %s (bundle sha256/%s)", ref, first.ID, digest.Hex(bundle1))
	}
	// Facts copied, status decided again by Judge from them.
	if b2.TreeBefore != b1.TreeBefore || b2.Stdout != b1.Stdout || b2.DurationMS != b1.DurationMS || b2.Status != record.Passed {
		t.Fatalf("reused record differs from its source:\n%+v\n%+v", b2, b1)
	}
	bundle2, err := os.ReadFile(second.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	arts := filepath.Join(second.Dir, "artifacts")
	for _, dir := range []string{"", arts} {
		if res := verifyOffline(t, r, base, cand2, bundle2, k.trust, dir); !res.Valid {
			t.Fatalf("the reusing bundle does not verify (artifacts %q): %s %s", dir, res.Reason, res.Message)
		}
	}
	// The reusing run's terminal statement holds no resource of the run it
	// did not execute, and verifies.
	texp, err := engine.ExpectTerminal(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand2}})
	if err != nil {
		t.Fatal(err)
	}
	texpDoc, _ := texp.Encode()
	term, err := os.ReadFile(second.TerminalPath)
	if err != nil {
		t.Fatal(err)
	}
	if res := evidence.Verify(term, k.trust, texpDoc, evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
		t.Fatalf("the reusing run's terminal bundle: %s %s", res.Reason, res.Message)
	}
	// A third push reuses the same executed run through the second's
	// reference, whichever earlier run it finds first.
	var log bytes.Buffer
	third := verify(t, r, base, push(r, base, "push3"), with(signed, logTo(&log)))
	b3 := baselineOf(t, third)
	if b3.ReusedFrom == nil || b3.ReusedFrom.RunID != first.ID {
		t.Fatalf("third push: reused_from %+v, want run %s", b3.ReusedFrom, first.ID)
	}
	// Issue 23: the source bundle and the reused outputs are stored once
	// per state dir (each reusing run's artifact is a hard link to the
	// source's file), and each distinct bundle is verified once per start:
	// the first run's bundle, which the second run holds a copy of, once.
	for _, run := range []*engine.Run{second, third} {
		arts := filepath.Join(run.Dir, "artifacts")
		for _, pair := range [][2]string{
			{filepath.Join(arts, filepath.FromSlash(ref.Bundle)), first.BundlePath},
			{filepath.Join(arts, filepath.FromSlash(b2.Report.Artifact)), filepath.Join(first.Dir, "artifacts", filepath.FromSlash(b1.Report.Artifact))},
		} {
			x, err1 := os.Stat(pair[0])
			y, err2 := os.Stat(pair[1])
			if err1 != nil || err2 != nil || !os.SameFile(x, y) {
				t.Errorf("%s: %s is not the source's %s (%v, %v)", run.ID, pair[0], pair[1], err1, err2)
			}
		}
	}
	if want := "baseline reuse: 2 earlier runs read, 2 distinct source bundles verified"; !strings.Contains(log.String(), want) {
		t.Errorf("the third start does not say %q:\n%s", want, log.String())
	}

	// --reuse DIR in a fresh state dir with the trust document given.
	fresh := verify(t, r, base, cand2, func(o *engine.VerifyOptions) {
		o.Reuse, o.ReuseTrust = []string{filepath.Join(state, "runs")}, k.trust
	})
	if b := baselineOf(t, fresh); b.ReusedFrom == nil {
		t.Fatal("--reuse with a trusting document reused nothing")
	}
}

// TestReuseRefused: nothing whose inputs differ, nothing from an untrusted
// key, nothing failed, and nothing tampered with is reused.
func TestReuseRefused(t *testing.T) {
	k, other := newReuseKey(t), newReuseKey(t)
	r, base := shopRepo(t, tapPolicy)
	cand1, cand2 := push(r, base, "push1"), push(r, base, "push2")
	state := t.TempDir()
	first := verify(t, r, base, cand1, func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state })
	if b := baselineOf(t, first); b.ReusedFrom != nil || !first.MergeReady() {
		t.Fatalf("first run: %+v", b)
	}
	budget := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(budget, []byte("budgets:\n  max_output_bytes: 2097152\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The default set as far as it exists: another toolchain root.
	hostPaths := filepath.Join(t.TempDir(), "policy.yaml")
	paths := slices.DeleteFunc(slices.Clone(sandbox.DefaultHostPaths), func(p string) bool { _, err := os.Stat(p); return err != nil })
	if err := os.WriteFile(hostPaths, []byte("sandbox:\n  host_paths: ["+strings.Join(paths, ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*engine.VerifyOptions)
	}{
		{"another runmill version", func(o *engine.VerifyOptions) { o.Version = "test-2" }},
		{"another output cap", func(o *engine.VerifyOptions) { o.Discover.PolicyFile = budget }},
		{"another toolchain (host paths)", func(o *engine.VerifyOptions) { o.Discover.PolicyFile = hostPaths }},
		{"signed with an untrusted key", func(o *engine.VerifyOptions) { o.SigningKey = other.key }},
		{"--reuse with another key's trust", func(o *engine.VerifyOptions) {
			o.SigningKey, o.StateDir = nil, t.TempDir()
			o.Reuse, o.ReuseTrust = []string{state}, other.trust
		}},
		{"--no-reuse", func(o *engine.VerifyOptions) { o.NoReuse = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := verify(t, r, base, cand2, func(o *engine.VerifyOptions) {
				o.SigningKey, o.StateDir = k.key, state
				tc.mod(o)
			})
			if b := baselineOf(t, run); b.ReusedFrom != nil {
				t.Fatalf("reused %+v", b.ReusedFrom)
			}
			if !run.MergeReady() {
				t.Fatalf("not merge-ready:\n%s", strings.Join(rules(run), "\n"))
			}
			// The runs of this case must not feed the next ones.
			os.RemoveAll(run.Dir)
		})
	}

	t.Run("a tampered source bundle", func(t *testing.T) {
		dir := t.TempDir()
		src := filepath.Join(dir, "run")
		copyTree(t, first.Dir, src)
		b, _ := os.ReadFile(filepath.Join(src, "evidence.json"))
		b[len(b)/2] ^= 1
		os.WriteFile(filepath.Join(src, "evidence.json"), b, 0o644)
		run := verify(t, r, base, cand2, func(o *engine.VerifyOptions) { o.Reuse, o.ReuseTrust = []string{dir}, k.trust })
		if b := baselineOf(t, run); b.ReusedFrom != nil {
			t.Fatalf("reused a tampered bundle: %+v", b.ReusedFrom)
		}
	})
}

// TestReuseSourceFIFO (issue 23): a FIFO planted among a reusable run's
// artifacts, or as a run's evidence.json, is refused without blocking the
// open (a FIFO without a writer blocks open(2) forever): the baseline runs.
func TestReuseSourceFIFO(t *testing.T) {
	k := newReuseKey(t)
	r, base := shopRepo(t, tapPolicy)
	state := t.TempDir()
	first := verify(t, r, base, push(r, base, "push1"), func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state })
	dir := t.TempDir()
	src := filepath.Join(dir, "run")
	copyTree(t, first.Dir, src)
	out := filepath.Join(src, "artifacts", filepath.FromSlash(baselineOf(t, first).Stdout.Artifact))
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "99991231T000000Z-fifo")
	if err := os.MkdirAll(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{out, filepath.Join(planted, "evidence.json")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	run := verify(t, r, base, push(r, base, "push2"), with(logTo(&log), func(o *engine.VerifyOptions) { o.Reuse, o.ReuseTrust = []string{dir}, k.trust }))
	if b := baselineOf(t, run); b.ReusedFrom != nil {
		t.Fatalf("reused a run whose output is a FIFO: %+v", b.ReusedFrom)
	}
	if !strings.Contains(log.String(), "(baseline): not reused: the source's artifact") || !strings.Contains(log.String(), "is a named pipe, not a regular file") {
		t.Errorf("no line says the FIFO was refused:\n%s", log.String())
	}
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s", strings.Join(rules(run), "\n"))
	}
}

// TestFailedBaselineNotReused: a baseline that failed is executed again on
// the next push; the honest change still passes (no false alarm).
func TestFailedBaselineNotReused(t *testing.T) {
	k := newReuseKey(t)
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", `checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap; test -e tests/fixed.t
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
`)
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/total.t", "x\n")
	base := r.Commit("base with a failing suite")
	fix := func(name string) string {
		r.Checkout(base, false)
		r.Checkout(name, true)
		r.Write("tests/fixed.t", "x\n")
		r.Write("tests/"+name+".t", "x\n")
		return r.Commit(name)
	}
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state }
	first := verify(t, r, base, fix("push1"), signed)
	if b := baselineOf(t, first); b.Status != record.Failed || b.ExitCode == 0 {
		t.Fatalf("the baseline was meant to fail: %+v", b)
	}
	second := verify(t, r, base, fix("push2"), signed)
	if b := baselineOf(t, second); b.ReusedFrom != nil {
		t.Fatalf("a failed baseline was reused: %+v", b.ReusedFrom)
	}
	if c := candidateOf(t, second); c.Status != record.Passed {
		t.Fatalf("the fixing candidate: %+v", c)
	}
}

// TestTamperedReusedRecordRefused: a reusing statement whose reused record
// no longer matches its source is refused by `evidence verify
// --artifacts-dir`, even re-signed by the trusted key (the reference's form
// without the source bundle: pkg/evidence TestReusedRecordVerification).
func TestTamperedReusedRecordRefused(t *testing.T) {
	k := newReuseKey(t)
	r, base := shopRepo(t, tapPolicy)
	cand1, cand2 := push(r, base, "push1"), push(r, base, "push2")
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state }
	verify(t, r, base, cand1, signed)
	second := verify(t, r, base, cand2, signed)
	st := readStatement(t, second)
	idx := -1
	for i, c := range st.Predicate.Checks {
		if c.ReusedFrom != nil {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatal("nothing was reused")
	}
	arts := filepath.Join(second.Dir, "artifacts")
	resign := func(t *testing.T, mod func(*record.CheckRun)) []byte {
		t.Helper()
		st := readStatement(t, second)
		mod(&st.Predicate.Checks[idx])
		b, _, err := evidence.Sign(st, k.key)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name      string
		mod       func(*record.CheckRun)
		artifacts string
		reason    evidence.Reason
	}{
		{"duration changed", func(c *record.CheckRun) { c.DurationMS++ }, arts, evidence.ReasonRecord},
		{"input key changed", func(c *record.CheckRun) { c.InputKey = strings.Repeat("a", 64) }, arts, evidence.ReasonRecord},
		{"tree changed", func(c *record.CheckRun) {
			c.TreeBefore, c.TreeAfter = "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("b", 64)
			if c.Harness != nil { // the harness record names the commit's tree too
				c.Harness.CommitTree = c.TreeBefore
			}
		}, arts, evidence.ReasonRecord},
		{"points at another run", func(c *record.CheckRun) { c.ReusedFrom.Index++ }, arts, evidence.ReasonRecord},
		{"source bundle absent", func(c *record.CheckRun) {
			c.ReusedFrom.Bundle = "sha256/" + strings.Repeat("c", 64)
		}, arts, evidence.ReasonArtifact},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := verifyOffline(t, r, base, cand2, resign(t, tc.mod), k.trust, tc.artifacts)
			if res.Valid || res.Reason != tc.reason {
				t.Fatalf("want %s, got %+v", tc.reason, res)
			}
		})
	}
	// Unchanged and re-signed it still verifies: the refusals above are
	// the tampering's, not the re-signing's.
	if res := verifyOffline(t, r, base, cand2, resign(t, func(*record.CheckRun) {}), k.trust, arts); !res.Valid {
		t.Fatalf("the untouched statement does not verify: %s %s", res.Reason, res.Message)
	}
	// The stored source bundle itself altered.
	b, _ := os.ReadFile(second.BundlePath)
	src := filepath.Join(arts, filepath.FromSlash(st.Predicate.Checks[idx].ReusedFrom.Bundle))
	sb, _ := os.ReadFile(src)
	sb[len(sb)/2] ^= 1
	os.WriteFile(src, sb, 0o644)
	if res := verifyOffline(t, r, base, cand2, b, k.trust, arts); res.Valid || res.Reason != evidence.ReasonArtifact {
		t.Fatalf("an altered source bundle: %+v", res)
	}
}

func readStatement(t *testing.T, run *engine.Run) *evidence.DeliveryStatement {
	t.Helper()
	b, err := os.ReadFile(run.StatementPath)
	if err != nil {
		t.Fatal(err)
	}
	var st evidence.DeliveryStatement
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
