package outcome

import (
	"slices"
	"strings"
)

// The zero-test vocabulary. Spec § 4 names "no tests found", "0 tests",
// "0 passed" and "passWithNoTests"; the rest are what the common runners
// print when they executed nothing (each entry names them). Every literal is
// lower case and matched ASCII case-insensitively.

type phraseKind uint8

const (
	// always: the phrase means the whole run executed nothing.
	always phraseKind = iota
	// perUnit: the phrase is printed per package/crate/module and means zero
	// tests only when no evidence phrase says some unit ran tests.
	perUnit
	// evidence: some unit of a per-unit runner ran at least one test.
	evidence
	// skip: the output says N > 0 tests were skipped (or pending, todo,
	// ignored, xfailed). Without a report none of them has an identity.
	skip
)

type elemKind uint8

const (
	lit     elemKind = iota // literal text
	gap                     // 1..maxGap spaces or tabs
	optGap                  // 0..maxGap spaces or tabs
	nonzero                 // a decimal number other than zero: [1-9][0-9]{0,11}
)

const maxGap = 32

type elem struct {
	kind elemKind
	s    string
}

type phrase struct {
	name    string
	runners string
	kind    phraseKind
	seq     []elem
	// open: no right word boundary ("running 1 test" also opens "tests").
	open bool
	// lineStart: only at the very start of a line. An indented TAP "1..0"
	// is a nested subtest's plan (node:test prints one for an empty
	// describe), not the run's.
	lineStart bool
	// lineEnd: nothing but spaces, tabs and a CR may follow on the line, so
	// that node's "# todo 1" summary matches and a recipe comment
	// "# todo 1 more case" echoed by make does not.
	lineEnd bool
	// reject vetoes a match by its surroundings (a qualifier after a count,
	// a more specific per-unit phrase before it).
	reject func(v view, end int) bool
	// custom replaces seq entirely.
	custom func(v view) (int, bool)
	// prefix is the literal every match starts with (set from seq unless
	// custom).
	prefix string
	// starts lists the bytes a match can start with when prefix is empty
	// (a count starts with any of 1-9).
	starts string
}

// words builds a sequence from a phrase written with single spaces, each of
// which matches a run of spaces or tabs (jest pads "Tests:       0 total").
func words(s string) []elem {
	var seq []elem
	for i, w := range strings.Split(s, " ") {
		if i > 0 {
			seq = append(seq, elem{kind: gap})
		}
		seq = append(seq, elem{kind: lit, s: w})
	}
	return seq
}

func countPhrase(name, runners string) *phrase {
	return &phrase{name: name, runners: runners, kind: always, seq: words(name), reject: partialCount}
}

