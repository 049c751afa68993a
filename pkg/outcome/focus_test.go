package outcome_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/pkg/outcome"
)

func TestIsTestFile(t *testing.T) {
	type tc struct {
		path string
		want bool
	}
	run := func(t *testing.T, c tc) {
		if got := outcome.IsTestFile(c.path); got != c.want {
			t.Fatalf("IsTestFile(%q) = %v; want %v", c.path, got, c.want)
		}
	}
	for _, c := range []tc{
		{"src/foo.test.ts", true},
		{"src/foo.spec.js", true},
		{"src/foo.e2e.spec.tsx", true},
		{"src/foo.test.mjs", true},
		{"src/foo.test.cts", true},
		{"cypress/e2e/login.cy.js", true},
		{"lib/foo-test.js", true},
		{"lib/foo_test.mjs", true},
		{"lib/foo_spec.js", true},
		{"lib/fooSpec.js", true},
		{"lib/test-foo.cjs", true},
		{"lib/test_foo.js", true},
		{"test.js", true},
		{"spec.ts", true},
		{"src/__tests__/foo.jsx", true},
		{"test/helpers/setup.js", true},
		{"tests/unit/a.ts", true},
		{"spec/support/x.mjs", true},
		{"e2e/home.ts", true},
		{"./src/foo.test.js", true},

		{"src/cart.tests.js", true},
		{"src/cart.specs.ts", true},

		{"src/foo.ts", false},
		{"lib/describe-helpers.js", false},
		{"src/latest.js", false},
		{"src/inspect.js", false},
		{"src/contest.js", false},
		{"src/Spec.js", false},
		{"src/testing.js", false},
		{"src/foo.test.py", false},
		{"test/fixtures/data.json", false},
		{"src/foo.test.d.ts", false},
		{"test/vendor/chai.min.js", false},
		{"node_modules/x/test/a.js", false},
		{"packages/a/node_modules/b/foo.test.js", false},
		{"README.md", false},
	} {
		t.Run(c.path, func(t *testing.T) { run(t, c) })
	}
}

