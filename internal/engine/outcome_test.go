package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/verifytest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 12: every Outcome rule through Verify against the real containerd,
// each with the verdict and the finding it must show. docs/outcome.md lists
// the rules with the test that proves each one.

// files is one commit's edits: files to write (content "" removes the path).
type files = verifytest.Files

// outcomeCase is a repository at base, a candidate change, and what the
// verdict must say.
type outcomeCase struct {
	name     string
	base     files  // files of the base commit (the policy included)
	cand     files  // the candidate's edits on top of base
	operator string // operator policy text, "" for none
	ready    bool
	want     []string // substrings some reason must contain
	notWant  []string // substrings no reason may contain
}

func runOutcome(t *testing.T, c outcomeCase) *engine.Run {
	t.Helper()
	r, base, cand := caseCommits(t, c)
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) {
		if c.operator != "" {
			p := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(p, []byte(c.operator), 0o644); err != nil {
				t.Fatal(err)
			}
			o.Discover.PolicyFile = p
		}
	})
	wantReasons(t, run, c.ready, c.want, c.notWant)
	rejudge(t, run)
	return run
}

func apply(r *gittest.Repo, c files) { verifytest.Apply(r, c) }

// caseCommits makes a case's repository: its base commit, and the
// candidate's edits on a branch from it.
func caseCommits(t *testing.T, c outcomeCase) (r *gittest.Repo, base, cand string) {
	t.Helper()
	r = gittest.New(t)
	apply(r, c.base)
	base = r.Commit("base")
	r.Checkout("candidate", true)
	apply(r, c.cand)
	return r, base, r.Commit("candidate")
}

// rejudge holds the recorded statuses to their facts, as evidence verify
// does: each run's status, coverage and findings, and the verdict.
func rejudge(t *testing.T, run *engine.Run) {
	t.Helper()
	d := run.Delivery
	for i := range d.Checks {
		rec := d.Checks[i]
		j := evidence.Judge(&d.Manifest, &rec, d.Checks)
		if j.Status != d.Checks[i].Status || j.Coverage != d.Checks[i].Coverage || len(j.Findings) != len(d.Checks[i].Findings) {
			t.Errorf("check %s (%s): recorded %s/%s/%d findings, its facts give %s/%s/%d", rec.CheckID, rec.Phase,
				d.Checks[i].Status, d.Checks[i].Coverage, len(d.Checks[i].Findings), j.Status, j.Coverage, len(j.Findings))
		}
	}
	if v := verdict.Evaluate(evidence.VerdictInput(&d)); v.MergeReady != d.Verdict.MergeReady {
		t.Errorf("recomputed merge-ready %v, recorded %v", v.MergeReady, d.Verdict.MergeReady)
	}
}

const nodeJUnitPolicy = `checks:
  - id: unit
    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/ || true
    report: {path: reports/unit.xml, format: junit}
    timeout: 60s
`

const nodeTests = `const test = require('node:test');
const assert = require('node:assert');
test('adds', () => assert.strictEqual(1 + 1, 2));
test('subtracts', () => assert.strictEqual(3 - 1, 2));
`

// tapScript prints a TAP point per line of tests/list (verifytest.TAPScript);
// tapListPolicy runs it.
const (
	tapScript     = verifytest.TAPScript
	tapListPolicy = verifytest.TAPListPolicy
)

