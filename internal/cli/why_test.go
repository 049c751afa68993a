package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/golden"
)

// Issue 14: every refusal says why, in words, where a person looks first.
// Each case is a real change verified through `runmill verify` against the
// real containerd; the golden files hold the exact Why:, Overrides: and
// Unproven: blocks of the console and the matching sections of the job
// summary. The causes are produced for real (a write into the read-only
// checkout, a module lookup with the network off, a DNS lookup without a
// network, a missing command, a flag the tests' own parser rejects), not
// printed by a script. The Go case compiles with a cold build cache, which
// can take minutes on a loaded machine: its timeout is generous.

type whyCase struct {
	name     string
	base     map[string]string
	cand     map[string]string // "" removes the path
	operator string
	ready    bool
	// summary are lines the job summary must hold, in order (its findings
	// table is not in the golden, which holds the Why section).
	summary []string
}

const nodeWriteTest = `const test = require('node:test');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
test('keeps a scratch file', () => {
  fs.writeFileSync(path.join(DIR, 'scratch.txt'), 'x');
});
test('adds', () => {});
`

func TestVerifyWhy(t *testing.T) {
	needContainerd(t)
	many := func(n int, skip int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if i > skip {
				b.WriteString("case_" + string(rune('a'+(i-1)/26)) + string(rune('a'+(i-1)%26)) + "\n")
			}
		}
		return b.String()
	}
	tapList := "#!/bin/sh\ni=0\nwhile read -r n; do i=$((i+1)); echo \"ok $i $n\"; done < tests/list\necho \"1..$i\"\n"
	for _, c := range []whyCase{
		{name: "failing test writes into the checkout",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n    report: {path: reports/unit.xml, format: junit}\n    timeout: 60s\n",
				"tests/a.test.js":      strings.Replace(nodeWriteTest, "DIR", "os.tmpdir()", 1),
			},
			cand: map[string]string{"tests/a.test.js": strings.Replace(nodeWriteTest, "DIR", "'.'", 1)}},
		{name: "module lookup with the network off",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: go\n    run: go test -json ./... > reports/go.json\n    report: {path: reports/go.json, format: go-json}\n    timeout: 600s\n",
				"go.mod":               "module example.com/calc\n\ngo 1.22\n",
				"calc.go":              "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
				"calc_test.go":         "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
			},
			cand: map[string]string{
				"go.mod":  "module example.com/calc\n\ngo 1.22\n\nrequire github.com/runmill/absent v1.0.0\n",
				"calc.go": "package calc\n\nimport _ \"github.com/runmill/absent\"\n\nfunc Add(a, b int) int { return a + b }\n",
			}},
		{name: "command not found",
			base: map[string]string{".runmill/checks.yaml": "checks:\n  - id: lint\n    run: true\n"},
			cand: map[string]string{".runmill/checks.yaml": "checks:\n  - id: lint\n    run: true\n", "README.md": "x\n"},
			// The policy is read from the base; the operator's definition
			// names a tool the sandbox cannot see.
			operator: "verification:\n  fail_on_skipped_check: false\n  commands:\n    - id: lint\n      run: runmill-no-such-linter --all\n"},
		{name: "no network",
			// The script the command names is harness (the base's runs,
			// issue 25); the code it loads is the change's.
			base: map[string]string{".runmill/checks.yaml": "checks:\n  - id: fetch\n    run: node scripts/fetch.js\n",
				"scripts/fetch.js": "require('./lookup.js');\n", "scripts/lookup.js": "console.log('ok');\n"},
			cand:     map[string]string{"scripts/lookup.js": "require('node:dns').lookup('registry.npmjs.org', (err) => {\n  if (err) { console.error('Error: ' + err.message); process.exit(1); }\n});\n"},
			operator: "verification:\n  fail_on_skipped_check: false\n"},
		{name: "flag rejected by the tests' argument parsing",
			base: map[string]string{".runmill/checks.yaml": "checks:\n  - id: cli\n    run: node tests/cli.test.js --ci\n",
				"tests/cli.test.js": "require('./cli.js');\n", "tests/cli.js": "console.log('ok');\n"},
			cand:     map[string]string{"tests/cli.js": "const { parseArgs } = require('node:util');\ntry { parseArgs({ options: { verbose: { type: 'boolean' } } }); } catch (e) { console.error('error: ' + e.message); process.exit(1); }\n"},
			operator: "verification:\n  fail_on_skipped_check: false\n"},
		{name: "a deleted test file lists its ids one per line",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: sh tests/tap.sh > reports/unit.tap\n    report: {path: reports/unit.tap, format: tap}\n",
				"tests/tap.sh":         tapList, "tests/list": many(30, 0)},
			cand: map[string]string{"tests/list": "case_ab\n"}},
		{name: "operator override drops the repository's dependencies and timeout",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: npm test\n    dependencies: npm\n    timeout: 300s\n",
			},
			cand:     map[string]string{"README.md": "x\n"},
			operator: "autonomy: pr-only\nverification:\n  fail_on_skipped_check: false\n  commands:\n    - id: unit\n      run: \"true\"\n",
			ready:    true},
		{name: "pr-only lets an unproven deletion through and says so",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: sh tests/tap.sh\n",
				"tests/tap.sh":         tapList, "tests/list": "total\nzero_qty\n"},
			cand:     map[string]string{"tests/list": "total\n"},
			operator: "autonomy: pr-only\nverification:\n  fail_on_skipped_check: false\n",
			ready:    true},
		// Issue 27: what a new user met on six real projects, each cause
		// said as it is.
		{name: "pytest cannot import a src layout package",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: pytest\n    run: PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -p no:cacheprovider --junitxml=reports/pytest.xml\n    report: {path: reports/pytest.xml, format: junit}\n    timeout: 120s\n",
				"src/calc/__init__.py": "def add(a, b):\n    return a + b\n",
				"tests/test_smoke.py":  "def test_smoke():\n    assert True\n",
			},
			cand:    map[string]string{"tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"},
			summary: []string{"ModuleNotFoundError"}},
		{name: "a rust test panics",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: cargo\n    run: RUSTUP_HOME=/root/.rustup RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=\"$TMPDIR/target\" cargo test --offline --tests -- -Z unstable-options --format junit > reports/cargo.xml\n    report: {path: reports/cargo.xml, format: junit}\n    timeout: 300s\n",
				"Cargo.toml":           "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
				"Cargo.lock":           "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"calc\"\nversion = \"0.1.0\"\n",
				"src/lib.rs":           "pub fn add(a: u64, b: u64) -> u64 { a + b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 2), 4);\n    }\n}\n",
			},
			cand: map[string]string{"src/lib.rs": "pub fn add(a: u64, b: u64) -> u64 { a + b + 1 }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() {\n        eprintln!(\"warning: using the slow path\");\n        assert_eq!(add(2, 2), 4, \"two and two\");\n    }\n}\n"},
			// As runmill init writes it on this machine (rustup's
			// toolchains outside the default binds; host_paths replaces
			// the default list).
			operator: "sandbox:\n  host_paths: [/usr, /bin, /sbin, /lib, /lib64, /etc/alternatives, /etc/ld.so.cache, /etc/ld.so.conf, /etc/ld.so.conf.d, /etc/ssl, /etc/localtime, /etc/nsswitch.conf, /root/.cargo, /root/.rustup]\n",
			summary:  []string{"panicked at src"}},
		{name: "a node test file fails to load",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n    report: {path: reports/unit.xml, format: junit, identity: suite-path}\n    timeout: 60s\n",
				"tests/a.test.js":      "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n",
				"tests/b.test.js":      "const test = require('node:test');\ntest('parses', () => {});\n",
			},
			cand: map[string]string{
				"tests/a.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.strictEqual(1 + 1, 3));\n",
				"tests/b.test.js": "const data = require('./fixtures/data.json');\nconst test = require('node:test');\ntest('parses', () => {});\n",
			},
			summary: []string{"the file did not load", "Cannot find module"}},
		{name: "two tests share an id",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n    report: {path: reports/unit.xml, format: junit}\n    timeout: 60s\n",
				"tests/a.test.js":      "const test = require('node:test');\ntest('adds', () => {});\n",
			},
			cand:    map[string]string{"tests/b.test.js": "const test = require('node:test');\ntest('adds', () => {});\n"},
			summary: []string{"duplicate test id", "coverage.report-unproven"}},
		{name: "a focus marker node runs past",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n    report: {path: reports/unit.xml, format: junit}\n    timeout: 60s\n",
				"tests/a.test.js":      "const test = require('node:test');\ntest('adds', () => {});\ntest('subtracts', () => {});\n",
			},
			cand: map[string]string{"tests/a.test.js": "const test = require('node:test');\ntest.only('adds', () => {});\ntest('subtracts', () => {});\n"}},
		{name: "an npm 6 lockfile stops the check before it starts",
			base: map[string]string{
				".runmill/checks.yaml": "checks:\n  - id: unit\n    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n    dependencies: npm\n    report: {path: reports/unit.xml, format: junit}\n    timeout: 60s\n",
				"package.json":         "{\n  \"name\": \"shop\",\n  \"version\": \"1.0.0\",\n  \"private\": true\n}\n",
				"package-lock.json":    "{\n  \"name\": \"shop\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 1\n}\n",
				".gitignore":           "node_modules/\n",
				"tests/a.test.js":      "const test = require('node:test');\ntest('adds', () => {});\n",
			},
			cand: map[string]string{"README.md": "x\n"}},
	} {
		t.Run(c.name, func(t *testing.T) { runWhy(t, c) })
	}
}

