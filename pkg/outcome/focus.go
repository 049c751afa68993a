package outcome

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/outcome/internal/jslex"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Focus detection (spec § 4 "Focused execution"): a .only left in a test
// file silently reduces the suite to one case and still exits 0.
//
// Which files: every tracked file whose extension is a JavaScript or
// TypeScript source (IsSourceFile: .js .jsx .mjs .cjs .ts .tsx .mts .cts,
// declaration files and minified bundles included), whatever its name and
// whatever bytes it holds. A runner runs what its configuration says, not
// what our name patterns guess (Mocha runs test/*.js, a helper file's
// describe.only focuses every suite that imports it), and a NUL byte is no
// reason not to read a file that node would run. Vue and Svelte components
// are not scanned: runners do not collect tests from them. Tracked bundles
// and vendored copies (vendor/, dist/*.min.js) are scanned like any other
// file not named like a test, under the rules below that keep a bundle's
// ordinary code from raising the alarm. Files under a node_modules/
// directory are scanned and their occurrences listed, never focus: Jest,
// Vitest and Mocha do not collect tests there by default, and a repository
// that commits its node_modules (common for JavaScript GitHub Actions)
// holds its runners' sources and its dependencies' own tests — measured on
// a real tree of 218 packages (jest, mocha, babel): three such occurrences,
// each a refusal of every honest change without this rule. The receiver
// rule below was measured on real test trees and on focus that real
// repositories committed (docs/outcome.md § Focus, measured).
//
// What counts, in code only. Three strengths, because an .only( in a test
// file and one in Joi's schema code do not mean the same thing:
//
//   - Focus in any file: R.only and R['only'] (any quote, ?. too) read,
//     called or passed on, where R is a runner's test function — it, test,
//     describe, context, specify, suite, bench, concurrent, serial,
//     sequential, fixture, QUnit, module (it.only(, test.concurrent.only(,
//     describe['only'](, const f = it.only); fdescribe( and fdescribe.;
//     fit('name' … and fit.each (fit with a name first is Jasmine's and
//     Jest's focused test); and only: with any value but a falsy literal in
//     an options object passed directly to test, it, describe or suite
//     (node:test, t.test subtests, Deno.test): { only: true }, { only: 1 },
//     { only: !0 }, { only: "yes" }, { 'only': true }, { ['only']: 1 },
//     { only } and { only: flag } (fails toward the alarm: a test call's
//     only option that is not literally false is there to focus).
//   - Focus in a test file (IsTestFile) or in any file with test context —
//     one that calls it(, test(, suite(, context(, specify( or xit(, names
//     describe, fdescribe, xdescribe, beforeEach, afterEach, beforeAll,
//     afterAll or QUnit (const d = describe counts), or imports a test framework (vitest,
//     node:test, @jest/globals, mocha, @playwright/test, ava, tap, bun:test
//     …): X.only( / X.only. / X.only< where X is a test-framework
//     receiver other than the names above — a modifier that is a common
//     word elsewhere (Playwright's test.describe.parallel.only, Vitest's
//     describe.shuffle.only, AVA's test.failing.only, node-tap's
//     tap.only), a name the file binds to a receiver (an alias: const d =
//     describe, const myTest = test.extend({…}), uvu's const s =
//     suite('x'); an import or require of a test framework: import ava
//     from 'ava', import { test as base } from '@playwright/test', const
//     tt = require('tap'); the test context, a callback's first parameter
//     in a receiver's call: tap.test('x', t => t.only(…))), or the result
//     of a receiver's call (test.skipIf(ci).only(…)); fit( with any first
//     argument; and only: with a truthy literal at the top level of an
//     object literal that is not a call's argument (const opts = { only:
//     true } is passed on by name), or nested in the options of a test
//     call. Elsewhere these are listed as Ignored with a note: a bundle is
//     no test, and canvas-fit's fit(canvas) is an ordinary call.
//   - Never focus, listed as Ignored with a note, in every file, tests
//     included: X.only( on any other receiver — q.only('name') on a
//     project's query builder, Joi's any().only(), collect.js's
//     collect(user).only('a'), fluent-json-schema's S.object().only() — an
//     object's own only method; only: with a truthy literal in an object
//     passed directly to a call of anything but a test function —
//     pick(obj, { only: true }), knex's from('users', { only: true }) —
//     that function's option; and only: in test data, nested through
//     property values and array elements in such a call's argument
//     (expect(schema.describe()).toEqual({ flags: { only: true } })) or
//     as a property value of a named literal (const expected = { flags: {
//     only: true } }).
//
// Not focus: only: false, 0, -0, 0n, "", null, undefined, NaN, void 0, !1,
// !true; it.only = …, it.only === …, only: function, fdescribe: … and
// this.fit = … (the runner's own implementation: in a file that is not
// named like a test and defines focus this way — a runner or its bundle —
// every occurrence is listed as Ignored; in a test file nothing is exempt);
// onlyOnce(, ...only(, x.fit(, function fit(, benefit(.
//
// Size: a file is read up to the cap (FocusOptions.MaxFileBytes, 8 MiB by
// default; the scanner ran at 35 MB/s on a loaded 2-core runner) and what was read is scanned.
// A test file (by IsTestFile, outside fixture directories) longer than the
// cap fails closed (FocusReport.Unscanned, a finding): padding a test file
// must not hide a focus past the cap. Any other file longer than the cap is
// noted (Skipped): a large generated bundle or fixture holds no test of the
// change's own and must not block an honest change.
//
// Comments and strings: the scanner lexes JavaScript/TypeScript (comments,
// '…' and "…" strings, `…${…}…` templates with nesting, regular-expression
// literals by the usual previous-token rule) and reports markers inside
// comments, strings, templates and regular expressions as Ignored — visible,
// with file:line, but not failing the build: "// don't use .only(" and a lint
// rule's test table are not focused runs. Where the lexer may have been
// wrong, it fails toward the alarm: an occurrence inside a string or regular
// expression that does not close on its line, or a comment or template that
// does not close before the end of the file, counts as code of the second
// strength (focus in a test file or a file with test context). There is
// deliberately no inline suppression: an agent could use it to hide a focus.
//
// Known limits (a static scan of a dynamic language): a computed name
// (it['on' + 'ly'], const k = 'only'; it[k]), an alias the scan cannot
// follow (const [d] = [describe]; d.only(…); a receiver returned by a
// function of another file, tape's createHarness().only), an options
// object built elsewhere and passed to a call in a file with no test
// context, and an only option nested in a named literal passed on by a
// property (const o = { x: { only: true } }; test('a', o.x)) are not
// seen; a test framework's own repository, whose test files exercise
// .only on purpose in its own fixtures, is refused.

