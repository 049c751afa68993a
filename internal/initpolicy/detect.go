// Package initpolicy is what `runmill init` knows: it recognises a
// repository's ecosystems and test runners from the files at its root and
// writes a starter .runmill/checks.yaml whose checks declare the reports
// that make coverage proven, plus an operator policy template that binds the
// toolchains the sandbox needs. It goes beyond the spec's starter, which
// cannot guess reporter flags: where a runner is recognised, the flags are
// the ones docs/reports.md records as working in the read-only sandbox.
package initpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/pkg/policy"
)

// Check is one generated check: its declaration, the tool its command needs
// on the sandbox's PATH, and the comment lines that explain it.
type Check struct {
	Spec    policy.CheckSpec
	Tool    string   // go, node, python3, cargo
	Comment []string // written above the check
}

// Plan is what Detect found: the checks to write and what it could not do.
type Plan struct {
	Checks []Check
	// Notes are findings a person must act on (also written as comments).
	Notes []string
}

// Ecosystems lists the ids of the generated checks, for messages.
func (p Plan) Ecosystems() []string {
	out := make([]string, len(p.Checks))
	for i, c := range p.Checks {
		out[i] = c.Spec.ID
	}
	return out
}

// maxManifest bounds the root files Detect reads (package.json and friends
// are small; anything larger is not a manifest worth guessing from).
const maxManifest = 1 << 20

// Detect reads the repository root (fsys) and plans one check per
// recognised ecosystem, in a fixed order: go, node, python, rust.
func Detect(fsys fs.FS) (Plan, error) {
	var p Plan
	for _, detect := range []func(fs.FS, *Plan) error{detectGo, detectNode, detectPython, detectRust} {
		if err := detect(fsys, &p); err != nil {
			return p, err
		}
	}
	taken := map[string]bool{}
	for i := range p.Checks {
		if r := p.Checks[i].Spec.Report; r != nil {
			r.Path = freeReportPath(fsys, r.Path, taken)
		}
	}
	return p, nil
}

// freeReportPath keeps the report off any path the repository already
// holds: a report that exists in the commit is refused (docs/reports.md,
// "before the command").
func freeReportPath(fsys fs.FS, path string, taken map[string]bool) string {
	for i := 0; ; i++ {
		cand := path
		if i > 0 {
			cand = strings.Replace(path, "reports/", fmt.Sprintf("reports/runmill-%d-", i), 1)
		}
		if _, err := fs.Stat(fsys, cand); errors.Is(err, fs.ErrNotExist) && !taken[cand] {
			taken[cand] = true
			return cand
		}
	}
}

// read returns a root file's bytes, nil when absent; a symlink or a
// directory is treated as absent (init never follows a link out of the
// repository).
func read(fsys fs.FS, name string) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if lst, ok := fsys.(fs.ReadLinkFS); ok {
		if li, err := lst.Lstat(name); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, nil
		}
	}
	if !st.Mode().IsRegular() {
		return nil, nil
	}
	if st.Size() > maxManifest {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxManifest)
	}
	return fs.ReadFile(fsys, name)
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

func report(path, format, identity string) *policy.ReportSpec {
	return &policy.ReportSpec{Path: path, Format: format, Identity: identity}
}

const defaultTimeout = policy.Duration(10 * time.Minute)

func detectGo(fsys fs.FS, p *Plan) error {
	mod, err := read(fsys, "go.mod")
	if err != nil || mod == nil {
		return err
	}
	c := Check{Tool: "go", Spec: policy.CheckSpec{
		ID:      "go",
		Run:     "go test -json ./... > reports/go.json",
		Report:  report("reports/go.json", "go-json", ""),
		Timeout: defaultTimeout,
	}}
	c.Comment = []string{
		"go test -json is a report runmill parses (ids: <import path>::<Test>); build",
		"and test output go to stdout, so the report is the redirected stream.",
	}
	sum, err := read(fsys, "go.sum")
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(sum)) > 0 {
		// A module with requirements cannot download them in the sandbox
		// (GOPROXY=off, no network): the operator prepares the module cache.
		c.Spec.Dependencies = "go-modules"
		c.Comment = append(c.Comment,
			"go.sum lists modules: the sandbox has no network, so the operator prepares",
			"a read-only module cache (`go mod download` outside verification).")
	}
	p.Checks = append(p.Checks, c)
	return nil
}