var phrases = []*phrase{
	{name: "no tests found", runners: "jest, vitest, playwright, gradle, bun", seq: words("no tests found")},
	{name: "no tests were found", runners: "ctest", seq: words("no tests were found")},
	{name: "no tests were run", runners: "generic", seq: words("no tests were run")},
	{name: "no tests were executed", runners: "generic", seq: words("no tests were executed")},
	{name: "no tests ran", runners: "pytest, unittest, catch2", seq: words("no tests ran")},
	{name: "no tests executed", runners: "phpunit", seq: words("no tests executed")},
	{name: "no tests collected", runners: "pytest", seq: words("no tests collected")},
	{name: "no test files found", runners: "vitest", seq: words("no test files found")},
	{name: "no specs found", runners: "jasmine", seq: words("no specs found")},
	{name: "no examples found", runners: "rspec", seq: words("no examples found")},
	{name: "no test is available", runners: "dotnet test", seq: words("no test is available")},
	{name: "no test modules found", runners: "deno", seq: words("no test modules found")},
	{name: "error: no tests to run", runners: "cargo-nextest", seq: words("error: no tests to run")},
	{name: "passWithNoTests", runners: "jest, vitest", seq: words("passwithnotests")},
	{name: "collected 0 items", runners: "pytest", seq: words("collected 0 items")},
	{name: "0 selected", runners: "pytest -k/-m", seq: words("0 selected")},
	{name: "Ran 0 tests", runners: "unittest, bun", seq: words("ran 0 tests")},
	{name: "Ran 0 of", runners: "ginkgo", seq: words("ran 0 of")},
	{name: "Executed 0 of", runners: "karma", seq: words("executed 0 of")},
	{name: "Total tests: 0", runners: "dotnet test", seq: words("total tests: 0")},
	{name: "Tests: 0 total", runners: "jest", seq: []elem{{kind: lit, s: "tests:"}, {kind: optGap}, {kind: lit, s: "0"}, {kind: gap}, {kind: lit, s: "total"}}},
	{name: "# tests 0", runners: "node:test, tap", seq: []elem{{kind: lit, s: "#"}, {kind: optGap}, {kind: lit, s: "tests"}, {kind: gap}, {kind: lit, s: "0"}}},
	{name: "ℹ tests 0", runners: "node:test spec reporter", seq: []elem{{kind: lit, s: "ℹ"}, {kind: optGap}, {kind: lit, s: "tests"}, {kind: gap}, {kind: lit, s: "0"}}},
	{name: "1..0", runners: "TAP, bats", seq: words("1..0"), lineStart: true},
	countPhrase("0 tests", "googletest, ExUnit, swift, gradle, nextest"),
	countPhrase("0 examples", "rspec"),
	countPhrase("0 specs", "jasmine"),
	countPhrase("0 scenarios", "cucumber"),
	{name: "0 passed", runners: "pytest, vitest, deno, zig", seq: words("0 passed"), reject: cargoSummary},
	{name: "0 passing", runners: "mocha", seq: words("0 passing")},
	{name: "Tests: N skipped, N total", runners: "jest (a -t filter that matched nothing)", custom: jestAllSkipped, prefix: "tests:"},
	{name: "= N skipped in Ts =", runners: "pytest (every test skipped)", custom: pytestAllSkipped, prefix: "="},

	{name: "running 0 tests", runners: "cargo (per test binary)", kind: perUnit, seq: words("running 0 tests")},
	{name: "no test files", runners: "go test (per package)", kind: perUnit, seq: words("no test files")},
	{name: "no tests to run", runners: "go test, maven surefire (per package or module)", kind: perUnit, seq: words("no tests to run")},
	{name: "Tests run: 0", runners: "maven surefire (per module)", kind: perUnit, seq: words("tests run: 0")},

	{name: "go test ok line", kind: evidence, custom: goOKLine, prefix: "ok"},
	{name: "=== RUN", kind: evidence, seq: words("=== run")},
	{name: `"Action":"run"`, kind: evidence, seq: []elem{{kind: lit, s: `"action":`}, {kind: optGap}, {kind: lit, s: `"run"`}}},
	{name: "running N tests", kind: evidence, open: true, seq: []elem{{kind: lit, s: "running"}, {kind: gap}, {kind: nonzero}, {kind: gap}, {kind: lit, s: "test"}}},
	{name: "Tests run: N", kind: evidence, open: true, seq: []elem{{kind: lit, s: "tests"}, {kind: gap}, {kind: lit, s: "run:"}, {kind: gap}, {kind: nonzero}}},
	{name: "# tests N", kind: evidence, seq: []elem{{kind: lit, s: "#"}, {kind: optGap}, {kind: lit, s: "tests"}, {kind: gap}, {kind: nonzero}}},
	{name: "ℹ tests N", kind: evidence, seq: []elem{{kind: lit, s: "ℹ"}, {kind: optGap}, {kind: lit, s: "tests"}, {kind: gap}, {kind: nonzero}}},

	// Identity-free skips (spec § 4: a check without a report whose output
	// says tests were skipped did not pass). Each needs N > 0: "0 skipped"
	// and "# skipped 0" are what every clean summary prints.
	nodeSummary("# skipped N", "node:test TAP reporter", "#", "skipped"),
	nodeSummary("# todo N", "node:test TAP reporter", "#", "todo"),
	nodeSummary("ℹ skipped N", "node:test spec reporter", "ℹ", "skipped"),
	nodeSummary("ℹ todo N", "node:test spec reporter", "ℹ", "todo"),
	{name: "N skipped", runners: "jest, vitest, pytest, mocha, playwright, cargo, deno, rspec, ExUnit, gradle, nextest, gotestsum, bun",
		kind: skip, custom: skipCount, starts: "123456789"},
	{name: "Skipped: N", runners: "maven surefire, dotnet test, phpunit", kind: skip, custom: skippedColon, prefix: "skipped:"},
	{name: "--- SKIP:", runners: "go test -v", kind: skip, seq: []elem{{kind: lit, s: "---"}, {kind: gap}, {kind: lit, s: "skip:"}}, reject: afterDash},
	{name: "TAP # SKIP", runners: "TAP producers (ok/not ok … # SKIP or # TODO)", kind: skip, custom: tapSkipLine, prefix: "ok"},
	{name: "TAP # SKIP", runners: "TAP producers (ok/not ok … # SKIP or # TODO)", kind: skip, custom: tapSkipLine, prefix: "not"},
}

