package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 25: the harness is found by command shape and ecosystem. One
// repository holds a check per shape; each check's test reads its own
// value file ("good" at the base). The lying change breaks every value and
// rewrites (or adds) exactly the harness file that would hide it; the
// honest change edits harness files without breaking anything.

// conftestForge turns every failed test into a pass.
const conftestForge = `import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        rep.outcome = "passed"
`

const pyTest = "def test_value():\n    assert open('value').read().strip() == 'good'\n"

const nodeTest = "const v = require('fs').readFileSync('value', 'utf8').trim();\nif (v !== 'good') { console.error('value is ' + v); process.exit(1); }\n"

const pkgTest = `{"name": "t", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}}` + "\n"

const checkValue = `[ "$(cat value)" = good ]`

const discoverPolicy = `checks:
  - id: bash-e
    run: bash -e scripts/t.sh
  - id: cd-sub
    run: cd sub && sh t.sh
  - id: timeout
    run: timeout 120 sh t.sh
  - id: python-script
    run: python3 scripts/run_tests.py
  - id: sourced
    run: sh lib/run.sh
  - id: npm-script
    run: cd npm1 && npm test
  - id: npmrc
    run: cd npm2 && npm test
    harness: [npm2/package.json, npm2/.npmrc]
  - id: node-shim
    run: cd npm3 && npm test
  - id: make-recipe
    run: make -C mk1 test
  - id: gnumakefile
    run: make -C mk2 test
  - id: conftest
    run: cd py1 && python3 -m pytest -q -p no:cacheprovider tests
  - id: conftest-listed
    run: cd py2 && python3 -m pytest -q -p no:cacheprovider tests
    harness: ["**/conftest.py"]
  - id: pytest-shadow
    run: cd py3 && python3 -m pytest -q -p no:cacheprovider tests
  - id: unknown
    run: awk 'BEGIN { exit 0 }'
`

func discoverBase() files {
	return files{
		".runmill/checks.yaml": discoverPolicy,
		"scripts/t.sh":         "#!/bin/sh\n[ \"$(cat scripts/value)\" = good ]\n", "scripts/value": "good\n",
		"sub/t.sh": checkValue + "\n", "sub/value": "good\n",
		"t.sh": "[ \"$(cat t.value)\" = good ]\n", "t.value": "good\n",
		"scripts/run_tests.py": "import sys\nsys.exit(0 if open('py0/value').read().strip() == 'good' else 1)\n", "py0/value": "good\n",
		"lib/run.sh": "set -e\n. lib/lib.sh\ncheck lib/value\n", "lib/lib.sh": "check() { [ \"$(cat \"$1\")\" = good ]; }\n", "lib/value": "good\n",
		"npm1/package.json": pkgTest, "npm1/test.js": nodeTest, "npm1/value": "good\n",
		"npm2/package.json": pkgTest, "npm2/test.js": nodeTest, "npm2/value": "good\n",
		"npm3/package.json": pkgTest, "npm3/test.js": nodeTest, "npm3/value": "good\n",
		"mk1/Makefile": "test:\n\t[ \"$$(cat value)\" = good ]\n", "mk1/value": "good\n",
		"mk2/Makefile": "test:\n\t[ \"$$(cat value)\" = good ]\n", "mk2/value": "good\n",
		"py1/tests/test_value.py": pyTest, "py1/value": "good\n",
		"py2/tests/test_value.py": pyTest, "py2/value": "good\n",
		"py3/tests/test_value.py": pyTest, "py3/value": "good\n",
	}
}

// The harness notes: a file the change edited (the base's version ran) or
// added (its absence ran), then the files.
const (
	edited = "harness changed in this change: ran the base's version of "
	added  = "harness new in the change (not at the base): ran without "
)