type packageJSON struct {
	Scripts         map[string]string `json:"scripts"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
	Workspaces      json.RawMessage   `json:"workspaces"`
}

func (pj packageJSON) has(name string) bool {
	_, a := pj.Dependencies[name]
	_, b := pj.DevDependencies[name]
	return a || b
}

// npmDefaultTest is what `npm init` writes: no test at all.
const npmDefaultTest = `echo "Error: no test specified" && exit 1`

// nodeRunner names the runner from the test script first (what the project
// actually runs), then from the declared dependencies.
func nodeRunner(pj packageJSON) string {
	script := pj.Scripts["test"]
	for _, r := range []struct{ runner, word string }{
		{"vitest", "vitest"}, {"jest", "jest"}, {"mocha", "mocha"}, {"node-test", "node --test"},
	} {
		if strings.Contains(script, r.word) {
			return r.runner
		}
	}
	for _, r := range []string{"vitest", "jest", "mocha"} {
		if pj.has(r) {
			return r
		}
	}
	if script != "" && script != npmDefaultTest {
		return "npm-test"
	}
	return ""
}

func detectNode(fsys fs.FS, p *Plan) error {
	b, err := read(fsys, "package.json")
	if err != nil || b == nil {
		return err
	}
	var pj packageJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("package.json does not parse (%v): no Node check written", err))
		return nil
	}
	runner := nodeRunner(pj)
	if runner == "" {
		p.Notes = append(p.Notes, "package.json has no test script and no known test runner (jest, vitest, mocha, node --test): no Node check written")
		return nil
	}
	c := Check{Tool: "node"}
	switch runner {
	case "node-test":
		args := nodeTestArgs(pj.Scripts["test"])
		c.Spec = policy.CheckSpec{ID: "node-test",
			Run: "node --test --test-reporter=spec --test-reporter-destination=stdout" +
				" --test-reporter=junit --test-reporter-destination=reports/node-test.xml" + args,
			Report: report("reports/node-test.xml", "junit", "suite-path")}
		c.Comment = []string{
			"node:test's JUnit reporter; suite-path makes ids 'describe > test::name' (its classname",
			"is always 'test'). Ids carry no file name: name top-level tests uniquely.",
		}
	case "vitest":
		c.Spec = policy.CheckSpec{ID: "vitest",
			Run:    "node_modules/.bin/vitest run --reporter=default --reporter=junit --outputFile.junit=reports/vitest.xml",
			Report: report("reports/vitest.xml", "junit", "")}
		c.Comment = []string{"Vitest's JUnit reporter; ids are 'file::describe > test'."}
	case "mocha":
		c.Spec = policy.CheckSpec{ID: "mocha",
			Run:    "node_modules/.bin/mocha --reporter xunit --reporter-option output=reports/mocha.xml",
			Report: report("reports/mocha.xml", "junit", "")}
		c.Comment = []string{
			"Mocha's built-in xunit reporter (mocha-junit-reporter deletes the file first and",
			"fails closed in the sandbox). Ids are 'describe titles::test': keep them unique.",
		}
	case "jest":
		c.Spec = policy.CheckSpec{ID: "jest"}
		if pj.has("jest-junit") {
			c.Spec.Run = `JEST_JUNIT_OUTPUT_FILE=reports/jest.xml JEST_JUNIT_CLASSNAME="{filepath}"` +
				` JEST_JUNIT_TITLE="{classname} {title}" JEST_JUNIT_ANCESTOR_SEPARATOR=" › "` +
				` node_modules/.bin/jest --reporters=default --reporters=jest-junit`
			c.Spec.Report = report("reports/jest.xml", "junit", "")
			c.Comment = append([]string{"jest-junit, with the file in the classname: ids are 'file::describe › test'."}, jestNoCI...)
		} else {
			c.Spec.Run = "node_modules/.bin/jest"
			c.Comment = append(slices.Clone(jestNoCI),
				"UNPROVEN: Jest has no JUnit reporter of its own. Add jest-junit as a devDependency",
				"and run `runmill init` again (or see docs/reports.md § Jest) to make coverage proven.")
			p.Notes = append(p.Notes, "jest without jest-junit: the jest check has no report, so its coverage stays unproven")
		}
	case "npm-test":
		c.Spec = policy.CheckSpec{ID: "npm-test", Run: "npm test --silent"}
		c.Comment = []string{
			"UNPROVEN: the test script uses no runner runmill recognises, so no report is",
			"declared. Add the runner's JUnit or TAP reporter (docs/reports.md) to make it proven.",
		}
		p.Notes = append(p.Notes, "package.json's test script uses no recognised runner: the npm-test check stays unproven")
	}
	if rest := droppedCommands(pj.Scripts["test"], runnerWords[runner]); len(rest) > 0 {
		// The check runs the runner alone, with its reporter; what else
		// the test script chains (a type check, a lint) would vanish
		// without a word (issue 27: "&& npm run check:type:ts").
		list := "`" + strings.Join(rest, "`, `") + "`"
		c.Comment = append(c.Comment, "NOT RUN by this check: the test script also runs "+list+";",
			"declare a check of its own for each that must gate merges.")
		p.Notes = append(p.Notes, fmt.Sprintf("package.json's test script also runs %s: the %s check runs %s alone, so declare a check of its own for each that must gate merges (run: npm run --silent NAME for a script)",
			list, c.Spec.ID, runnerWords[runner]))
	}
	c.Spec.Timeout = defaultTimeout
	c.Spec.Harness = runnerHarness(fsys, runner)
	lock, err := read(fsys, "package-lock.json")
	if err != nil {
		return err
	}
	switch {
	case lock != nil:
		c.Spec.Dependencies = "npm"
		c.Comment = append(c.Comment,
			"dependencies: npm — node_modules is not in the checkout; the operator runs `npm ci`",
			"in the source checkout and runmill mounts that exact tree read-only (spec § 3).")
		if len(pj.Workspaces) > 0 && string(pj.Workspaces) != "null" {
			p.Notes = append(p.Notes, "package.json declares npm workspaces: workspace links are refused by prepared dependencies (RM-VERIFY-005)")
		}
	case exists(fsys, "pnpm-lock.yaml"):
		c.Spec.Dependencies = "pnpm"
		c.Comment = append(c.Comment,
			"dependencies: pnpm — node_modules is not in the checkout; the operator runs `pnpm install`",
			"on each commit's package.json and pnpm-lock.yaml and imports it (docs/dependencies.md § pnpm).")
	case exists(fsys, "yarn.lock"):
		c.Spec.Dependencies = "yarn"
		c.Comment = append(c.Comment,
			"dependencies: yarn — node_modules is not in the checkout; for each commit the operator",
			"runs their own yarn on its package.json and yarn.lock alone, outside verification, and",
			"imports it (runmill deps import --strategy yarn; docs/dependencies.md § Yarn).")
		p.Notes = append(p.Notes, "yarn.lock: prepare each commit's install outside verification with the operator's yarn and runmill deps import --strategy yarn (the refusal prints the command); under Plug'n'Play the check runs node -r ./.pnp.cjs")
		if len(pj.Workspaces) > 0 && string(pj.Workspaces) != "null" {
			p.Notes = append(p.Notes, "package.json declares workspaces: Yarn workspaces are refused by prepared dependencies (RM-VERIFY-005)")
		}
	case exists(fsys, "bun.lockb"):
		c.Comment = append(c.Comment,
			"No dependency strategy: runmill prepares npm, pnpm, yarn and other declared strategies",
			"only and does not guess one for bun; without node_modules this check cannot run.")
		p.Notes = append(p.Notes, "a bun lockfile: runmill does not prepare its dependencies; the Node check will not find node_modules")
	case runner != "node-test" && runner != "npm-test":
		p.Notes = append(p.Notes, fmt.Sprintf("%s needs node_modules but there is no package-lock.json: commit one (npm install) so the check can declare dependencies: npm", runner))
	}
	p.Checks = append(p.Checks, c)
	return nil
}

// jestNoCI says why the template passes no --ci: a flag on jest's command
// line is also in the tests' process.argv, and a test that parses argv
// (a CLI's own tests) rejects it (issue 14: "error: unknown option '--ci'").
var jestNoCI = []string{"No --ci: the sandbox sets CI=true, which turns on Jest's CI mode; a flag here would",
	"also reach tests that parse process.argv (a CLI's own tests reject it)."}

// runnerWords are the words nodeRunner finds each runner by in a test
// script; the npm-test check runs the whole script, so it drops nothing.
var runnerWords = map[string]string{"vitest": "vitest", "jest": "jest", "mocha": "mocha", "node-test": "node --test"}

var shellChain = regexp.MustCompile(`\s*(?:&&|\|\||;)\s*`)

// droppedCommands are the commands a test script chains (&&, ||, ;)
// besides the one that runs the runner: the check does not run them.
func droppedCommands(script, runner string) []string {
	if runner == "" || strings.TrimSpace(script) == "" {
		return nil
	}
	var out []string
	for _, part := range shellChain.Split(strings.TrimSpace(script), -1) {
		if part != "" && !strings.Contains(part, runner) {
			out = append(out, part)
		}
	}
	return out
}

// nodeTestArgs keeps the file and directory arguments of a plain
// `node --test ARGS` script so the check runs the same files; anything more
// (shell operators, other flags) is not guessed at, and node's default
// discovery is used.
func nodeTestArgs(script string) string {
	w := strings.Fields(script)
	if len(w) < 2 || w[0] != "node" || w[1] != "--test" {
		return ""
	}
	var out []string
	for _, a := range w[2:] {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "&|;<>$`'\"\\(){}") {
			return ""
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return ""
	}
	return " " + strings.Join(out, " ")
}