// TestVerifyEscapesRepositoryText is issue 13 S5 through the real
// containerd: a committed file whose name carries a workflow command and
// terminal escapes, holding `it.only(`, is named on stdout (the table, Why:)
// and in the job summary only escaped.
func TestVerifyEscapesRepositoryText(t *testing.T) {
	needContainerd(t)
	name := "x\n::error::INJ\n\x1b[2K\x1b[1AMERGE-READY all fine\x1b[8m.test.js"
	out, summary := runWhy(t, whyCase{name: "hostile file name",
		base:     map[string]string{".runmill/checks.yaml": "checks:\n  - id: unit\n    run: \"true\"\n"},
		cand:     map[string]string{name: "it.only('x', () => {});\n"},
		operator: "verification:\n  fail_on_skipped_check: false\n"})
	for what, s := range map[string]string{"stdout": out, "summary": summary} {
		// ESC, and CSI both as a code point and as a lone byte.
		if strings.ContainsAny(s, "\x1b\u009b") || strings.IndexByte(s, 0x9b) >= 0 {
			t.Errorf("%s holds a raw escape:\n%q", what, s)
		}
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "::") {
				t.Errorf("%s has a line GitHub reads as a workflow command: %q", what, l)
			}
		}
	}
	if !strings.Contains(out, `x\n::error::INJ\n\x1b[2K\x1b[1AMERGE-READY all fine\x1b[8m.test.js`) {
		t.Errorf("stdout does not name the file escaped:\n%s", out)
	}
}