// noteNames reports whether some note of notes says what kind and names
// file.
func noteNames(notes []string, kind, file string) bool {
	return slices.ContainsFunc(notes, func(n string) bool {
		rest, ok := strings.CutPrefix(n, kind)
		return ok && slices.Contains(strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' }), file)
	})
}

// discoverLies: per check, the lie and the harness note naming the file
// that decided it.
var discoverLies = []struct {
	check string
	lie   files
	kind  string
	file  string
}{
	{"bash-e", files{"scripts/t.sh": "exit 0\n"}, edited, "scripts/t.sh"},
	{"cd-sub", files{"sub/t.sh": "exit 0\n"}, edited, "sub/t.sh"},
	{"timeout", files{"t.sh": "exit 0\n"}, edited, "t.sh"},
	{"python-script", files{"scripts/run_tests.py": "import sys\nsys.exit(0)\n"}, edited, "scripts/run_tests.py"},
	{"sourced", files{"lib/lib.sh": "check() { [ \"$(cat \"$1\")\" = good ] || true; }\n"}, edited, "lib/lib.sh"},
	{"npm-script", files{"npm1/package.json": strings.Replace(pkgTest, "node test.js", "echo ok", 1)}, edited, "npm1/package.json"},
	{"npmrc", files{"npm2/.npmrc": "script-shell=/bin/true\n"}, added, "npm2/.npmrc"},
	{"node-shim", files{"npm3/node_modules/.bin/node": "#!/bin/sh\nexit 0\n"}, added, "npm3/node_modules/.bin/node"},
	{"make-recipe", files{"mk1/Makefile": "test:\n\ttrue\n"}, edited, "mk1/Makefile"},
	{"gnumakefile", files{"mk2/GNUmakefile": "test:\n\ttrue\n"}, added, "mk2/GNUmakefile"},
	{"conftest", files{"py1/conftest.py": conftestForge}, added, "py1/conftest.py"},
	{"conftest-listed", files{"py2/tests/conftest.py": conftestForge}, added, "py2/tests/conftest.py"},
	{"pytest-shadow", files{"py3/pytest.py": "import sys\nsys.exit(0)\n"}, added, "py3/pytest.py"},
}

// operatorPolicy writes an operator policy (the checks declare no
// reports: exit codes decide, and fail_on_skipped_check is off).
func operatorPolicy(t *testing.T, doc string) string {
	t.Helper()
	pol := filepath.Join(t.TempDir(), "operator.yaml")
	if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return pol
}

// discoverCommits makes the base and, from it, the candidate cand.
func discoverCommits(t *testing.T, r *gittest.Repo, name string, cand files) string {
	t.Helper()
	r.Checkout("main", false)
	r.Checkout(name, true)
	apply(r, cand)
	for p := range cand {
		if strings.HasSuffix(p, ".sh") || strings.Contains(p, "node_modules/.bin/") {
			if err := os.Chmod(filepath.Join(r.Dir, p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := r.Commit(name)
	r.Checkout("main", false)
	return id
}

// TestHarnessDiscoveredLies: every lie of issue 25's Why is NOT
// MERGE-READY, each check failing its real test under the base's harness
// with the deciding file named; under verification.require_pinned_harness
// the check runmill cannot resolve fails too. The offline verifier
// recomputes the harness records from git.
func TestHarnessDiscoveredLies(t *testing.T) {
	_, key, trust := newTestKey(t)
	r := gittest.New(t)
	apply(r, discoverBase())
	base := r.Commit("base")
	lies := files{}
	for _, l := range discoverLies {
		for p, c := range l.lie {
			lies[p] = c
		}
	}
	for _, p := range []string{"scripts/value", "sub/value", "t.value", "py0/value", "lib/value", "npm1/value", "npm2/value", "npm3/value", "mk1/value", "mk2/value", "py1/value", "py2/value", "py3/value"} {
		lies[p] = "bad\n"
	}
	cand := discoverCommits(t, r, "lies", lies)
	pol := operatorPolicy(t, "verification:\n  fail_on_skipped_check: false\n  require_pinned_harness: true\n")
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key; o.Discover.PolicyFile = pol })
	if run.MergeReady() {
		t.Fatalf("a change of lies is merge-ready")
	}
	runs := map[string]record.CheckRun{}
	for _, c := range run.Delivery.Checks {
		if c.Phase == record.Candidate {
			runs[c.CheckID] = c
		}
	}
	for _, l := range discoverLies {
		c, ok := runs[l.check]
		if !ok {
			t.Errorf("%s: no candidate run", l.check)
			continue
		}
		if c.Status != record.Failed || !slices.ContainsFunc(c.Findings, func(f record.Finding) bool { return f.Rule == verdict.RuleCheckFailed }) {
			t.Errorf("%s: %s with findings %+v; want the real test to fail under the base's harness\n%s", l.check, c.Status, c.Findings, outputs(run))
		}
		if !noteNames(c.Notes, l.kind, l.file) {
			t.Errorf("%s: no note names the deciding file %s (%q); notes %q", l.check, l.file, l.kind, c.Notes)
		}
		if c.Harness == nil || !c.Harness.Changed() || c.TreeBefore == c.Harness.CommitTree {
			t.Errorf("%s: the base's harness did not differ from the commit: %+v", l.check, c.Harness)
		}
		if len(c.Harness.Unpinned) > 0 {
			t.Errorf("%s: resolved, yet unpinned %+v", l.check, c.Harness.Unpinned)
		}
	}
	u := runs["unknown"]
	if u.Status != record.Failed || len(u.Findings) != 1 || u.Findings[0].Rule != verdict.RuleHarnessUnpinned ||
		!strings.Contains(u.Findings[0].Message, "harness not pinned: awk BEGIN { exit 0 }: runmill does not know which files awk reads; list it under harness:") {
		t.Errorf("unknown: %s %+v; want the unresolved harness to fail under require_pinned_harness", u.Status, u.Findings)
	}
	rejudge(t, run)
	verifyHarnessOffline(t, r, base, cand, pol, run, trust)
}

// TestHarnessDiscoveredHonest: honest edits to discovered harness files (a
// comment in a script and a recipe, a package.json field, a conftest.py
// with a fixture nothing uses) run under the base's harness and pass: the
// change is MERGE-READY, saying which harness ran. A command runmill
// cannot resolve is a note, not a failure, without
// require_pinned_harness.
func TestHarnessDiscoveredHonest(t *testing.T) {
	_, key, trust := newTestKey(t)
	r := gittest.New(t)
	apply(r, discoverBase())
	base := r.Commit("base")
	cand := discoverCommits(t, r, "honest", files{
		"scripts/t.sh":      "#!/bin/sh\n# the value must be good\n[ \"$(cat scripts/value)\" = good ]\n",
		"mk1/Makefile":      "# run the test\ntest:\n\t[ \"$$(cat value)\" = good ]\n",
		"npm1/package.json": strings.Replace(pkgTest, `"private": true`, `"private": true, "description": "values"`, 1),
		"py1/conftest.py":   "import pytest\n\n@pytest.fixture\ndef spare():\n    return 1\n",
		"lib/lib.sh":        "# check FILE: its content is good\ncheck() { [ \"$(cat \"$1\")\" = good ]; }\n",
	})
	pol := operatorPolicy(t, "verification:\n  fail_on_skipped_check: false\n")
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key; o.Discover.PolicyFile = pol })
	if !run.MergeReady() {
		t.Fatalf("an honest harness change is not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
	}
	notes := map[string][]string{}
	for _, c := range run.Delivery.Checks {
		notes[c.CheckID] = append(notes[c.CheckID], c.Notes...)
	}
	for check, n := range map[string][2]string{
		"bash-e": {edited, "scripts/t.sh"}, "make-recipe": {edited, "mk1/Makefile"}, "npm-script": {edited, "npm1/package.json"},
		"conftest": {added, "py1/conftest.py"}, "sourced": {edited, "lib/lib.sh"},
	} {
		if !noteNames(notes[check], n[0], n[1]) {
			t.Errorf("%s: no note says %q %s; notes %q", check, n[0], n[1], notes[check])
		}
	}
	if u := "harness not pinned: awk BEGIN { exit 0 }: runmill does not know which files awk reads; list it under harness:"; !slices.Contains(notes["unknown"], u) {
		t.Errorf("unknown: no note says %q; notes %q", u, notes["unknown"])
	}
	rejudge(t, run)
	verifyHarnessOffline(t, r, base, cand, pol, run, trust)
}

// verifyHarnessOffline: `evidence expect` derives the same harness records
// from git (the base's scripts and makefiles read again), and the bundle
// is bound to them and recomputes.
func verifyHarnessOffline(t *testing.T, r *gittest.Repo, base, cand, pol string, run *engine.Run, trust []byte) {
	t.Helper()
	exp, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: pol}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	unpinned := 0
	for _, h := range exp.Harness {
		unpinned += len(h.Candidate.Unpinned)
	}
	if unpinned != 1 {
		t.Errorf("expectations record %d unresolved parts, want the unknown check's one", unpinned)
	}
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	res := evidence.Verify(bundle, trust, doc, evidence.VerifyOptions{Now: time.Now()})
	// Authentic, bound (the harness records equal git's) and consistent
	// (every status recomputed); refused, if at all, only for what it says:
	// without reports no coverage is proven.
	if !res.Valid && res.Reason != evidence.ReasonRequiredEvidence && res.Reason != evidence.ReasonNotMergeReady {
		t.Fatalf("the bundle: %s %s, want it bound and recomputed", res.Reason, res.Message)
	}
	passed := map[string]bool{}
	for _, st := range res.Steps {
		passed[st.Name] = st.Status == evidence.StepPassed
	}
	if !passed["binding"] || !passed["record"] {
		t.Fatalf("the binding and record steps: %+v", res.Steps)
	}
}
