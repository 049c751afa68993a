package engine_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
)

// Issue 23: a reuse key names everything the computation depends on, and a
// source whose record is not the one this run would make is never adopted.

// logTo sends a verification's progress to buf (and to stderr under -v).
func logTo(buf *bytes.Buffer) func(*engine.VerifyOptions) {
	return func(o *engine.VerifyOptions) {
		o.Progress = buf
		if testing.Verbose() {
			o.Progress = io.MultiWriter(buf, os.Stderr)
		}
	}
}

func with(mods ...func(*engine.VerifyOptions)) func(*engine.VerifyOptions) {
	return func(o *engine.VerifyOptions) {
		for _, m := range mods {
			m(o)
		}
	}
}

// oneTestRunner is what the attacker's symlink leads to: a runner that
// reports a single test.
const oneTestRunner = "#!/bin/sh\necho '1..1'\necho 'ok 1 total'\n"

// symlinkForkRepo is a merge base m whose tests run through tests/run.sh,
// and two bases off it whose tests/run.sh has the same blob id: at b1 a
// regular file holding the bytes "tests/all.sh" (a one-line script running
// the real suite), at b2 a symlink with that target text — which, relative
// to tests/, names tests/tests/all.sh, a fixture runner of one test.
func symlinkForkRepo(t *testing.T) (r *gittest.Repo, m, b1, b2 string) {
	t.Helper()
	r = gittest.New(t)
	r.Write(".runmill/checks.yaml", tapPolicy)
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/all.sh", tapRunner)
	r.Write("tests/tests/all.sh", oneTestRunner)
	for _, p := range []string{"tests/all.sh", "tests/tests/all.sh"} {
		if err := os.Chmod(filepath.Join(r.Dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"total", "zero_qty", "fixture"} {
		r.Write("tests/"+n+".t", "x\n")
	}
	m = r.Commit("merge base")
	r.Checkout("victim-base", true)
	r.Write("tests/run.sh", "tests/all.sh")
	b1 = r.Commit("run the suite through tests/all.sh")
	r.Checkout(m, false)
	r.Checkout("attacker-base", true)
	r.Remove("tests/run.sh")
	r.Symlink("tests/all.sh", "tests/run.sh")
	b2 = r.Commit("tests/run.sh: a symlink")
	if x, y := r.Git("rev-parse", b1+":tests/run.sh"), r.Git("rev-parse", b2+":tests/run.sh"); x != y {
		t.Fatalf("the fixture needs one blob id for both: %s, %s", x, y)
	}
	return r, m, b1, b2
}

// TestSymlinkHarnessDoesNotPoisonReuse: a baseline proven at another base
// whose harness file is a symlink with the same blob id as the victim's
// regular file is not reused for the victim's change, which deletes two
// tests: it is RM-VERIFY-003 with reuse on, as with --no-reuse. A source
// whose key matches but whose record differs from the one this run would
// make (crafted and re-signed by the trusted key) is refused before it is
// adopted; the untouched source is reused.
func TestSymlinkHarnessDoesNotPoisonReuse(t *testing.T) {
	k := newReuseKey(t)
	r, m, b1, b2 := symlinkForkRepo(t)
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state }

	attacker := verify(t, r, b2, push(r, m, "attacker"), signed)
	if b := baselineOf(t, attacker); b.ReusedFrom != nil || evidence.Reusable(&b) != "" || len(b.Report.Inventory.Passed) != 1 {
		t.Fatalf("the attacker's baseline must be a reusable run of one test: %+v (%s)", b, evidence.Reusable(&b))
	}
	r.Checkout(m, false)
	r.Checkout("victim", true)
	r.Remove("tests/zero_qty.t")
	r.Remove("tests/fixture.t")
	var vlog bytes.Buffer
	victim := verify(t, r, b1, r.Commit("delete two tests"), with(signed, logTo(&vlog)))
	wantReasons(t, victim, false, []string{"RM-VERIFY-003", "zero_qty", "fixture"}, nil)
	vb := baselineOf(t, victim)
	if vb.ReusedFrom != nil {
		t.Fatalf("the victim's baseline was reused from %+v", vb.ReusedFrom)
	}
	if vb.InputKey == "" || !strings.Contains(vlog.String(), "(baseline): reuse missed: no earlier run has input key "+vb.InputKey[:16]) {
		t.Errorf("the victim's run does not record a reuse miss:\n%s", vlog.String())
	}
	if vb.InputKey == baselineOf(t, attacker).InputKey {
		t.Fatal("a symlink and a regular file of one blob id give one input key")
	}

	// The control: an honest push against the victim's base reuses the
	// victim's executed baseline, through the same state dir.
	var log bytes.Buffer
	honest := push(r, m, "honest")
	again := verify(t, r, b1, honest, with(signed, logTo(&log)))
	if b := baselineOf(t, again); b.ReusedFrom == nil || b.ReusedFrom.RunID != victim.ID {
		t.Fatalf("the honest push did not reuse the victim's baseline: %+v\n%s", b.ReusedFrom, log.String())
	}
	if !again.MergeReady() {
		t.Fatalf("the honest push: %s", strings.Join(rules(again), "\n"))
	}
	bundle, err := os.ReadFile(again.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	if res := verifyOffline(t, r, b1, honest, bundle, k.trust, filepath.Join(again.Dir, "artifacts")); !res.Valid {
		t.Fatalf("the reusing bundle does not verify: %s %s", res.Reason, res.Message)
	}

	// Crafted sources: the victim's run with its baseline record altered,
	// its input key kept, re-signed by the trusted key.
	idx := -1
	for i, c := range readStatement(t, victim).Predicate.Checks {
		if c.Phase == record.Baseline {
			idx = i
		}
	}
	// The baseline runs at the base tip (the landing tree's rule), so the
	// base's harness is its commit's own: nothing is laid over, yet the
	// record names the harness's base commit and each file's mode, which
	// the crafted sources below alter.
	if vb.Commit != b1 || vb.Harness == nil || !vb.Harness.Pinned || vb.Harness.Base != b1 ||
		!slices.ContainsFunc(vb.Harness.Files, func(f harness.File) bool { return f.Ran == harness.FromBase }) {
		t.Fatalf("the fixture's baseline must run at the base tip with the base's harness recorded: commit %s, %+v", vb.Commit, vb.Harness)
	}
	other := "sha256:" + strings.Repeat("b", 64)
	for _, tc := range []struct {
		name, why string
		mod       func(*record.CheckRun)
		// invalid: the record cannot be signed at all (with nothing laid
		// over, its commit tree must be the tree it ran).
		invalid bool
	}{
		{"the tree it ran", "it ran tree", func(c *record.CheckRun) {
			c.TreeBefore, c.TreeAfter, c.Harness.CommitTree = other, other, other
		}, false},
		{"the commit's tree", "", func(c *record.CheckRun) { c.Harness.CommitTree = other }, true},
		{"the harness's base commit", "harness record", func(c *record.CheckRun) { c.Harness.Base = b2 }, false},
		{"the harness file's mode", "harness record", func(c *record.CheckRun) {
			for i := range c.Harness.Files {
				if c.Harness.Files[i].Ran == harness.FromBase {
					c.Harness.Files[i].Base.Mode = "120000"
				}
			}
		}, false},
		{"nothing (the control)", "", func(*record.CheckRun) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			copyTree(t, victim.Dir, dir)
			st := readStatement(t, victim)
			tc.mod(&st.Predicate.Checks[idx])
			b, _, err := evidence.Sign(st, k.key)
			if tc.invalid {
				// Sign refuses what Verify would reject: no such source
				// can be made, let alone adopted.
				if err == nil || !strings.Contains(err.Error(), "commit_tree") {
					t.Fatalf("a record whose commit tree is not the tree it ran, nothing laid over, was signed: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "evidence.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := evidence.VerifySource(b, k.trust, time.Now()); err != nil {
				t.Fatalf("the crafted source must verify as a source: %v", err)
			}
			var log bytes.Buffer
			run := verify(t, r, b1, honest, with(logTo(&log), func(o *engine.VerifyOptions) { o.Reuse, o.ReuseTrust = []string{dir}, k.trust }))
			got := baselineOf(t, run)
			if tc.why == "" {
				if got.ReusedFrom == nil {
					t.Fatalf("the untouched, re-signed source was not reused:\n%s", log.String())
				}
				return
			}
			if got.ReusedFrom != nil {
				t.Fatalf("a source whose record differs (%s) was reused", tc.name)
			}
			if !strings.Contains(log.String(), "not reused from run "+victim.ID+": ") || !strings.Contains(log.String(), tc.why) {
				t.Errorf("no line says it was refused for %q:\n%s", tc.why, log.String())
			}
			if !run.MergeReady() {
				t.Fatalf("the honest push, its baseline executed: %s", strings.Join(rules(run), "\n"))
			}
		})
	}
}

// TestReuseKeyNamesTheBaseCommit: a base that moved on without touching
// the harness keeps the merge base, yet its harness record names the new
// base: the baseline executes again (reusing it would give a bundle that
// `evidence verify` refuses at the binding), and the next push against the
// new base reuses that run.
func TestReuseKeyNamesTheBaseCommit(t *testing.T) {
	k := newReuseKey(t)
	r, m := shopRepo(t, tapPolicy)
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = k.key, state }
	first := verify(t, r, m, push(r, m, "p1"), signed)
	r.Checkout("main", false)
	r.Write("README", "the base moves on\n")
	moved := r.Commit("unrelated")
	for i := range 2 {
		cand := push(r, m, "p"+string(rune('2'+i)))
		run := verify(t, r, moved, cand, signed)
		b := baselineOf(t, run)
		switch {
		case i == 0 && b.ReusedFrom != nil:
			t.Fatalf("a baseline of base %s reused for base %s: %+v", m, moved, b.ReusedFrom)
		case i == 1 && (b.ReusedFrom == nil || b.ReusedFrom.RunID == first.ID):
			t.Fatalf("the second push against the moved base: reused %+v, want the run against the same base", b.ReusedFrom)
		}
		bundle, err := os.ReadFile(run.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		if res := verifyOffline(t, r, moved, cand, bundle, k.trust, filepath.Join(run.Dir, "artifacts")); !res.Valid {
			t.Fatalf("push %d: %s %s", i+2, res.Reason, res.Message)
		}
	}
}

// TestReuseKeyNamesEveryTool: a tool the command runs after its first word
// (`sh … && rmtool`), found on the task's PATH, changed by content: the
// baseline executes again; with everything equal the next push reuses it.
func TestReuseKeyNamesEveryTool(t *testing.T) {
	k := newReuseKey(t)
	tools := t.TempDir()
	tool := filepath.Join(tools, "rmtool")
	writeTool := func(version string) {
		if err := os.WriteFile(tool, []byte("#!/bin/sh\n# "+version+"\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTool("v1")
	t.Setenv("PATH", tools+":"+os.Getenv("PATH"))
	paths := []string{tools}
	for _, p := range sandbox.DefaultHostPaths {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("sandbox:\n  host_paths: ["+strings.Join(paths, ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, m := shopRepo(t, strings.Replace(tapPolicy, "> reports/unit.tap", "> reports/unit.tap && rmtool", 1))
	state := t.TempDir()
	signed := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir, o.Discover.PolicyFile = k.key, state, pol }
	first := verify(t, r, m, push(r, m, "p1"), signed)
	if b := baselineOf(t, first); b.Status != record.Passed || b.InputKey == "" {
		t.Fatalf("the first baseline: %+v", b)
	}
	writeTool("v2")
	var log bytes.Buffer
	second := verify(t, r, m, push(r, m, "p2"), with(signed, logTo(&log)))
	if b := baselineOf(t, second); b.ReusedFrom != nil {
		t.Fatalf("rmtool changed, yet the baseline was reused from %+v", b.ReusedFrom)
	} else if b.InputKey == baselineOf(t, first).InputKey || !strings.Contains(log.String(), "(baseline): reuse missed: no earlier run has input key "+b.InputKey[:16]) {
		t.Errorf("rmtool changed: the key must change and the run record a miss:\n%s", log.String())
	}
	third := verify(t, r, m, push(r, m, "p3"), signed)
	if b := baselineOf(t, third); b.ReusedFrom == nil || b.ReusedFrom.RunID != second.ID {
		t.Fatalf("with every input equal, reused %+v, want run %s", b.ReusedFrom, second.ID)
	}
	for _, run := range []*engine.Run{first, second, third} {
		if !run.MergeReady() {
			t.Fatalf("%s: %s", run.ID, strings.Join(rules(run), "\n"))
		}
	}
}