// runWhy verifies c and compares the console's Why: blocks and the
// summary's Why sections with the goldens; it returns stdout and the
// summary.
func runWhy(t *testing.T, c whyCase) (string, string) {
	t.Helper()
	r := gittest.New(t)
	for p, s := range c.base {
		r.Write(p, s)
	}
	base := r.Commit("base")
	r.Checkout("candidate", true)
	for p, s := range c.cand {
		if s == "" {
			r.Remove(p)
		} else {
			r.Write(p, s)
		}
	}
	cand := r.Commit("candidate")
	state := t.TempDir()
	summaryFile := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summaryFile)
	t.Setenv("RUNMILL_SIGNING_KEY", "")
	args := []string{"verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", state,
		"--containerd-address", containerdAddress, "--no-github", "--github-actions"}
	if c.operator != "" {
		p := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(p, []byte(c.operator), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--policy", p)
	}
	code, out, errOut := runCLI(t, "", args...)
	want := 1
	if c.ready {
		want = 0
	}
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	sum, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatal(err)
	}
	runID := regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{8}`)
	norm := func(s string) string { return runID.ReplaceAllString(s, "RUN") }
	golden.Bytes(t, filepath.Join("testdata", "TestVerifyWhy", strings.ReplaceAll(c.name, " ", "_")+".console.golden"), []byte(norm(section(out, "\nWhy:", "\nOverrides:", "\nUnproven"))+"--\n"+norm(until(out, "\nGitHub:"))))
	golden.Bytes(t, filepath.Join("testdata", "TestVerifyWhy", strings.ReplaceAll(c.name, " ", "_")+".summary.golden"), []byte(norm(section(string(sum), "### Why", "### Overrides", "### Unproven"))))
	rest := string(sum)
	for _, w := range c.summary {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("the job summary lacks %q after what came before:\n%s", w, sum)
			break
		}
		rest = rest[i+len(w):]
	}
	return out, string(sum)
}

// section returns s from the first of starts it holds to the end of the
// block (the console's GitHub: line, the summary's notes or evidence).
func section(s string, starts ...string) string {
	i := -1
	for _, st := range starts {
		if j := strings.Index(s, st); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return ""
	}
	s = s[i:]
	for _, end := range []string{"\nGitHub:", "<details>", "### Evidence"} {
		if j := strings.Index(s, end); j >= 0 {
			s = s[:j]
		}
	}
	return strings.TrimLeft(s, "\n") + "\n"
}

// until returns the verdict line and the table: what precedes the blocks.
func until(s, end string) string {
	for _, e := range []string{"\nWhy:", "\nOverrides:", "\nUnproven", end} {
		if i := strings.Index(s, e); i >= 0 {
			s = s[:i]
		}
	}
	// Durations vary from run to run.
	return regexp.MustCompile(`(\d+h)?(\d+m)?\d+(\.\d+)?(ms|s|µs)\n`).ReplaceAllString(strings.SplitN(s, "\n", 3)[2], "D\n")
}