func detectPython(fsys fs.FS, p *Plan) error {
	var markers []string
	pytest := false
	for _, f := range []struct{ name, needle string }{
		{"pyproject.toml", "pytest"}, {"pytest.ini", ""}, {"setup.cfg", "[tool:pytest]"},
		{"tox.ini", "[pytest]"}, {"conftest.py", ""}, {"setup.py", "pytest"},
	} {
		b, err := read(fsys, f.name)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		markers = append(markers, f.name)
		if f.needle == "" || bytes.Contains(b, []byte(f.needle)) {
			pytest = true
		}
	}
	if len(markers) == 0 {
		return nil
	}
	c := Check{Tool: "python3", Spec: policy.CheckSpec{
		ID: "pytest",
		// -p no:cacheprovider: pytest's cache would write .pytest_cache into
		// the read-only checkout. No bytecode is written for the same reason.
		Run:     "PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -p no:cacheprovider --junitxml=reports/pytest.xml",
		Report:  report("reports/pytest.xml", "junit", ""),
		Timeout: defaultTimeout,
	}}
	c.Spec.Harness = runnerHarness(fsys, "pytest")
	c.Comment = []string{
		"pytest's JUnit report; ids are 'module.Class::test[param]'. Name parametrize",
		"cases (ids=...) so ids do not shift when a case is added.",
		"runmill prepares no Python packages: pytest and what the tests import must be",
		"installed for the python3 the sandbox sees (host /usr, or an image).",
	}
	if !pytest {
		c.Comment = append(c.Comment, "No pytest configuration found ("+strings.Join(markers, ", ")+"): pytest also runs unittest-style tests.")
	}
	p.Checks = append(p.Checks, c)
	return nil
}