func TestMaskedFailures(t *testing.T) {
	goReports := goJSONReports(t)
	goPolicy := `checks:
  - id: unit
    run: cat testdata/go.json > reports/unit.json; true
    report: {path: reports/unit.json, format: go-json}
`
	for _, c := range []outcomeCase{
		{name: "junit failure behind || true", base: files{".runmill/checks.yaml": nodeJUnitPolicy, "tests/a.test.js": nodeTests},
			cand:  files{"tests/a.test.js": strings.Replace(nodeTests, "3 - 1, 2", "3 - 1, 3", 1)},
			ready: false, want: []string{verdict.RuleTestsFailed, "subtracts"}},
		{name: "tap not ok with exit 0", base: files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\nzero_qty\n"},
			cand:  files{"tests/list": "total\nzero_qty FAIL\n"},
			ready: false, want: []string{verdict.RuleTestsFailed, "zero_qty"}},
		{name: "go-json failure behind ; true", base: files{".runmill/checks.yaml": goPolicy, "testdata/go.json": goReports["pass"]},
			cand:  files{"testdata/go.json": goReports["fail"]},
			ready: false, want: []string{verdict.RuleTestsFailed, "example.com/calc::TestSub", "want 2"}},
		{name: "go-json build failure behind ; true", base: files{".runmill/checks.yaml": goPolicy, "testdata/go.json": goReports["pass"]},
			cand:  files{"testdata/go.json": goReports["build"]},
			ready: false, want: []string{verdict.RuleReportFault, "example.com/calc"}},
	} {
		t.Run(c.name, func(t *testing.T) { runOutcome(t, c) })
	}
}

// TestPathsInIDs: node 20's JUnit reporter names a test-less file under
// test/ by its absolute path; every run sees its checkout at one fixed path,
// so a docs-only change is not a removed test (issue 12's false alarm, with
// the policy runmill init writes for node --test). The entry is a loaded
// file, recorded relative to that path (issue 24, docs/reports.md).
func TestPathsInIDs(t *testing.T) {
	policy := `checks:
  - id: unit
    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml
    report: {path: reports/unit.xml, format: junit}
    timeout: 60s
`
	run := runOutcome(t, outcomeCase{name: "docs-only change",
		base: files{".runmill/checks.yaml": policy, "test/a.test.js": nodeTests, "test/helpers.js": "module.exports = { two: 2 };\n"},
		cand: files{"README.md": "docs\n"}, ready: true})
	for _, c := range run.Delivery.Checks {
		if c.Report == nil || c.Report.Inventory == nil || !slices.Equal(c.Report.Files, []string{"test/helpers.js"}) {
			t.Fatalf("%s: the helper is not recorded as a loaded file: %+v", c.Phase, c.Report)
		}
		for _, id := range c.Report.Inventory.Passed {
			if strings.Contains(string(id), "helpers.js") {
				t.Errorf("%s: the helper is a test id: %q", c.Phase, id)
			}
		}
	}
}

func TestJUnitErrorAndClaims(t *testing.T) {
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3") // setup.sh installs python3-pytest; CI has it
	}
	policy := `checks:
  - id: unit
    run: python3 -m pytest -q -p no:cacheprovider --junitxml=reports/unit.xml tests || true
    report: {path: reports/unit.xml, format: junit}
    timeout: 120s
`
	tests := "import pytest\n\ndef test_adds():\n    assert 1 + 1 == 2\n\ndef test_subtracts():\n    assert 3 - 1 == 2\n"
	fixtureError := tests + "\n@pytest.fixture\ndef db():\n    raise RuntimeError('database is down')\n\ndef test_query(db):\n    assert db\n"
	runOutcome(t, outcomeCase{name: "junit error behind || true",
		base: files{".runmill/checks.yaml": policy, "tests/test_calc.py": tests}, cand: files{"tests/test_calc.py": fixtureError},
		ready: false, want: []string{verdict.RuleTestsFailed, "test_query", "database is down"}})

	// A summary that claims a failure no element shows: the file says
	// something failed.
	claimPolicy := `checks:
  - id: unit
    run: cat testdata/junit.xml > reports/unit.xml
    report: {path: reports/unit.xml, format: junit}
`
	xml := func(failures int) string {
		return `<?xml version="1.0"?><testsuite name="calc" tests="2" failures="` + string(rune('0'+failures)) +
			`" errors="0"><testcase classname="calc" name="adds"/><testcase classname="calc" name="subtracts"/></testsuite>` + "\n"
	}
	runOutcome(t, outcomeCase{name: "summary claims a failure",
		base: files{".runmill/checks.yaml": claimPolicy, "testdata/junit.xml": xml(0)}, cand: files{"testdata/junit.xml": xml(1)},
		ready: false, want: []string{verdict.RuleClaimedFailed}})
}

