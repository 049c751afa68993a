package report_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// parseWant is what a parse should yield: either tests ("id=status" in order) or
// an error code with a fragment of its message.
type parseWant struct {
	tests  []string
	faults int
	notes  []string // fragments that must appear among the notes
	code   rmerr.Code
	reason string
}

func checkParse(t *testing.T, input string, format report.Format, opts report.Options, w parseWant) *report.Inventory {
	t.Helper()
	inv, err := report.Parse(strings.NewReader(input), format, opts)
	if w.code != "" {
		if err == nil {
			t.Fatalf("want %s, got an inventory: %+v", w.code, inv.Tests)
		}
		if got := rmerr.CodeOf(err); got != w.code {
			t.Fatalf("want %s, got %s: %v", w.code, got, err)
		}
		if !strings.Contains(err.Error(), w.reason) {
			t.Fatalf("error %q does not mention %q", err, w.reason)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	var got []string
	for _, tc := range inv.Tests {
		got = append(got, string(tc.ID)+"="+string(tc.Status))
	}
	if strings.Join(got, "\n") != strings.Join(w.tests, "\n") {
		t.Fatalf("tests:\n got %q\nwant %q", got, w.tests)
	}
	if len(inv.Faults) != w.faults {
		t.Fatalf("faults: got %+v, want %d", inv.Faults, w.faults)
	}
	notes := strings.Join(inv.Notes, "\n")
	for _, n := range w.notes {
		if !strings.Contains(notes, n) {
			t.Fatalf("notes %q lack %q", inv.Notes, n)
		}
	}
	c := inv.Counts
	if c.Total != len(inv.Tests) || c.Passed+c.Failed+c.Skipped != c.Total {
		t.Fatalf("counts %+v do not add up for %d tests", c, len(inv.Tests))
	}
	return inv
}

func TestTAP(t *testing.T) {
	suite := report.Options{Identity: report.IdentitySuitePath}
	tests := []struct {
		name  string
		input string
		opts  report.Options
		want  parseWant
	}{
		{
			name:  "flat stream with every status",
			input: "TAP version 14\n1..5\nok 1 - first\nnot ok 2 - second\nok 3 third # SKIP no db\nnot ok 4 - fourth # TODO later\nok fifth\n",
			want:  parseWant{tests: []string{"first=passed", "second=failed", "third=skipped", "fourth=skipped", "fifth=passed"}},
		},
		{
			name:  "plan at the end, no version line (TAP 12)",
			input: "ok 1 a\nok 2 b\n1..2\n",
			want:  parseWant{tests: []string{"a=passed", "b=passed"}},
		},
		{
			name:  "directive spellings: SKIP with a suffix counts, TODO must stand alone",
			input: "1..4\nok 1 a # skipped: slow\nok 2 b #SkIpPeD\nnot ok 3 c # TODOLATER\nnot ok 4 d # todo\n",
			want:  parseWant{tests: []string{"a=skipped", "b=skipped", "c # TODOLATER=failed", "d=skipped"}},
		},
		{
			name:  "escaped hash and other # text stay in the description",
			input: "1..3\nok 1 - issue \\#12 fixed\nok 2 - count # of items\nok 3 - runs fast # time=12ms\n",
			want:  parseWant{tests: []string{"issue #12 fixed=passed", "count # of items=passed", "runs fast=passed"}},
		},
		{
			name:  "CRLF line ends",
			input: "1..1\r\nok 1 - windows\r\n",
			want:  parseWant{tests: []string{"windows=passed"}},
		},
		{
			name:  "comments, blank lines and noise are tolerated and noted",
			input: "# header\nnoise from a console.log\n\n1..1\nok 1 - a\n",
			want:  parseWant{tests: []string{"a=passed"}, notes: []string{"1 non-TAP line(s) ignored, the first at line 2"}},
		},
		{
			name:  "missing plan",
			input: "ok 1 - a\nok 2 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "no plan"},
		},
		{
			name:  "zero-test plan",
			input: "TAP version 13\n1..0 # skip no translator\n",
			want:  parseWant{code: rmerr.ReportEmpty, reason: "1..0"},
		},
		{
			name:  "fewer points than planned",
			input: "1..3\nok 1 - a\nok 2 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "plan 1..3 but the stream has 2 test point(s)"},
		},
		{
			name:  "more points than planned",
			input: "1..1\nok 1 - a\nok 2 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "plan 1..1 but the stream has 2"},
		},
		{
			name:  "plan in the middle",
			input: "ok 1 - a\n1..2\nok 2 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "never in the middle"},
		},
		{
			name:  "two plans",
			input: "1..1\n1..1\nok 1 - a\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "second plan"},
		},
		{
			name:  "plan not starting at 1",
			input: "2..3\nok 2 - a\nok 3 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "does not start at 1"},
		},
		{
			name:  "repeated test number",
			input: "1..2\nok 1 - a\nok 1 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "test number 1 is repeated"},
		},
		{
			name:  "test number outside the plan",
			input: "1..2\nok 1 - a\nok 7 - b\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "test number 7 is outside the plan 1..2"},
		},
		{
			name:  "out of order numbers are fine and noted",
			input: "1..2\nok 2 - b\nok 1 - a\n",
			want:  parseWant{tests: []string{"b=passed", "a=passed"}, notes: []string{"out of sequence"}},
		},
		{
			name:  "empty description",
			input: "1..3\nok 1 - a\nok 2\nok 3 - # SKIP why\n",
			want:  parseWant{code: rmerr.ReportIdentity, reason: "line 3 has no description; 2 of 3"},
		},
		{
			name:  "duplicate ids",
			input: "1..3\nok 1 - same\nnot ok 2 - same\nok 3 - other\n",
			want:  parseWant{code: rmerr.ReportIdentity, reason: `"same" occurs 2 times`},
		},
		{
			name:  "a test point indented off the 4-space grid is never noise",
			input: "1..1\nok 1 - a\n   not ok 2 - hidden\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "indented by 3 spaces"},
		},
		{
			name:  "a version line after the stream started",
			input: "1..1\nTAP version 13\nok 1 - a\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "after the stream started"},
		},
		{
			name:  "pragma +strict makes noise an error",
			input: "pragma +strict\n1..1\nnonsense\nok 1 - a\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "under pragma +strict"},
		},
		{
			name:  "bail out keeps what ran, records a fault, skips the plan check",
			input: "1..5\nok 1 - a\nnot ok 2 - b\nBail out! database down\nok 3 - c\n",
			want:  parseWant{tests: []string{"a=passed", "b=failed"}, faults: 1, notes: []string{"plan 1..5 not checked"}},
		},
		{
			name:  "not TAP at all",
			input: "Error: beep\n    at foo (bar.js:1:1)\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "not a TAP stream"},
		},
		{
			name:  "empty file",
			input: "",
			want:  parseWant{code: rmerr.ReportEmpty, reason: "0 bytes"},
		},
		{
			name:  "node:test nesting is rejected by default, naming the first nested id",
			input: nodeTAP,
			want:  parseWant{code: rmerr.ReportIdentity, reason: `first nested test point "inner" at line 4; 2 of 3 test points are inside subtests`},
		},
		{
			name:  "node:test nesting under suite-path",
			input: nodeTAP,
			opts:  suite,
			want:  parseWant{tests: []string{"outer=failed", "outer > inner=passed", "outer > broken=failed"}},
		},
		{
			name:  "node-tap style (# Subtest inside the child) under suite-path",
			input: "TAP version 14\n    # Subtest: child\n    1..1\n    ok 1 - leaf\nok 1 - child\n1..1\n",
			opts:  suite,
			want:  parseWant{tests: []string{"child=passed", "child > leaf=passed"}},
		},
		{
			name:  "buffered subtest under suite-path",
			input: "1..2\nok 1 - parent {\n    1..2\n    ok 1 - a\n    not ok 2 - b\n}\nok 2 - after\n",
			opts:  suite,
			want:  parseWant{tests: []string{"parent=passed", "parent > a=passed", "parent > b=failed", "after=passed"}},
		},
		{
			name:  "buffered subtest opened by a lone brace after the point's YAML",
			input: "1..1\nnot ok 1 - parent\n  ---\n  message: bad\n  ...\n{\n    1..1\n    ok - child\n}\n",
			opts:  suite,
			want:  parseWant{tests: []string{"parent=failed", "parent > child=passed"}},
		},
		{
			name:  "a child stream must match its own plan",
			input: "    1..3\n    ok 1 - a\nnot ok 1 - parent\n1..1\n",
			opts:  suite,
			want:  parseWant{code: rmerr.ReportMalformed, reason: "plan 1..3 but the subtest opened at line 1 has 1"},
		},
		{
			name:  "a child stream needs a plan",
			input: "    ok 1 - a\nok 1 - parent\n1..1\n",
			opts:  suite,
			want:  parseWant{code: rmerr.ReportMalformed, reason: "has no plan"},
		},
		{
			name:  "a child stream must be closed by its parent's test point",
			input: "1..1\n    1..1\n    ok 1 - a\n1..1\n",
			opts:  suite,
			want:  parseWant{code: rmerr.ReportMalformed, reason: "not followed by its test point"},
		},
		{
			name:  "a stream that ends inside a subtest",
			input: "1..1\nok 1 - a\n    1..1\n    ok 1 - b\n",
			opts:  suite,
			want:  parseWant{code: rmerr.ReportMalformed, reason: "ends inside the subtest"},
		},
		{
			name:  "an unclosed buffered subtest",
			input: "1..2\nok 1 - a {\n    1..1\n    ok 1 - b\nok 2 - c\n",
			opts:  suite,
			want:  parseWant{code: rmerr.ReportMalformed, reason: `not closed by "}"`},
		},
		{
			name:  "same child name under different parents is unique",
			input: "1..2\n    1..1\n    ok 1 - works\nok 1 - a\n    1..1\n    ok 1 - works\nok 2 - b\n",
			opts:  suite,
			want:  parseWant{tests: []string{"a=passed", "a > works=passed", "b=passed", "b > works=passed"}},
		},
		{
			name:  "bail out inside a subtest drops the open subtest's tests",
			input: "TAP version 13\n1..2\nok 1 - a\n    1..2\n    ok 1 - b\nBail out! gone\n",
			opts:  suite,
			want:  parseWant{tests: []string{"a=passed"}, faults: 1, notes: []string{"1 test point(s) inside subtests left open by Bail out! were dropped"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.input, report.TAP, tc.opts, tc.want)
		})
	}
}

const nodeTAP = `TAP version 13
# Subtest: outer
    # Subtest: inner
    ok 1 - inner
      ---
      duration_ms: 0.1
      ...
    # Subtest: broken
    not ok 2 - broken
      ---
      location: '/src/test/x.test.js:12:3'
      error: 'expected 1 to equal 2'
      ...
    1..2
not ok 1 - outer
  ---
  error: '1 subtest failed'
  ...
1..1
`

func TestTAPDiagnostics(t *testing.T) {
	input := `TAP version 13
1..3
not ok 1 - yaml message
  ---
  message: |
    line one
    line two
  at:
    file: test.js
    line: 8
  ...
not ok 2 - tape style
  ---
    operator: equal
    at: Test.<anonymous> (/src/test.js:5:7)
  ...
ok 3 - skipped # SKIP no network
`
	inv := checkParse(t, input, report.TAP, report.Options{}, parseWant{tests: []string{"yaml message=failed", "tape style=failed", "skipped=skipped"}})
	got := inv.Tests
	if got[0].Message != "line one\nline two" || got[0].File != "test.js" || got[0].Line != 8 {
		t.Errorf("test 1: %+v", got[0])
	}
	if got[1].File != "/src/test.js" || got[1].Line != 5 {
		t.Errorf("test 2: %+v", got[1])
	}
	if got[2].Message != "SKIP: no network" {
		t.Errorf("test 3: %+v", got[2])
	}
}

func TestTAPMessageCut(t *testing.T) {
	long := strings.Repeat("x", 100)
	input := "1..1\nnot ok 1 - a\n  ---\n  message: " + long + "\n  ...\n"
	inv, err := report.Parse(strings.NewReader(input), report.TAP, report.Options{Limits: smallLimits()})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Tests[0].Message) != 32 {
		t.Errorf("message not cut to 32 bytes: %q", inv.Tests[0].Message)
	}
	if !strings.Contains(strings.Join(inv.Notes, "\n"), "cut to 32 of 100 bytes; sha256 of the full text: ") {
		t.Errorf("no cut note: %q", inv.Notes)
	}
}

func smallLimits() report.Limits {
	return report.Limits{MaxBytes: 1 << 20, MaxDepth: 8, MaxField: 32, MaxLine: 4096, MaxTests: 1000}
}

func TestTAPUnterminatedYAML(t *testing.T) {
	// The block ends at a shallower line: its text is ignored and noted.
	checkParse(t, "1..2\nnot ok 1 - a\n  ---\n  message: cut\nok 2 - b\n", report.TAP, report.Options{},
		parseWant{tests: []string{"a=failed", "b=passed"}, notes: []string{"1 YAML diagnostic block(s) not terminated"}})
	// A block with no "..." that swallows a test point hides it: rejected.
	checkParse(t, "1..1\nok 1 - a\n  ---\n  not ok 2 - hidden\n", report.TAP, report.Options{},
		parseWant{code: rmerr.ReportMalformed, reason: "TAP line 4: the YAML block opened at line 3 has no closing"})
}
