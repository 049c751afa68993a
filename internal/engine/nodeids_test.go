package engine_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 24, node:test ids: the same name in two files is two tests, a
// helper node loads is a file, a TODO is skipped, and an object's own only
// method is no focus. Each case through Verify against the real containerd
// with Node 20 (the host's), and its signed bundle through evidence verify
// against evidence expect. docs/outcome.md lists the rules with these tests.
//
// Node 20 writes no file in its reports, so the file-qualified cases run
// the reporter docs/reports.md gives for Node before 24.11; Node 24.11's
// own file= reads to the same ids (pkg/report TestNodeTestRecorded, on real
// 24.11 output). The helper, TODO and focus cases run node's built-in
// reporters, and fail on main.

// nodeFileReporter is docs/reports.md's reporter for Node before 24.11: the
// built-in JUnit reporter with each test's file, relative to the working
// directory, as its classname — the ids Node 24.11's own file= gives.
const nodeFileReporter = `data:text/javascript,import{junit}from"node:test/reporters";import{relative}from"node:path";` +
	`export default async function*(s){yield*junit((async function*(){for await(const e of s){if(e.data&&e.data.file)e.data.classname=relative(process.cwd(),e.data.file);yield e}})())}`

// nodeFilePolicy runs node --test with that reporter, identity as given.
func nodeFilePolicy(identity string) string {
	p := "checks:\n  - id: unit\n    run: >-\n      node --test --test-reporter='" + nodeFileReporter + "'\n" +
		"      --test-reporter-destination=reports/unit.xml\n    report: {path: reports/unit.xml, format: junit"
	if identity != "" {
		p += ", identity: " + identity
	}
	return p + "}\n    timeout: 60s\n"
}

// nodeBuiltinPolicy runs node's own JUnit or TAP reporter (what runmill init
// writes, and the TAP form of docs/reports.md).
func nodeBuiltinPolicy(format string) string {
	ext, identity := "xml", ""
	if format == "tap" {
		ext, identity = "tap", ", identity: suite-path"
	}
	return "checks:\n  - id: unit\n    run: node --test --test-reporter=" + format + " --test-reporter-destination=reports/unit." + ext +
		"\n    report: {path: reports/unit." + ext + ", format: " + format + identity + "}\n    timeout: 60s\n"
}

const (
	roundsA = "const test = require('node:test');\nconst assert = require('node:assert');\ntest('rounds', () => assert.strictEqual(Math.round(2.5), 3));\n"
	roundsB = "const test = require('node:test');\nconst assert = require('node:assert');\ntest('rounds', () => assert.strictEqual(Math.round(-2.5), -2));\n"
	// usesHelper needs ./helpers.js (or what its require names).
	usesHelper = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { cents } = require('./helpers.js');\n" +
		"test('cents', () => assert.strictEqual(cents(1.5), 150));\ntest('zero', () => assert.strictEqual(cents(0), 0));\n"
	helper = "module.exports = { cents: (n) => Math.round(n * 100) };\n"
)

func TestNodeTestIDs(t *testing.T) {
	_, key, trust := newTestKey(t)
	for _, c := range []outcomeCase{
		// Why (c): with file-qualified ids there is no repeat, so the
		// deleted file's test keeps its authority.
		{name: "deleting one of two tests named rounds", base: files{".runmill/checks.yaml": nodeFilePolicy("suite-path"), "test/a.test.js": roundsA, "test/b.test.js": roundsB},
			cand: files{"test/b.test.js": ""}, ready: false, want: []string{"RM-VERIFY-003", "test/b.test.js::rounds"}},
		// False alarms of issue 24.
		{name: "a second file with the same test name", base: files{".runmill/checks.yaml": nodeFilePolicy("suite-path"), "test/a.test.js": roundsA},
			cand: files{"test/b.test.js": roundsB}, ready: true},
		{name: "a second file with the same test name, default identity", base: files{".runmill/checks.yaml": nodeFilePolicy(""), "test/a.test.js": roundsA},
			cand: files{"test/b.test.js": roundsB}, ready: true},
		{name: "renaming a helper under test/ (junit)", base: files{".runmill/checks.yaml": nodeBuiltinPolicy("junit"), "test/a.test.js": usesHelper, "test/helpers.js": helper},
			cand: files{"test/helpers.js": "", "test/support.js": helper, "test/a.test.js": strings.Replace(usesHelper, "./helpers.js", "./support.js", 1)}, ready: true},
		// Node 20's TAP numbers the helper by its place among the files,
		// which repeats a test's number: no longer a malformed report.
		{name: "renaming a helper under test/ (tap)", base: files{".runmill/checks.yaml": nodeBuiltinPolicy("tap"), "test/a.test.js": usesHelper, "test/helpers.js": helper},
			cand: files{"test/helpers.js": "", "test/support.js": helper, "test/a.test.js": strings.Replace(usesHelper, "./helpers.js", "./support.js", 1)}, ready: true},
		{name: "a todo test that throws", base: files{".runmill/checks.yaml": nodeBuiltinPolicy("junit"), "test/a.test.js": roundsA},
			cand:  files{"test/a.test.js": roundsA + "test('refunds', { todo: 'not built yet' }, () => { throw new Error('refunds are not implemented'); });\n"},
			ready: true, notWant: []string{verdict.RuleTestsFailed}},
		{name: "a query builder's only in a test file", base: files{".runmill/checks.yaml": nodeBuiltinPolicy("junit"), "test/a.test.js": roundsA},
			cand: files{"lib/query.js": "module.exports = (table) => ({ cols: [], only(...c) { this.cols = c; return this; } });\n",
				"test/query.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst query = require('../lib/query.js');\n" +
					"test('selects columns', () => {\n  const q = query('users');\n  assert.deepStrictEqual(q.only('name').cols, ['name']);\n});\n"},
			ready: true, notWant: []string{"outcome.focused"}},
	} {
		t.Run(c.name, func(t *testing.T) { runSigned(t, c, key, trust) })
	}
}

// runSigned is runOutcome with a signing key, then `evidence verify` of the
// bundle against `evidence expect`: a merge-ready bundle is valid, a
// not-merge-ready one is refused only for what it says.
func runSigned(t *testing.T, c outcomeCase, key *evidence.SigningKey, trust []byte) *engine.Run {
	t.Helper()
	r, base, cand := caseCommits(t, c)
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
	wantReasons(t, run, c.ready, c.want, c.notWant)
	rejudge(t, run)
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	res := evidence.Verify(bundle, trust, expectations(t, r, base, cand), evidence.VerifyOptions{Now: time.Now()})
	switch {
	case c.ready && !res.Valid:
		t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
	case !c.ready && (res.Valid || res.Reason != evidence.ReasonRequiredEvidence && res.Reason != evidence.ReasonNotMergeReady):
		t.Fatalf("a not-merge-ready bundle: %s %s, want %s or %s", res.Reason, res.Message, evidence.ReasonRequiredEvidence, evidence.ReasonNotMergeReady)
	}
	return run
}