// goJSONReports writes real `go test -json` reports of one module of two
// packages: all passing, a failing test in calc, and calc not building
// (util's test still runs and passes).
func goJSONReports(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/calc\n\ngo 1.22\n")
	write("calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\nfunc Sub(a, b int) int { return a - b }\n")
	write("util/util.go", "package util\n\nfunc Join(a, b string) string { return a + b }\n")
	write("util/util_test.go", "package util\n\nimport \"testing\"\n\nfunc TestJoin(t *testing.T) {\n\tif Join(\"a\", \"b\") != \"ab\" {\n\t\tt.Fatal(\"join\")\n\t}\n}\n")
	testSrc := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal(\"got\", Add(1, 1), \"want 2\")\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tif got := Sub(3, 1); got != WANT {\n\t\tt.Fatalf(\"got %d, want 2\", got)\n\t}\n}\n"
	out := map[string]string{}
	for _, name := range []string{"pass", "fail", "build"} {
		want := map[string]string{"pass": "2", "fail": "3", "build": "undefinedName"}[name]
		write("calc_test.go", strings.Replace(testSrc, "WANT", want, 1))
		b := hostGoTestJSON(t, dir)
		if !strings.Contains(b, `"Test":"TestJoin"`) {
			t.Fatalf("go test -json for %s did not run util's test:\n%s", name, b)
		}
		out[name] = b
	}
	return out
}

// hostGoTestJSON is a real `go test -json ./...` report of the module in
// dir, run on the host (cheaper than a toolchain in the sandbox, where the
// report is only cat'ed); a failing run's report is returned all the same.
func hostGoTestJSON(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin, err = exec.LookPath("/usr/local/go/bin/go"); err != nil {
			t.Fatal("go is needed to record real go test -json reports")
		}
	}
	cmd := exec.Command(goBin, "test", "-count=1", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off")
	b, _ := cmd.Output() // exits 1 for fail and build: the report is the point
	return string(b)
}

func TestOutputPhrases(t *testing.T) {
	prOnly := "autonomy: pr-only\nverification:\n  fail_on_skipped_check: false\n"
	nodeSpec := `checks:
  - id: unit
    run: node --test --test-reporter=spec tests/
`
	skipped := nodeTests + "test('needs the network', { skip: true }, () => {});\n"
	for _, c := range []outcomeCase{
		// Spec § 4: fail_on_skipped_check: false never turns an observed
		// identity-free skip or zero-test run into a pass.
		{name: "pr-only: an identity-free skip is not a pass", operator: prOnly,
			base: files{".runmill/checks.yaml": nodeSpec, "tests/a.test.js": nodeTests}, cand: files{"tests/a.test.js": skipped},
			ready: false, want: []string{"output.identity-free-skip", "skipped 1"}},
		{name: "pr-only: node's tests 0 is a zero-test run", operator: prOnly,
			base:  files{".runmill/checks.yaml": nodeSpec, "tests/a.test.js": nodeTests},
			cand:  files{"tests/a.test.js": "", "tests/README": "moved\n"},
			ready: false, want: []string{"output.zero-tests"}},
		{name: "pr-only: an honest change passes unproven", operator: prOnly,
			base: files{".runmill/checks.yaml": nodeSpec, "tests/a.test.js": nodeTests}, cand: files{"README.md": "docs\n"},
			ready: true},
		// A valid report is the authority on whether tests ran: a phrase a
		// passing test printed is a note.
		{name: "a zero-test phrase beside a valid report is a note",
			base:  files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\nzero_qty\n"},
			cand:  files{"tests/say": "No tests found in the fixtures directory (expected)\n"},
			ready: true},
	} {
		t.Run(c.name, func(t *testing.T) { runOutcome(t, c) })
	}
}

func TestHonestChangesPass(t *testing.T) {
	declared := tapListPolicy + "    declared_skips:\n      - test_id: fixture\n        cause: needs the live price feed; ENG-88\n"
	skippedAtBase := files{".runmill/checks.yaml": declared, "tests/tap.sh": tapScript, "tests/list": "total\nfixture SKIP\n"}
	bailedBase := files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\nzero_qty\nBAIL database down\n", "tests/exit": "1\n"}
	goReports := goJSONReports(t)
	goPolicy := `checks:
  - id: unit
    run: cat testdata/go.json > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
`
	for _, c := range []outcomeCase{
		// The declared-skip lifecycle: with the spec's own example (a
		// declared test skipped at base) later changes land.
		{name: "a README edit beside a declared skip", base: skippedAtBase, cand: files{"README.md": "docs\n"}, ready: true},
		{name: "the change that removes the declaration", base: skippedAtBase,
			cand: files{".runmill/checks.yaml": tapListPolicy}, ready: true},
		{name: "a declared test that passes again is stale", base: skippedAtBase,
			cand: files{"tests/list": "total\nfixture\n"}, ready: false, want: []string{"outcome.declared-skip.stale", "fixture"}},
		// A broken base does not block its own fix; its passed tests keep
		// authority.
		{name: "a base that bailed out: the fix lands", base: bailedBase,
			cand: files{"tests/list": "total\nzero_qty\nfixture\n", "tests/exit": ""}, ready: true},
		{name: "a base that bailed out: its passed tests keep authority", base: bailedBase,
			cand: files{"tests/list": "total\nfixture\n", "tests/exit": ""}, ready: false, want: []string{"RM-VERIFY-003", "zero_qty"}},
		{name: "a base whose Go package does not build: the fix lands", base: files{".runmill/checks.yaml": goPolicy, "testdata/go.json": goReports["build"]},
			cand: files{"testdata/go.json": goReports["pass"]}, ready: true},
		// Issue 24: a repeated id keeps authority by count, so renaming
		// both occurrences is two missing tests, as renaming one test is one.
		{name: "a base with duplicate ids: renaming them is two missing",
			base:  files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "same\nsame\nother\n"},
			cand:  files{"tests/list": "same_a\nsame_b\nother\n"},
			ready: false, want: []string{outcome.RuleMissing, "2 tests that passed at the base are missing", "[same]"}},
		{name: "a base with duplicate ids: the renaming lands with the old id declared",
			base: files{".runmill/checks.yaml": tapListPolicy + "    declared_skips:\n      - test_id: same\n        cause: renamed same_a and same_b\n",
				"tests/tap.sh": tapScript, "tests/list": "same\nsame\nother\n"},
			cand:  files{"tests/list": "same_a\nsame_b\nother\n"},
			ready: true},
		{name: "a base with duplicate ids: unique ids keep authority",
			base:  files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "same\nsame\nother\n"},
			cand:  files{"tests/list": "same_a\nsame_b\n"},
			ready: false, want: []string{"other"}},
		{name: "the candidate's duplicate ids still fail",
			base:  files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "a\nb\n"},
			cand:  files{"tests/list": "a\nb\nb\n"},
			ready: false, want: []string{verdict.RuleReportUnproven}},
		// Adopting runmill in one change: the policy and its script are new,
		// so the baseline cannot run; there is no baseline contract.
		{name: "adopting runmill in one change", base: files{"README.md": "a project\n"},
			cand:  files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\n"},
			ready: true},
	} {
		t.Run(c.name, func(t *testing.T) { runOutcome(t, c) })
	}
}