// DefaultMaxFileBytes bounds one file's read.
const DefaultMaxFileBytes = 8 << 20

// maxHits bounds the occurrences kept per file and list.
const maxHits = jslex.MaxHits

// FocusOptions configure focus detection; the zero value is the default.
type FocusOptions struct {
	// MaxFileBytes: the bytes read of one file (0 means
	// DefaultMaxFileBytes). A longer test file fails closed; any other
	// longer file is noted.
	MaxFileBytes int64
}

// Focus is one focus marker occurrence.
type Focus struct {
	File   string `json:"file"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in characters (bytes that start a UTF-8 sequence)
	// Marker as the source spells it: "it.only", ".only", "it['only']",
	// "fit", "fdescribe", "only: true", "only: !0", "{ only }".
	Marker string `json:"marker"`
	// In is where the lexer found it: code, comment, string, template or
	// regexp.
	In string `json:"in"`
	// Note says why an occurrence counts although it is not in code, or
	// why one in code does not.
	Note string `json:"note,omitempty"`
}

// SkippedFile is a file that was not (fully) scanned, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// FocusReport is the result of focus detection.
type FocusReport struct {
	Files   int     `json:"files"`   // files scanned (in full or up to the cap)
	Focused []Focus `json:"focused"` // each one fails the check
	// Ignored: in comments, strings, templates or regular expressions, or
	// in code that is not focus (Note says why); not failing.
	Ignored []Focus `json:"ignored"`
	// Unscanned: test files that could not be scanned in full; each one
	// fails the check (fail closed).
	Unscanned []SkippedFile `json:"unscanned"`
	Skipped   []SkippedFile `json:"skipped"` // noted, not failing
}

// Findings returns one finding per focused occurrence and per unscanned
// test file, all under RuleFocused: either way the run is not proven to
// have run the whole suite. The specification gives focus no RM code.
func (r *FocusReport) Findings() []record.Finding {
	out := make([]record.Finding, 0, len(r.Focused)+len(r.Unscanned))
	for _, f := range r.Focused {
		// The scan reads the code, not the run: a runner that honours the
		// marker (mocha, jest, vitest; node:test with --test-only) runs
		// only the focused tests, one that does not runs them all, and
		// either way the tests the run reported passing prove nothing of
		// the rest. Saying "the whole suite did not run" was false for
		// the latter (issue 27).
		msg := fmt.Sprintf("focus marker %s found at %s:%d:%d: a runner that honours it runs only the focused tests, so this run does not prove the whole suite passes", f.Marker, f.File, f.Line, f.Column)
		if f.Note != "" {
			msg += " (" + f.Note + ")"
		}
		out = append(out, record.Finding{Rule: RuleFocused, Message: msg, File: f.File, Line: f.Line,
			Hint: "remove .only / ['only'] / fit / fdescribe / the only option from the test code"})
	}
	for _, u := range r.Unscanned {
		out = append(out, record.Finding{Rule: RuleFocused, File: u.File,
			Message: fmt.Sprintf("test file %s was not scanned in full for focus markers (%s): a focus in the rest would go unseen, so the run is not proven unfocused", u.File, u.Reason),
			Hint:    "keep test files regular files inside the checkout and below the focus-scan cap (split a long one; generated data belongs in a fixtures/ directory)"})
	}
	return out
}

var jsExtensions = []string{".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"}

var testDirs = set("__tests__", "__test__", "test", "tests", "spec", "specs", "e2e", "cypress")

// fixtureDirs hold test data rather than tests: a long file there is noted,
// not refused.
var fixtureDirs = set("fixtures", "fixture", "__fixtures__", "testdata", "__snapshots__")

// IsSourceFile reports whether a repository path (slash-separated) has a
// JavaScript/TypeScript source extension: .js .jsx .ts .tsx .mjs .cjs .mts
// .cts. FindFocus scans every such file.
func IsSourceFile(p string) bool {
	return slices.Contains(jsExtensions, path.Ext(p))
}

// IsTestFile reports whether a repository path (slash-separated) is named
// like a JavaScript/TypeScript test file: one of the extensions .js .jsx .ts
// .tsx .mjs .cjs .mts .cts, and either
//
//   - a name with a test/spec part: foo.test.ts, foo.spec.js, foo.e2e.spec.tsx,
//     foo.tests.js, foo.specs.js, foo.cy.js (Cypress), foo-test.js,
//     foo_test.mjs, foo-spec.js, foo_spec.js, fooSpec.js (Jasmine),
//     test-foo.js, test_foo.js, test.js, spec.js; or
//   - any file under a directory named __tests__, __test__, test, tests,
//     spec, specs, e2e or cypress.
//
// The set is the union of the default patterns of Jest, Vitest, Mocha,
// Jasmine, node:test, Playwright and Cypress, so that a repository relying on
// any runner's defaults is covered. Declaration files (.d.ts …), minified
// bundles (.min.js) and anything under node_modules/ are not test files: they
// hold no test code of the candidate's own. In a test file every focus rule
// applies (see the package comment); FindFocus scans the other source files
// too, under the rules that hold in any file.
func IsTestFile(p string) bool {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	base := path.Base(p)
	ext := path.Ext(base)
	if !slices.Contains(jsExtensions, ext) {
		return false
	}
	stem := strings.TrimSuffix(base, ext)
	if strings.HasSuffix(stem, ".d") || strings.Contains(base, ".min.") {
		return false
	}
	dirs := strings.Split(path.Dir(p), "/")
	if slices.Contains(dirs, "node_modules") {
		return false
	}
	for _, d := range dirs {
		if testDirs[d] {
			return true
		}
	}
	parts := strings.Split(stem, ".")
	for _, part := range parts[1:] {
		switch part {
		case "test", "spec", "tests", "specs", "cy":
			return true
		}
	}
	switch {
	case stem == "test" || stem == "spec":
		return true
	case strings.HasSuffix(stem, "-test"), strings.HasSuffix(stem, "_test"),
		strings.HasSuffix(stem, "-spec"), strings.HasSuffix(stem, "_spec"),
		strings.HasSuffix(stem, "Spec") && len(stem) > 4,
		strings.HasPrefix(stem, "test-"), strings.HasPrefix(stem, "test_"):
		return true
	}
	return false
}

// failsClosed: a test file outside fixture directories, whose unscanned
// rest could hide a focus.
func failsClosed(p string) bool {
	if !IsTestFile(p) {
		return false
	}
	return !slices.ContainsFunc(strings.Split(path.Dir(path.Clean("/"+p)), "/"), func(d string) bool { return fixtureDirs[d] })
}

// repoPaths is files cleaned to repository paths, sorted, without repeats:
// what the focus and tamper scans walk.
func repoPaths(files []string) []string {
	out := slices.Clone(files)
	for i, f := range out {
		out[i] = strings.TrimPrefix(path.Clean("/"+f), "/")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FindFocus scans every tracked JavaScript/TypeScript source under root
// (IsSourceFile). tracked are repository paths as `git ls-files` prints
// them; files are opened through an os.Root so nothing outside root is
// read. A tracked symbolic link is never followed out of root: one to a
// tracked source is scanned under its target's name; one to another file
// inside root is scanned under its own name (a runner would run what it
// points to); one whose target cannot be read inside root is, for a test
// file, unscanned (fails closed) and otherwise noted. A file that cannot be
// read is an error: the caller cannot claim the candidate has no focus.
func FindFocus(root string, tracked []string, opts FocusOptions) (*FocusReport, error) {
	opts = opts.withDefaults()
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.TreeUnreadable, err, "opening checkout %s for focus detection", root).
			WithHint("the checkout must exist and be readable by runmill")
	}
	defer dir.Close()

	files := repoPaths(tracked)
	rep := newFocusReport()
	var errs []error
	for _, name := range files {
		if !IsSourceFile(name) {
			continue
		}
		if err := scanTracked(dir, name, files, opts, rep); err != nil {
			errs = append(errs, rmerr.Wrap(rmerr.TreeUnreadable, err, "scanning %s for focus markers", name).
				WithHint("a tracked file must be readable in the checkout; a focus scan that did not read it proves nothing"))
		}
	}
	rep.sort()
	return rep, errors.Join(errs...)
}

func scanTracked(dir *os.Root, name string, tracked []string, opts FocusOptions, rep *FocusReport) error {
	fi, err := dir.Lstat(name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	via := ""
	if fi.Mode().Type() == fs.ModeSymlink {
		target, err := dir.Readlink(name)
		if err != nil {
			return fmt.Errorf("reading symbolic link %s: %w", name, err)
		}
		if !path.IsAbs(target) {
			if t := path.Join(path.Dir(name), target); !strings.HasPrefix(t, "../") && t != ".." {
				if _, ok := slices.BinarySearch(tracked, t); ok && IsSourceFile(t) {
					rep.Skipped = append(rep.Skipped, SkippedFile{name, "symbolic link to " + t + ", which is scanned"})
					return nil
				}
			}
		}
		// Open follows the link inside root and refuses one that leaves it.
		if fi, err = dir.Stat(name); err != nil {
			rep.skip(name, fmt.Sprintf("symbolic link to %q, which cannot be read inside the checkout", target))
			return nil
		}
		via = target
	}
	if !fi.Mode().IsRegular() {
		rep.skip(name, "not a regular file")
		return nil
	}
	f, err := dir.Open(name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return fmt.Errorf("reading %s: the file changed while it was being opened", name)
	}
	one, err := scanFile(f, name, opts, fi.Size())
	if err != nil {
		return err
	}
	if via != "" {
		rep.Skipped = append(rep.Skipped, SkippedFile{name, fmt.Sprintf("symbolic link to %q, scanned under the link's name", via)})
	}
	rep.merge(one)
	return nil
}

// ScanFocus scans one file's content; file is its repository path, which
// decides the rules that apply (IsTestFile). It reads at most
// MaxFileBytes+1 bytes; a longer test file is reported Unscanned (after its
// first MaxFileBytes were scanned), any other longer file Skipped.
func ScanFocus(r io.Reader, file string, opts FocusOptions) (*FocusReport, error) {
	return scanFile(r, file, opts.withDefaults(), -1)
}

func scanFile(r io.Reader, file string, opts FocusOptions, size int64) (*FocusReport, error) {
	opts = opts.withDefaults()
	l, err := jslex.Scan(r, file, opts.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	rep := newFocusReport()
	rep.Files = 1
	if l.Truncated {
		reason := fmt.Sprintf("longer than the %d-byte cap; only the first %d bytes were scanned", opts.MaxFileBytes, opts.MaxFileBytes)
		if size >= 0 {
			reason = fmt.Sprintf("%d bytes, larger than the %d-byte cap; only the first %d bytes were scanned", size, opts.MaxFileBytes, opts.MaxFileBytes)
		}
		rep.skip(file, reason)
	}
	testFile := IsTestFile(file)
	exempt := ""
	switch {
	case slices.Contains(strings.Split(path.Dir(path.Clean("/"+file)), "/"), "node_modules"):
		exempt = "vendored dependency (node_modules/): runners do not collect tests there, and a dependency's own tests and runner source are no focus of this change"
	case !testFile && l.DefinesOnly:
		exempt = "the file defines focus (X.only = …, only: function, fdescribe: …) and is not named like a test: a test runner's implementation or bundle"
	}
	for _, h := range l.Strong {
		f := Focus(h)
		if exempt != "" {
			f.Note = exempt
			rep.Ignored = append(rep.Ignored, f)
			continue
		}
		rep.Focused = append(rep.Focused, f)
	}
	for _, h := range l.Weak {
		f := Focus(h)
		switch {
		case exempt != "":
			f.Note = exempt
			rep.Ignored = append(rep.Ignored, f)
		case testFile || l.TestContext:
			rep.Focused = append(rep.Focused, f)
		default:
			note := "not a test file, and the file calls no test function and imports no test framework: an ordinary library call"
			if f.Note != "" {
				note = f.Note + "; " + note
			}
			f.Note = note
			rep.Ignored = append(rep.Ignored, f)
		}
	}
	for _, h := range slices.Concat(l.Benign, l.Ignored) {
		rep.Ignored = append(rep.Ignored, Focus(h))
	}
	if l.Dropped > 0 {
		rep.Skipped = append(rep.Skipped, SkippedFile{file, fmt.Sprintf("%d further occurrences not listed (cap %d per file and list)", l.Dropped, maxHits)})
	}
	rep.sort()
	return rep, nil
}

// skip files a file not (fully) scanned: a test file fails closed, any
// other is noted.
func (r *FocusReport) skip(file, reason string) {
	if failsClosed(file) {
		r.Unscanned = append(r.Unscanned, SkippedFile{file, reason})
		return
	}
	r.Skipped = append(r.Skipped, SkippedFile{file, reason})
}

func (r *FocusReport) merge(o *FocusReport) {
	r.Files += o.Files
	r.Focused = append(r.Focused, o.Focused...)
	r.Ignored = append(r.Ignored, o.Ignored...)
	r.Unscanned = append(r.Unscanned, o.Unscanned...)
	r.Skipped = append(r.Skipped, o.Skipped...)
}

func (o FocusOptions) withDefaults() FocusOptions {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

func newFocusReport() *FocusReport {
	return &FocusReport{Focused: []Focus{}, Ignored: []Focus{}, Unscanned: []SkippedFile{}, Skipped: []SkippedFile{}}
}

func (r *FocusReport) sort() {
	byPos := func(a, b Focus) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Marker, b.Marker))
	}
	slices.SortFunc(r.Focused, byPos)
	slices.SortFunc(r.Ignored, byPos)
	bySkip := func(a, b SkippedFile) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Reason, b.Reason))
	}
	slices.SortFunc(r.Unscanned, bySkip)
	slices.SortFunc(r.Skipped, bySkip)
}