// cargoScript runs the whole workspace's unit and integration tests (not
// doctests: their ids carry line numbers, which shift with every edit) with
// libtest's JUnit formatter, and merges the one document each test binary
// prints into one report, naming each binary's suite after the target
// cargo says it is running. libtest's formatter is unstable:
// RUSTC_BOOTSTRAP=1 unlocks it on a stable toolchain.
const cargoScript = `CARGO_TARGET_DIR="$TMPDIR/cargo-target" RUSTC_BOOTSTRAP=1 cargo test --workspace --tests --locked --offline --no-fail-fast -- -Z unstable-options --format junit >"$TMPDIR/cargo-junit.xml" 2>"$TMPDIR/cargo-test.log"
rc=$?
cat "$TMPDIR/cargo-test.log" >&2
awk -v logfile="$TMPDIR/cargo-test.log" '
function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/"/, "\\&quot;", s); return s }
BEGIN {
  while ((getline line < logfile) > 0) {
    nf = split(line, w, " ")
    if (w[1] != "Running") continue
    bin = w[nf]; sub(/\)$/, "", bin); sub(/.*\//, "", bin); sub(/-[0-9a-f]+$/, "", bin)
    names[++n] = ((w[2] == "unittests") ? w[3] : w[2]) " (" bin ")"
  }
  print "<testsuites>"
}
{
  gsub(/<\?xml[^>]*\?>/, ""); gsub(/<\/?testsuites>/, "")
  while (index($0, "<testsuite name=\"test\"") > 0) { k++; sub(/<testsuite name="test"/, "<testsuite name=\"" esc(names[k]) "\"") }
  print
}
END { print "</testsuites>"; if (k != n) exit 1 }' "$TMPDIR/cargo-junit.xml" > reports/cargo.xml || rc=1
exit $rc`