// TestBrokenBaselinesFailClosed: what spec § 3 keeps failing closed.
func TestBrokenBaselinesFailClosed(t *testing.T) {
	for _, c := range []outcomeCase{
		{name: "a zero-test baseline",
			base: files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total SKIP\n"},
			cand: files{"tests/list": "total\n"}, ready: false, want: []string{"baseline run: its report executed no test"}},
		{name: "a baseline without a report",
			base: files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": "exit 3\n"},
			cand: files{"tests/tap.sh": tapScript, "tests/list": "total\n"}, ready: false, want: []string{verdict.RuleBaselineInvalid}},
	} {
		t.Run(c.name, func(t *testing.T) { runOutcome(t, c) })
	}
}

func TestFocusEvasions(t *testing.T) {
	base := files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\n",
		"tests/cart.test.js": "describe('cart', () => {\n  it('totals', () => {});\n});\n"}
	for _, c := range []outcomeCase{
		{name: "a NUL byte in a comment", base: base,
			cand: files{"tests/cart.test.js": "// \x00 binary?\ndescribe('cart', () => {\n  it.only('totals', () => {});\n});\n"},
			want: []string{"outcome.focused", "tests/cart.test.js"}},
		{name: "a marker in a helper not named like a test", base: base,
			cand: files{"lib/describe-helpers.js": "module.exports = (name, fn) => describe.only(name, fn);\n"},
			want: []string{"outcome.focused", "lib/describe-helpers.js"}},
		{name: "a .tests.js file", base: base,
			cand: files{"src/cart.tests.js": "it.only('totals', () => {});\n"}, want: []string{"outcome.focused", "src/cart.tests.js"}},
		{name: "index access", base: base,
			cand: files{"tests/cart.test.js": "it['only']('totals', () => {});\n"}, want: []string{"outcome.focused"}},
		{name: "only: 1", base: base,
			cand: files{"tests/cart.test.js": "const test = require('node:test');\ntest('totals', {only: 1}, () => {});\n"}, want: []string{"outcome.focused"}},
		{name: "only: !0", base: base,
			cand: files{"tests/cart.test.js": "const test = require('node:test');\ntest('totals', {only: !0}, () => {});\n"}, want: []string{"outcome.focused"}},
		// The other direction: an options object of an ordinary call is no
		// focus, in library code or in a test.
		{name: "an only option of a library call", base: base,
			cand: files{"lib/pick.js": "const pick = require('./pick-impl');\nmodule.exports = (o) => pick(o, {only: true});\n"}, ready: true},
		// Spec § 3: a focused baseline fails closed.
		{name: "a focused baseline", base: files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\n",
			"tests/cart.test.js": "it.only('totals', () => {});\n"},
			cand: files{"tests/cart.test.js": "it('totals', () => {});\n"}, want: []string{"outcome.focused", "at the baseline commit"}},
	} {
		t.Run(c.name, func(t *testing.T) { runOutcome(t, c) })
	}
}

// TestHostileNamesAreEscaped (issue 13, S5): a file name that holds a
// workflow command and terminal escapes reaches the progress stream as
// escaped text, never as a line of its own.
func TestHostileNamesAreEscaped(t *testing.T) {
	r := gittest.New(t)
	apply(r, files{".runmill/checks.yaml": tapListPolicy, "tests/tap.sh": tapScript, "tests/list": "total\n"})
	base := r.Commit("base")
	hostile := "x\n::error::INJ\n\x1b[2K\x1b[1AMERGE-READY all fine\x1b[8m.test.js"
	r.Write(hostile, "it.only('x', () => {});\n")
	cand := r.Commit("hostile name")
	var progress strings.Builder
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Progress = &progress })
	if run.MergeReady() || !hasRule(run, "outcome.focused") {
		t.Fatalf("the focus in the hostile file was not found:\n%s", strings.Join(rules(run), "\n"))
	}
	out := progress.String()
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("an escape byte reached the progress stream:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "runmill: ") {
			t.Errorf("progress line %q was started by repository text", line)
		}
	}
	if !strings.Contains(out, `x\n::error::INJ\n\x1b[2K`) {
		t.Errorf("the file name is not shown escaped:\n%s", out)
	}
}