func TestScanFocus(t *testing.T) {
	type tc struct {
		name    string
		file    string // "x.test.js" when empty
		src     string
		focused []string // "line:col marker"
		ignored []string // "line:col marker in"
	}
	show := func(fs []outcome.Focus, withIn bool) []string {
		out := []string{}
		for _, f := range fs {
			s := fmt.Sprintf("%d:%d %s", f.Line, f.Column, f.Marker)
			if withIn {
				s += " " + f.In
			}
			out = append(out, s)
		}
		return out
	}
	run := func(t *testing.T, c tc) {
		if c.file == "" {
			c.file = "x.test.js"
		}
		rep, err := outcome.ScanFocus(strings.NewReader(c.src), c.file, outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.focused == nil {
			c.focused = []string{}
		}
		if c.ignored == nil {
			c.ignored = []string{}
		}
		if got := show(rep.Focused, false); !slices.Equal(got, c.focused) {
			t.Errorf("focused = %q; want %q", got, c.focused)
		}
		if got := show(rep.Ignored, true); !slices.Equal(got, c.ignored) {
			t.Errorf("ignored = %q; want %q", got, c.ignored)
		}
		for _, f := range slices.Concat(rep.Focused, rep.Ignored) {
			if f.File != c.file {
				t.Errorf("file = %q", f.File)
			}
			if f.In == "code" && !slices.Contains(rep.Focused, f) && f.Note == "" {
				t.Errorf("%+v: ignored in code without a note saying why", f)
			}
		}
	}
	for _, c := range []tc{
		{name: "it.only", src: "it.only('a', () => {});", focused: []string{"1:1 it.only"}},
		{name: "describe.only", src: "describe.only('a', () => {});", focused: []string{"1:1 describe.only"}},
		{name: "test.only", src: "  test.only('a', () => {});", focused: []string{"1:3 test.only"}},
		{name: "context.only and suite.only", src: "context.only('a');\nsuite.only('b');", focused: []string{"1:1 context.only", "2:1 suite.only"}},
		{name: "only.each", src: "it.only.each([1, 2])('x %d', () => {});", focused: []string{"1:1 it.only"}},
		{name: "nested receiver", src: "test.describe.only('a', () => {});", focused: []string{"1:6 describe.only"}},
		{name: "generic call", src: "test.only<Ctx>('a', () => {});", focused: []string{"1:1 test.only"}},
		{name: "optional chaining", src: "it?.only('a');", focused: []string{"1:1 it?.only"}},
		{name: "optional chaining after a receiver's call", src: "test.skipIf(ci)?.only('a');", focused: []string{"1:16 ?.only"}},
		{name: "chained over lines", src: "describe\n  .only('a', () => {});", focused: []string{"1:1 describe.only"}},
		{name: "comment between tokens", src: "it /* focus */ . only ('a');", focused: []string{"1:1 it.only"}},
		{name: "a receiver's call result", src: "test.skipIf(ci).only('a');\nit.each(rows).only('b');", focused: []string{"1:16 .only", "2:14 .only"}},
		{name: "fit", src: "fit('a', () => {});", focused: []string{"1:1 fit"}},
		{name: "fdescribe", src: "fdescribe('a', () => {});", focused: []string{"1:1 fdescribe"}},
		{name: "fit with space and each", src: "fit ('a');\nfit.each([1])('b', () => {});", focused: []string{"1:1 fit", "2:1 fit"}},
		{name: "node test option", src: "test('a', { only: true }, () => {});", focused: []string{"1:13 only: true"}},
		{name: "node test option compact", src: "test('a', {only:true}, () => {});", focused: []string{"1:12 only: true"}},
		{name: "node test option after others", src: "test('a', { skip: false,\n  only : true }, () => {});", focused: []string{"2:3 only: true"}},
		{name: "node test option quoted key", src: "test('a', { 'only': true }, fn);", focused: []string{"1:13 only: true"}},
		{name: "inside template substitution", src: "const s = `${fdescribe('x')}`;", focused: []string{"1:14 fdescribe"}},
		{name: "columns count characters", src: "// é\nconst ü = 1; it.only('a');", focused: []string{"2:14 it.only"}},
		{name: "hashbang", src: "#!/usr/bin/env node\nit.only('a');", focused: []string{"2:1 it.only"}},

		{name: "benefit is not fit", src: "benefit('a'); outfit(1); fitness();"},
		{name: "member fit is not focus", src: "model.fit(x); obj?.fit(y);"},
		{name: "declaration of fit", src: "function fit(a) { return a; }\nasync function fdescribe() {}"},
		{name: "fit as a value", src: "const fit = 1; let x = { fit: 2 };"},
		{name: "onlyOnce", src: "emitter.onlyOnce('x'); it.onlyIf(true)('a');"},
		{name: "spread only", src: "f(...only(x));"},
		// An alias of a focused test function is one: const o = it.only;
		// o('a', fn) focuses just as it.only('a', fn) does.
		{name: "only property read is an alias", src: "const o = it.only;", focused: []string{"1:11 it.only"}},
		{name: "only passed on", src: "wrap(describe.only)('a');", focused: []string{"1:6 describe.only"}},
		{name: "only at the end of the file", src: "export default test.only", focused: []string{"1:16 test.only"}},
		{name: "assigning only is no focus", src: "it.only = function (t, fn) {}; if (typeof test.only === 'function') {}"},
		{name: "only false", src: "test('a', { only: false }, fn); x = { only: trueish };"},

		// Index forms and other only values (issue #12).
		{name: "index single quote", src: "it['only']('a', fn);", focused: []string{"1:1 it['only']"}},
		{name: "index double quote", src: `it["only"]('a', fn);`, focused: []string{"1:1 it['only']"}},
		{name: "index template", src: "it[`only`]('a', fn);", focused: []string{"1:1 it['only']"}},
		{name: "index then each", src: "describe['only'].each([1])('a', fn);", focused: []string{"1:1 describe['only']"}},
		{name: "optional index", src: "it?.['only']('a');", focused: []string{"1:1 it?.['only']"}},
		{name: "index on a receiver's call result", src: "describe.runIf(x)['only']('a');", focused: []string{"1:18 ['only']"}},
		{name: "index over lines and comments", src: "describe\n  [ /* x */ 'only' ]\n  ('a', fn);", focused: []string{"1:1 describe['only']"}},
		{name: "array literal is no index", src: "const a = ['only']; f(['only']);"},
		{name: "other index", src: "it['skip']('a'); it[`only${x}`]('b'); it['onlyx']('c');"},
		{name: "only: 1", src: "test('a', {only: 1}, fn);", focused: []string{"1:12 only: 1"}},
		{name: "only: !0", src: "test('a', {only: !0}, fn);", focused: []string{"1:12 only: !0"}},
		{name: "only: string", src: `test('a', { only: "yes" }, fn);`, focused: []string{"1:13 only: 'yes'"}},
		{name: "only: object", src: "describe('a', { only: {} }, fn);", focused: []string{"1:17 only: {"}},
		{name: "only: name", src: "it('a', { timeout: 5, only: flag }, fn);", focused: []string{"1:23 only: flag"}},
		{name: "only: expression", src: "suite('a', { only: a && b }, fn);", focused: []string{"1:14 only: a && b"}},
		{name: "computed key", src: "test('a', { ['only']: 1 }, fn);", focused: []string{"1:13 only: 1"}},
		{name: "shorthand", src: "const only = 1; test('a', { only }, fn); test('b', { skip, only, x }, fn);",
			focused: []string{"1:29 { only }", "1:60 { only }"}},
		{name: "spread then only", src: "test('a', { ...base, only: true }, fn);", focused: []string{"1:22 only: true"}},
		{name: "subtest option", src: "test('a', async (t) => {\n  await t.test('b', { only: true }, fn);\n});", focused: []string{"2:23 only: true"}},
		{name: "Deno.test", src: "Deno.test({ name: 'a', only: true, fn() {} });", focused: []string{"1:24 only: true"}},
		{name: "options by name", src: "const opts = { only: true };\ntest('a', opts, fn);", focused: []string{"1:16 only: true"}},
		{name: "falsy only values", src: "test('a', { only: false }); test('b', { only: 0 }); test('c', { only: !1 });\n" +
			"test('d', { only: null }); test('e', { only: undefined }); test('f', { only: '' });\n" +
			"test('g', { only: void 0 }); test('h', { only: -0 }); test('i', { only: 0n }); test('j', { only: !true }, fn);\n" +
			"test('k', { only: NaN }); test('l', { only: 0x0 }); test('m', { only: `` }); const o = { only: 0.0 };"},
		{name: "only option of another call", src: "it('picks', () => {\n  expect(pick(obj, { only: true })).toEqual(x);\n});",
			ignored: []string{"2:22 only: true code"}},
		{name: "only key inside a nested option", src: "test('a', { meta: { only: true } }, fn);", focused: []string{"1:21 only: true"}},
		{name: "only key of a type", src: "type O = { only: boolean }; let u: { only?: true };"},
		{name: "fit without a name in a test file", src: "fit(cases[0], fn);", focused: []string{"1:1 fit"}},
		{name: "NUL byte in a comment", src: "// \x00 generated\nit.only('a', fn);\x00", focused: []string{"2:1 it.only"}},
		{name: "NUL bytes in code", src: "\x00\x00describe.only('a', fn);", focused: []string{"1:3 describe.only"}},
		{name: "ternary is not an option", src: "x = c ? only : true;"},

		// Only test-framework receivers (issue 24): a runner's documented
		// names, the names a file binds to one, a receiver's call result.
		{name: "modifiers of other runners", src: "test.describe.parallel.only('a', fn);\ntest.failing.only('b', t => {});\ndescribe.shuffle.only('c', fn);\ntap.only('d', fn);",
			focused: []string{"1:15 parallel.only", "2:6 failing.only", "3:10 shuffle.only", "4:1 tap.only"}},
		{name: "aliases", src: "const d = describe;\nd.only('a', fn);\nconst t = ci ? it : test;\nt.only('b', fn);\nconst myTest = test.extend({ page: 1 });\nmyTest.only('c', fn);\nconst s = suite('cart');\ns.only('d', fn);\nlet e; e = it;\ne.only('e');",
			focused: []string{"2:1 d.only", "4:1 t.only", "6:1 myTest.only", "8:1 s.only", "10:1 e.only"}},
		{name: "imports and requires of a test framework", src: "import ava from 'ava';\nava.only('a', t => {});\nimport { test as base, expect } from '@playwright/test';\nbase.only('b', fn);\n" +
			"import * as T from 'tap';\nT.only('c');\nconst tt = require('tap');\ntt.only('d');\nconst { test: check } = require('node:test');\ncheck.only('e', fn);\nimport spec, { it as i } from 'mocha';\nspec.only('f'); i.only('g');",
			focused: []string{"2:1 ava.only", "4:1 base.only", "6:1 T.only", "8:1 tt.only", "10:1 check.only", "12:1 spec.only", "12:17 i.only"}},
		{name: "the test context of a receiver's callback", src: "tap.test('a', t => {\n  t.only('b', fn);\n});\ntest('c', async (c) => { c.only('d'); });\ntest('e', function (x) { x.only('f'); });\nt.test('g', (y, done) => { y.only('h'); });",
			focused: []string{"2:3 t.only", "4:26 c.only", "5:26 x.only", "6:28 y.only"}},
		{name: "a query builder's only", src: "const q = db('users');\nit('finds', async () => {\n  await q.only('name');\n  query.only('id');\n});",
			ignored: []string{"3:9 q.only code", "4:3 query.only code"}},
		{name: "names that are not bound to a receiver", src: "const q = build({ test: true });\nq.only('a');\nconst r = make(test);\nr.only('b');\nimport k from 'knex';\nk.only('c');\nfoo('x', (t) => t.only('d'));\napp.get('/', function (req) { req.only('e'); });\nconst z = obj.describe;\nz.only('f');",
			ignored: []string{"2:1 q.only code", "4:1 r.only code", "6:1 k.only code", "7:17 t.only code", "8:31 req.only code", "10:1 z.only code"}},
		// only: in test data is no option (joi's describe() output).
		{name: "only: nested in an assertion's argument", src: "expect(schema.describe()).toEqual({ type: 'any', flags: { only: true } });\nassert.deepEqual(x, [{ y: [{ only: 1 }] }]);",
			ignored: []string{"1:59 only: true code", "2:30 only: 1 code"}},
		{name: "only: nested in a named literal", src: "const expected = { type: 'any', flags: { only: true } };",
			ignored: []string{"1:42 only: true code"}},
		{name: "a table of test options", src: "const cases = [{ name: 'a', only: true }];\nfor (const c of cases) test(c.name, c, fn);",
			focused: []string{"1:29 only: true"}},
		{name: "a call result that is not a receiver's", src: "f()?.only('a');\nfoo().only('b');\nf()['only']('c');",
			ignored: []string{"1:4 ?.only code", "2:6 .only code", "3:4 ['only'] code"}},

		{name: "line comment", src: "// don't use .only( here, nor fit( or { only: true }\nit('a');",
			ignored: []string{"1:14 .only comment", "1:31 fit comment", "1:41 only: true comment"}},
		{name: "block comment", src: "/* it.only(\n fdescribe( */ it('a');",
			ignored: []string{"1:6 .only comment", "2:2 fdescribe comment"}},
		{name: "strings", src: "const rule = ['it.only()', \"fit('a')\"];",
			ignored: []string{"1:18 .only string", "1:29 fit string"}},
		{name: "template text", src: "const s = `\n  it.only('a')\n`;",
			ignored: []string{"2:5 .only template"}},
		{name: "regexp", src: "const re = /it\\.only\\(|.only(/;",
			ignored: []string{"1:24 .only regexp"}},
		{name: "division is not a regexp", src: "x = a / b; it.only('c'); y = d / e;", focused: []string{"1:12 it.only"}},
		{name: "only with optional call", src: "it.only?.('a');", focused: []string{"1:1 it.only"}},
		{name: "CRLF line continuation in a string", src: "const s = 'a\\\r\n fit(';\r\nit('b');",
			ignored: []string{"2:2 fit string"}},
		{name: "escaped quote", src: "const s = 'it\\'s'; it.only('a');", focused: []string{"1:20 it.only"}},

		// Fail toward the alarm where the lexer cannot have read valid
		// JavaScript.
		{name: "string not closed on its line", src: "const s = 'it.only(\nx';",
			focused: []string{"1:14 .only"}},
		{name: "block comment never closed", src: "/* fit('a')\n it('b');",
			focused: []string{"1:4 fit"}},
		{name: "template never closed", src: "const s = `x\n${a}\n it.only('b');\n",
			focused: []string{"3:4 .only"}},
		{name: "regexp not closed on its line", src: "x = (/ it.only('a')\n);",
			focused: []string{"1:10 .only"}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestScanFocusAnyFile: every JavaScript/TypeScript source is scanned, and
// the file decides which rules hold (see the package comment). Both ways:
// the evasions of issue #12 in files not named like tests are caught, and
// ordinary library code using an only method or option is not refused.
func TestScanFocusAnyFile(t *testing.T) {
	type tc struct {
		name    string
		file    string
		src     string
		focused []string // "line:col marker"
		ignored []string // "line:col marker" of occurrences in code, listed with a note
	}
	run := func(t *testing.T, c tc) {
		rep, err := outcome.ScanFocus(strings.NewReader(c.src), c.file, outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var focused, ignored []string
		for _, f := range rep.Focused {
			focused = append(focused, fmt.Sprintf("%d:%d %s", f.Line, f.Column, f.Marker))
		}
		for _, f := range rep.Ignored {
			if f.In != "code" {
				continue
			}
			if f.Note == "" {
				t.Errorf("%+v ignored without a note", f)
			}
			ignored = append(ignored, fmt.Sprintf("%d:%d %s", f.Line, f.Column, f.Marker))
		}
		if !slices.Equal(focused, c.focused) {
			t.Errorf("focused = %q; want %q", focused, c.focused)
		}
		if !slices.Equal(ignored, c.ignored) {
			t.Errorf("ignored = %q; want %q", ignored, c.ignored)
		}
	}
	for _, c := range []tc{
		// False greens of issue #12: focus in files not named like tests.
		{name: "helper file describe.only", file: "lib/describe-helpers.js",
			src: "export function focusAll(name, fn) {\n  return describe.only(name, fn);\n}", focused: []string{"2:10 describe.only"}},
		{name: "tests part in the name", file: "src/cart.tests.js", src: "test.failing.only('a', fn);", focused: []string{"1:6 failing.only"}},
		{name: "a modifier in a plain source", file: "src/cart.js", src: "test.failing.only('a', fn);", ignored: []string{"1:6 failing.only"}},
		{name: "a query builder in a test file", file: "test/users.test.js", src: "const q = db('users');\nit('finds', () => q.only('name'));", ignored: []string{"2:19 q.only"}},
		{name: "index form in a plain source", file: "src/cart.js", src: "it['only']('adds', fn);", focused: []string{"1:1 it['only']"}},
		{name: "option in a plain source", file: "src/run.mjs", src: "test('a', {only: 1}, fn);\ntest('b', {only: !0}, fn);",
			focused: []string{"1:12 only: 1", "2:12 only: !0"}},
		{name: "fit with a name in a plain source", file: "src/helpers.ts", src: "export const f = () => fit('does x', fn);", focused: []string{"1:24 fit"}},
		{name: "fdescribe in a plain source", file: "src/helpers.ts", src: "fdescribe('x', fn);", focused: []string{"1:1 fdescribe"}},
		{name: "alias in a file with test context", file: "lib/helpers.js", src: "const d = describe;\nd.only('x', fn);", focused: []string{"2:1 d.only"}},
		{name: "options object with test context", file: "lib/opts.js",
			src: "import { test } from 'node:test';\nconst opts = { only: true };\ntest('a', opts, fn);", focused: []string{"2:16 only: true"}},
		{name: "fit without a name after a test call", file: "lib/x.js", src: "it('a', fn);\nfit(cases[0], fn);", focused: []string{"2:1 fit"}},
		{name: "NUL byte in a comment of a plain source", file: "src/gen.js", src: "/* \x00 */ it.only('a', fn);", focused: []string{"1:9 it.only"}},
		{name: "minified file", file: "__tests__/app.min.js", src: "describe(\"a\",()=>{it.only(\"b\",()=>{})});", focused: []string{"1:19 it.only"}},
		{name: "declaration file", file: "types/x.d.ts", src: "declare function fit(name: string): void;\ndeclare const it: { only(n: string): void };"},

		// False alarms avoided: ordinary library code.
		{name: "Joi only", file: "src/schema.js", src: "const s = Joi.string().valid('a').only();", ignored: []string{"1:34 .only"}},
		{name: "collect.js only", file: "src/user.ts", src: "return collect(user).only('name', 'email');", ignored: []string{"1:21 .only"}},
		{name: "canvas-fit", file: "src/view.js", src: "import fit from 'canvas-fit';\nwindow.addEventListener('resize', fit(canvas), false);", ignored: []string{"2:35 fit"}},
		{name: "ML fit", file: "src/model.ts", src: "const m = fit(xs, ys);", ignored: []string{"1:11 fit"}},
		{name: "only option of a library call", file: "src/pick.js", src: "const r = pick(obj, { only: true });", ignored: []string{"1:23 only: true"}},
		{name: "only option of a library call in a test", file: "src/pick.test.js", src: "expect(pick(obj, {only: true})).toEqual({});", ignored: []string{"1:19 only: true"}},
		{name: "options object without test context", file: "src/config.js", src: "export const defaults = { only: true, depth: 2 };", ignored: []string{"1:27 only: true"}},
		{name: "only: name outside a test call", file: "src/config.js", src: "const o = { only: flags.only }; build(o);"},
		{name: "runner implementation", file: "vendor/mocha.js",
			src:     "context.describe.only = function (title, fn) {\n  return common.suite.only({ title, fn });\n};\ncontext.it.only = function (t, fn) { return common.test.only(mocha, context.it(t, fn)); };",
			ignored: []string{"2:17 suite.only", "4:52 test.only"}},
		{name: "runner implementation object", file: "node_modules/qunit/qunit.js",
			src: "const QUnit = { only: function only(name, cb) { test.only(name, cb); } };", ignored: []string{"1:49 test.only"}},
		{name: "runner adapter defining fdescribe", file: "vendor/jest-circus/build/jestAdapterInit.js",
			src: "const g = {\n  fdescribe: _.default.describe.only,\n  fit: _.default.it.only,\n};", ignored: []string{"2:24 describe.only", "3:18 it.only"}},
		{name: "Jasmine defining fit", file: "lib/jasmine.js", src: "this.fit = function (d, fn) { return env.it.only(d, fn); };", ignored: []string{"1:42 it.only"}},
		{name: "vendored dependency", file: "node_modules/@bcoe/v8-coverage/src/test/merge.spec.ts",
			src: "case 'only': it.only(item.name, test); break;", ignored: []string{"1:14 it.only"}},
		// Named like a test, the same text is refused: the exemption is for
		// bundles, never for test files.
		{name: "runner implementation in a test file", file: "test/vendor/mocha.js",
			src:     "context.describe.only = function (title, fn) {\n  return common.suite.only({ title, fn });\n};",
			focused: []string{"2:17 suite.only"}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

func TestScanFocusLimits(t *testing.T) {
	t.Run("a NUL byte makes no file unscanned", func(t *testing.T) {
		rep, err := outcome.ScanFocus(strings.NewReader("\x00\x01it.only('a');\x00\x01"), "b.test.js", outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files != 1 || len(rep.Focused) != 1 || len(rep.Skipped)+len(rep.Unscanned) != 0 {
			t.Fatalf("got %+v; want the file scanned and its focus found", rep)
		}
	})
	// Longer than the cap: the prefix is scanned either way; a test file
	// fails closed (padding must not hide a focus), any other file — a
	// bundle, a fixture — is noted.
	type capCase struct {
		file      string
		unscanned bool
	}
	for _, c := range []capCase{
		{"big.test.js", true},
		{"test/unit/big.js", true},
		{"test/fixtures/big.js", false},
		{"__tests__/__fixtures__/big.js", false},
		{"dist/bundle.min.js", false},
		{"src/generated.js", false},
	} {
		t.Run("longer than the cap/"+c.file, func(t *testing.T) {
			src := "it.only('a');\n" + strings.Repeat("x", 100) + "\nfit('b');"
			rep, err := outcome.ScanFocus(strings.NewReader(src), c.file, outcome.FocusOptions{MaxFileBytes: 50})
			if err != nil {
				t.Fatal(err)
			}
			list, other := rep.Skipped, rep.Unscanned
			if c.unscanned {
				list, other = other, list
			}
			if len(rep.Focused) != 1 || rep.Focused[0].Marker != "it.only" || len(list) != 1 || len(other) != 0 ||
				!strings.Contains(list[0].Reason, "only the first 50 bytes") {
				t.Fatalf("got %+v; want the prefix scanned and the file listed as unscanned=%v", rep, c.unscanned)
			}
			if got := len(rep.Findings()); got != 1+len(rep.Unscanned) {
				t.Fatalf("%d findings; want one per focus and per unscanned test file", got)
			}
		})
	}
	t.Run("occurrence cap", func(t *testing.T) {
		src := strings.Repeat("it.only('a');\n", 1500)
		rep, err := outcome.ScanFocus(strings.NewReader(src), "many.test.js", outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Focused) != 1000 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "500 further") {
			t.Fatalf("got %d focused, skipped %+v", len(rep.Focused), rep.Skipped)
		}
	})
}

// TestFindFocus scans a small checkout: every tracked JavaScript/TypeScript
// source is read whatever its name or bytes, untracked files and other
// extensions are not, symbolic links are never followed out of the
// checkout, and files over the cap fail closed when they are tests.
func TestFindFocus(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "checkout")
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	write("src/app.js", "it.only('in a file not named like a test');\n")
	write("src/schema.js", "export const s = Joi.any().only();\n")
	write("src/app.test.js", "describe('app', () => {\n  it.only('focused', () => {});\n  // it.only( in a comment\n});\n")
	write("test/helpers.js", "export const focus = () => fdescribe('x', () => {});\n")
	write("test/clean.spec.ts", "test('a', () => {});\n")
	write("test/untracked.test.js", "fit('not tracked');\n")
	write("test/big.test.js", strings.Repeat("// filler\n", 200)+"it.only('beyond the cap');\n")
	write("dist/bundle.js", strings.Repeat("var a = 1;\n", 200)+"it.only('beyond the cap of a bundle');\n")
	write("test/bin.test.js", "// \x00\x01\x02\nit.only('x')\x00")
	write("node_modules/lib/index.js", "module.exports = () => describe.only('vendored', () => {});\n")
	write("README.md", "it.only('prose')\n")
	write("test/real.txt", "it.only('behind a link');\n")
	outside := filepath.Join(parent, "secret.test.js")
	if err := os.WriteFile(outside, []byte("it.only('outside');"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("../../secret.test.js", "test/link.test.js")
	link("../../secret.test.js", "src/link.js")
	link("clean.spec.ts", "test/alias.spec.ts")
	link("real.txt", "test/txt.test.js")
	tracked := []string{"src/app.js", "src/schema.js", "src/app.test.js", "test/helpers.js", "test/clean.spec.ts",
		"test/big.test.js", "dist/bundle.js", "test/bin.test.js", "node_modules/lib/index.js", "README.md", "test/real.txt",
		"test/link.test.js", "src/link.js", "test/alias.spec.ts", "test/txt.test.js", "./src/app.test.js"}
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(filepath.Join(root, "test", "fifo.test.js"), 0o644); err != nil {
			t.Fatal(err)
		}
		tracked = append(tracked, "test/fifo.test.js")
	}

	rep, err := outcome.FindFocus(root, tracked, outcome.FocusOptions{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	goldenJSON(t, struct {
		Report   *outcome.FocusReport `json:"report"`
		Findings any                  `json:"findings"`
	}{rep, rep.Findings()})

	t.Run("a tracked file that cannot be read is an error", func(t *testing.T) {
		_, err := outcome.FindFocus(root, []string{"test/missing.test.js"}, outcome.FocusOptions{})
		if err == nil || !strings.Contains(err.Error(), "test/missing.test.js") {
			t.Fatalf("err = %v; want one naming the file", err)
		}
	})
	t.Run("a path escaping the root is not read", func(t *testing.T) {
		rel, _ := filepath.Rel(root, outside)
		rep, err := outcome.FindFocus(root, []string{filepath.ToSlash(filepath.Join("test", rel))}, outcome.FocusOptions{})
		if err == nil || len(rep.Focused) != 0 {
			t.Fatalf("rep %+v err %v; want an error and no occurrence", rep, err)
		}
	})
}

func BenchmarkScanFocus(b *testing.B) {
	var src bytes.Buffer
	for src.Len() < 4<<20 {
		src.WriteString("describe('x', () => {\n  it('does a thing', async () => {\n    const re = /a\\/b/g; // note: .only(\n    expect(`v ${x}`).toBe('it.only(');\n  });\n});\n")
	}
	b.SetBytes(int64(src.Len()))
	for b.Loop() {
		if _, err := outcome.ScanFocus(bytes.NewReader(src.Bytes()), "x.test.js", outcome.FocusOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