// ignoresCargoLock reports whether a .gitignore has a line ignoring
// Cargo.lock (the cargo new --lib default before Rust 1.74).
func ignoresCargoLock(gitignore []byte) bool {
	for _, l := range strings.Split(string(gitignore), "\n") {
		switch strings.TrimSpace(l) {
		case "Cargo.lock", "/Cargo.lock", "**/Cargo.lock":
			return true
		}
	}
	return false
}

func detectRust(fsys fs.FS, p *Plan) error {
	manifest, err := read(fsys, "Cargo.toml")
	if err != nil || manifest == nil {
		return err
	}
	c := Check{Tool: "cargo", Spec: policy.CheckSpec{
		ID:      "cargo",
		Run:     cargoScript,
		Report:  report("reports/cargo.xml", "junit", "suite-path"),
		Timeout: defaultTimeout,
	}}
	c.Comment = []string{
		"cargo test has no stable report format. This uses libtest's JUnit formatter, which",
		"is unstable (RUSTC_BOOTSTRAP=1 unlocks it on stable; it may change between Rust",
		"releases), merges the per-binary documents into one, and names each suite after",
		"its target: ids are 'src/lib.rs (crate) > module::test'. Doctests are not run",
		"(their ids hold line numbers); #[ignore] tests do not appear in libtest's report.",
		"The checkout is read-only: Cargo.lock must be committed and current (--locked),",
		"and the build goes to $TMPDIR. Crates from a registry cannot be fetched (no",
		"network): declare dependencies: cargo and prepare each commit's crates.io crates",
		"(docs/dependencies.md § Cargo), vendor them, or use an image.",
	}
	lock, err := read(fsys, "Cargo.lock")
	if err != nil {
		return err
	}
	ignored, err := read(fsys, ".gitignore")
	if err != nil {
		return err
	}
	switch {
	case lock == nil && ignoresCargoLock(ignored):
		c.Comment = append(c.Comment,
			"This crate's .gitignore ignores Cargo.lock, so the checkout has none and cargo (--locked,",
			"read-only checkout) fails with 'cannot create the lock file'. Remove Cargo.lock from",
			".gitignore, run `cargo generate-lockfile` and commit it (Cargo's guidance since 2023 is",
			"to commit it for libraries too).")
		p.Notes = append(p.Notes, ".gitignore ignores Cargo.lock: un-ignore it, run cargo generate-lockfile and commit it, or the cargo check fails ('cannot create the lock file', --locked, read-only checkout)")
	case lock == nil:
		p.Notes = append(p.Notes, "no Cargo.lock: commit one (cargo generate-lockfile) or the cargo check fails (--locked, read-only checkout)")
	case bytes.Contains(lock, []byte(`source = "registry+`)) || bytes.Contains(lock, []byte(`source = "git+`)):
		p.Notes = append(p.Notes, "Cargo.lock lists registry or git crates: the sandbox cannot fetch them; prepare crates.io crates with dependencies: cargo (docs/dependencies.md § Cargo), vendor them (cargo vendor), or use an image")
	}
	p.Checks = append(p.Checks, c)
	return nil
}