// nodeSummary is one line of node:test's closing summary, "# skipped 2"
// (TAP) or "ℹ skipped 2" (spec), alone on its line.
func nodeSummary(name, runners, mark, word string) *phrase {
	return &phrase{name: name, runners: runners, kind: skip, lineEnd: true,
		seq:    []elem{{kind: lit, s: mark}, {kind: optGap}, {kind: lit, s: word}, {kind: gap}, {kind: nonzero}},
		reject: func(v view, _ int) bool { return !lineStartAt(v, v.i, true) }}
}

// startIndex lists, per byte, the phrases that can start with it; pairs
// says which two-byte starts any phrase can have. Together they make most
// bytes of a large output cost two table lookups.
var (
	startIndex [256][]*phrase
	pairs      [1 << 16]bool
)

func init() {
	for _, p := range phrases {
		if p.custom == nil {
			p.prefix = p.seq[0].s
		}
		starts := p.starts
		if starts == "" {
			starts = string([]byte{p.prefix[0], upper(p.prefix[0])})
		}
		for _, c0 := range []byte(starts) {
			if !slices.Contains(startIndex[c0], p) {
				startIndex[c0] = append(startIndex[c0], p)
			}
			for c1 := range 256 {
				if p.canFollow(byte(c1)) {
					pairs[int(c0)<<8|c1] = true
				}
			}
		}
	}
}

// canFollow reports whether c can be the second byte of a match.
func (p *phrase) canFollow(c byte) bool {
	switch {
	case len(p.prefix) > 1:
		return lower(c) == p.prefix[1]
	case p.custom != nil && p.starts != "":
		// A count "1 skipped" or "12 skipped": a digit or the gap.
		return isDigit(c) || c == ' ' || c == '\t'
	case p.custom != nil || len(p.seq) == 1:
		return true
	}
	switch next := p.seq[1]; next.kind {
	case gap:
		return c == ' ' || c == '\t'
	case optGap:
		return c == ' ' || c == '\t' || (p.seq[2].kind == lit && lower(c) == p.seq[2].s[0])
	}
	return true
}

var auxiliaries = set("were", "was", "are", "is", "have", "has", "had", "been", "being")

var qualifiers = set(
	"fail", "fails", "failed", "failing", "failure", "failures",
	"error", "errors", "errored", "erred", "erroring",
	"skip", "skips", "skipped", "skipping",
	"pending", "todo", "ignored", "broken", "flaky", "disabled", "excluded",
	"deselected", "filtered", "cancelled", "canceled", "timed", "timeout",
	"crashed", "aborted", "retried", "rerun", "retrying", "unstable",
	"xfailed", "xpassed", "marked", "remaining", "left", "queued",
)

// skipWords are the summary words for tests that did not execute. xfailed
// is one: pytest's own JUnit writer records an xfailed test as <skipped
// type="pytest.xfail">, so with a report the same test counts as skipped,
// and spec § 4 counts TAP's TODO (TAP's expected failure) as skipped; the
// output and the report must not disagree about one test. xpassed is not:
// that test ran and passed.
var skipWords = set("skipped", "skip", "pending", "todo", "ignored", "xfailed")

// countWords are what a test summary counts. A skip count on a line with
// another of these is a test summary ("1 skipped, 3 passed, 4 total"); "2
// skipped" beside nothing test-like may be any tool's log.
var countWords = set(
	"passed", "passing", "pass", "failed", "failing", "fail", "failures", "failure",
	"total", "tests", "test", "examples", "example", "specs", "spec", "scenarios",
	"errors", "error", "xpassed", "deselected", "selected", "measured",
	"skipped", "skip", "pending", "todo", "ignored", "xfailed",
)
