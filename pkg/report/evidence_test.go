package report_test

import (
	"os"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

func i64(v int64) *int64 { return &v }

// Issue #12, "summary counts are evidence": claims come from the outermost
// declaration of each attribute, are never counted twice, and fail a report
// only when they claim more failures than the file shows.
func TestJUnitClaims(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		want      *report.Claims // nil: no claims
		more      bool
		failedIDs int
	}{
		{
			name: "root totals are the claim; the suites' figures are not added again",
			doc: `<testsuites tests="2" failures="1"><testsuite tests="1" failures="1"><testcase name="a"><failure/></testcase></testsuite>` +
				`<testsuite tests="1" failures="0"><testcase name="b"/></testsuite></testsuites>`,
			want:      &report.Claims{Tests: i64(2), Failures: i64(1), Scope: "<testsuites>", Shown: 1},
			failedIDs: 1,
		},
		{
			name:      "a bare root: the top-level suites are summed",
			doc:       `<testsuites><testsuite tests="1" errors="1"><testcase name="a"><error/></testcase></testsuite><testsuite tests="2" errors="0"><testcase name="b"/><testcase name="c"/></testsuite></testsuites>`,
			want:      &report.Claims{Tests: i64(3), Errors: i64(1), Scope: "2 <testsuite> elements", Shown: 1},
			failedIDs: 1,
		},
		{
			name:      "an attribute missing at the root is taken from the suites",
			doc:       `<testsuites tests="1"><testsuite skipped="1"><testcase name="a"><skipped/></testcase></testsuite></testsuites>`,
			want:      &report.Claims{Tests: i64(1), Skipped: i64(1), Scope: "<testsuites> and 1 <testsuite> element", Shown: 0},
			failedIDs: 0,
		},
		{
			name: "nested suites are read below a suite that declares nothing",
			doc:  `<testsuite name="outer"><testsuite name="i1" failures="1"><testcase name="a"><failure/></testcase></testsuite><testsuite name="i2" failures="0"><testcase name="b"/></testsuite></testsuite>`,
			want: &report.Claims{Failures: i64(1), Scope: "2 <testsuite> elements", Shown: 1}, failedIDs: 1,
		},
		{
			name: "no attributes, no claims (pytest, node:test)",
			doc:  `<testsuites><testsuite name="s"><testcase name="a"/></testsuite></testsuites>`,
		},
		{
			name: "a count that is not a number is no claim",
			doc:  `<testsuite failures="" errors="x" tests="1"><testcase name="a"/></testsuite>`,
			want: &report.Claims{Tests: i64(1), Scope: "<testsuite>", Shown: 0},
		},
		{
			name: "claims a failure no element shows: the file says something failed",
			doc:  `<testsuites tests="2" failures="1"><testsuite><testcase name="a"/><testcase name="b"/></testsuite></testsuites>`,
			want: &report.Claims{Tests: i64(2), Failures: i64(1), Scope: "<testsuites>", Shown: 0}, more: true,
		},
		{
			name: "errors= counts too",
			doc:  `<testsuite tests="1" failures="0" errors="1"><testcase name="a"/></testsuite>`,
			want: &report.Claims{Tests: i64(1), Failures: i64(0), Errors: i64(1), Scope: "<testsuite>", Shown: 0}, more: true,
		},
		{
			// Reporters disagree on failures= vs errors=; the sum decides.
			name:      "an error counted in failures= is no false alarm",
			doc:       `<testsuite tests="2" failures="2" errors="0"><testcase name="a"><failure/></testcase><testcase name="b"><error/></testcase></testsuite>`,
			want:      &report.Claims{Tests: i64(2), Failures: i64(2), Errors: i64(0), Scope: "<testsuite>", Shown: 2},
			failedIDs: 2,
		},
		{
			name:      "two <failure> elements in one testcase are two shown failures",
			doc:       `<testsuite failures="2"><testcase name="a"><failure/><failure/></testcase></testsuite>`,
			want:      &report.Claims{Failures: i64(2), Scope: "<testsuite>", Shown: 2},
			failedIDs: 1,
		},
		{
			// Surefire 3.0 counts each failed attempt of a test that passed
			// on rerun (junit-plugin TEST-io.olamy.FlakyTest.xml).
			name: "Surefire flaky reruns are shown failures, the test still passed",
			doc:  `<testsuite tests="1" failures="2"><testcase name="a"><flakyFailure/><flakyFailure/></testcase></testsuite>`,
			want: &report.Claims{Tests: i64(1), Failures: i64(2), Scope: "<testsuite>", Shown: 2},
		},
		{
			name:      "a suite-level error (a Fault) is shown",
			doc:       `<testsuite errors="1"><error message="BeforeClass failed"/><testcase name="a"/></testsuite>`,
			want:      &report.Claims{Errors: i64(1), Scope: "<testsuite>", Shown: 1},
			failedIDs: 0,
		},
		{
			name:      "claiming fewer failures than shown is only recorded",
			doc:       `<testsuite failures="0"><testcase name="a"><failure/></testcase></testsuite>`,
			want:      &report.Claims{Failures: i64(0), Scope: "<testsuite>", Shown: 1},
			failedIDs: 1,
		},
		{
			name:      "status=\"failed\" without an element shows one failure",
			doc:       `<testsuite failures="1"><testcase name="a" status="failed"/></testsuite>`,
			want:      &report.Claims{Failures: i64(1), Scope: "<testsuite>", Shown: 1},
			failedIDs: 1,
		},
		{
			name: "sums saturate instead of wrapping",
			doc:  `<testsuites>` + strings.Repeat(`<testsuite failures="999999999999999999"/>`, 20) + `<testsuite><testcase name="a"/></testsuite></testsuites>`,
			want: &report.Claims{Failures: i64(1 << 53), Scope: "20 <testsuite> elements", Shown: 0}, more: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := report.Parse(strings.NewReader(tc.doc), report.JUnit, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := claimsString(inv.Claims), claimsString(tc.want); got != want {
				t.Errorf("claims %s, want %s", got, want)
			}
			claimed, seen, more := inv.ClaimsMoreFailures()
			if more != tc.more {
				t.Errorf("ClaimsMoreFailures = %d, %d, %v; want more=%v", claimed, seen, more, tc.more)
			}
			if inv.Counts.Failed != tc.failedIDs {
				t.Errorf("failed tests %d, want %d", inv.Counts.Failed, tc.failedIDs)
			}
		})
	}
}

func claimsString(c *report.Claims) string {
	if c == nil {
		return "none"
	}
	f := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strings.TrimSpace(strings.Repeat(" ", 0) + itoa(*p))
	}
	return "tests=" + f(c.Tests) + " failures=" + f(c.Failures) + " errors=" + f(c.Errors) + " skipped=" + f(c.Skipped) + " scope=" + c.Scope + " shown=" + itoa(c.Shown)
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func TestOtherFormatsHaveNoClaims(t *testing.T) {
	for format, doc := range map[report.Format]string{
		report.TAP:    "1..1\nnot ok 1 - a\n",
		report.GoJSON: `{"Action":"fail","Package":"p","Test":"T"}` + "\n",
	} {
		inv, err := report.Parse(strings.NewReader(doc), format, report.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, more := inv.ClaimsMoreFailures(); inv.Claims != nil || more {
			t.Errorf("%s: claims %+v", format, inv.Claims)
		}
	}
}

func TestFirstLine(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		max  int
		want string
	}{
		{"", 80, ""},
		{"\n  \n\t x_test.go:12: got 1 want 2 \nmore", 80, "x_test.go:12: got 1 want 2"},
		{"abcdef", 4, "a…"},       // "…" is 3 bytes and counts
		{"abcdef", 2, ""},         // no room for a character and the mark
		{"héllo wörld", 6, "hé…"}, // never splits the two-byte l/é boundary
		{"red \x1b[31mX\x1b[0m\ttab", 80, `red \x1b[31mX\x1b[0m tab`},
		{"bad \xff byte, real \uFFFD", 80, `bad \xff byte, real ` + "\uFFFD"},
		{"line\u2028sep", 80, `line\u2028sep`},
		{"\x1b\x1b\x1b", 9, `\x1b…`}, // an escape is never split
	} {
		got := report.FirstLine(tc.msg, tc.max)
		if got != tc.want {
			t.Errorf("FirstLine(%q, %d) = %q, want %q", tc.msg, tc.max, got, tc.want)
		}
		if len(got) > tc.max {
			t.Errorf("FirstLine(%q, %d) is %d bytes", tc.msg, tc.max, len(got))
		}
	}
}

// Issue #12, "failed tests need their message": every parser gives a failed
// test the text a finding quotes.
func TestFailedTestsCarryTheirMessage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format report.Format
		doc    string
		want   map[report.TestID]string // id → FirstLine(message)
	}{
		{"junit message attribute", report.JUnit, `<testsuite><testcase name="a"><failure message="expected 1&#10;got 2">trace</failure></testcase></testsuite>`,
			map[report.TestID]string{"a": "expected 1"}},
		{"junit text when message is absent or blank", report.JUnit, `<testsuite><testcase name="a"><error message=" ">` + "\n  Boom: it broke\n  at x" + `</error></testcase><testcase name="b"><failure>why</failure></testcase></testsuite>`,
			map[report.TestID]string{"a": "Boom: it broke", "b": "why"}},
		{"tap yaml message", report.TAP, "TAP version 13\n1..1\nnot ok 1 - a\n  ---\n  message: 'should be equal'\n  ...\n",
			map[report.TestID]string{"a": "should be equal"}},
		{"tap perl diagnostics", report.TAP, "1..2\nnot ok 1 - a\n#   Failed test 'a'\n#   at t/a.t line 5.\nok 2 - b\n# tests 2\n",
			map[report.TestID]string{"a": "Failed test 'a'"}},
		{"tap mocha indented diagnostics", report.TAP, "1..2\nok 1 b\nnot ok 2 a\n  AssertionError: 1 == 2\n      at Context.<anonymous> (t.js:3:9)\n# tests 2\n# pass 1\n# fail 1\n",
			map[report.TestID]string{"a": "AssertionError: 1 == 2"}},
		{"tap run summary is no message", report.TAP, "1..1\nnot ok 1 - a\n# tests 1\n# fail 1\n",
			map[report.TestID]string{"a": ""}},
		{"tap yaml wins over later comments", report.TAP, "1..1\nnot ok 1 - a\n  ---\n  message: m\n  ...\n# note\n",
			map[report.TestID]string{"a": "m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := report.Parse(strings.NewReader(tc.doc), tc.format, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range inv.Tests {
				want, ok := tc.want[tt.ID]
				if !ok {
					continue
				}
				if tt.Status != report.Failed {
					t.Errorf("%s: status %s", tt.ID, tt.Status)
				}
				if got := report.FirstLine(tt.Message, 200); got != want {
					t.Errorf("%s: first line %q (message %q), want %q", tt.ID, got, tt.Message, want)
				}
			}
		})
	}
}

// A real go test -json run (Go 1.26, testdata/recorded/README.md): a package
// that does not build, a panicking test, a t.Errorf failure, and subtest
// names go test rewrote from invalid UTF-8.
func TestRecordedGoBuildFailAndPanic(t *testing.T) {
	f, err := os.Open("testdata/recorded/go1.26-buildfail-panic.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inv, err := report.Parse(f, report.GoJSON, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[report.TestID]string{}
	for _, tt := range inv.Tests {
		got[tt.ID] = string(tt.Status) + " " + report.FirstLine(tt.Message, 200)
	}
	want := map[report.TestID]string{
		"example.com/m/ok::TestPass":               "passed ",
		"example.com/m/ok::TestFail":               "failed ok_test.go:7: starting",
		"example.com/m/panics::TestBefore":         "passed ",
		"example.com/m/panics::TestPanic":          "failed panic: boom [recovered, repanicked]",
		"example.com/m/names::TestNames":           "passed ",
		"example.com/m/names::TestNames/\uFFFD":    "passed ",
		"example.com/m/names::TestNames/\uFFFD#01": "passed ",
		`example.com/m/names::TestNames/a\xff`:     "passed ",
	}
	if len(got) != len(want) {
		t.Errorf("tests %q", got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
	// The broken package is a fault; the tests the others show passed stay
	// (a baseline keeps authority for them).
	if len(inv.Faults) != 1 || inv.Faults[0].Scope != "example.com/m/broken" || !strings.Contains(inv.Faults[0].Message, `broken.go:3:23: cannot use "x"`) {
		t.Errorf("faults %+v", inv.Faults)
	}
}

// Issue #12, "broken baselines keep authority": a baseline that bailed out
// keeps the tests it reported; when the caller allows it (a baseline) a
// repeated id is kept once per occurrence, in report order, and listed
// (issue 24: repeats keep authority by count), and a candidate still fails.
func TestBaselineDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format report.Format
		doc    string
		kept   []string
		dups   []report.TestID
	}{
		{"junit", report.JUnit, `<testsuite><testcase name="b"/><testcase name="a"><failure/></testcase><testcase name="u"/><testcase name="a"/><testcase name="b"/><testcase name="b"/></testsuite>`,
			[]string{"b=passed", "a=failed", "u=passed", "a=passed", "b=passed", "b=passed"}, []report.TestID{"a", "b"}},
		{"tap", report.TAP, "1..4\nok 1 - z\nok 2 - u\nnot ok 3 - z\nok 4 - y\n", []string{"z=passed", "u=passed", "z=failed", "y=passed"}, []report.TestID{"z"}},
		{"go-json", report.GoJSON, `{"Action":"pass","Package":"p","Test":"T"}` + "\n" + `{"Action":"fail","Package":"p","Test":"T"}` + "\n" + `{"Action":"pass","Package":"p","Test":"U"}` + "\n" + `{"Action":"fail","Package":"p"}` + "\n",
			[]string{"p::T=passed", "p::T=failed", "p::U=passed"}, []report.TestID{"p::T"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.Parse(strings.NewReader(tc.doc), tc.format, report.Options{})
			if rmerr.CodeOf(err) != rmerr.ReportIdentity {
				t.Fatalf("candidate: want RM-REPORT-002, got %v", err)
			}
			inv := checkParse(t, tc.doc, tc.format, report.Options{AllowDuplicateIDs: true}, parseWant{tests: tc.kept, notes: []string{"each occurrence is kept and counts"}})
			if strings.Join(idStrings(inv.Duplicates), ",") != strings.Join(idStrings(tc.dups), ",") || inv.DuplicateCount != len(tc.dups) {
				t.Errorf("duplicates %q (%d), want %q", inv.Duplicates, inv.DuplicateCount, tc.dups)
			}
		})
	}
	// Bounded: a report repeating many ids lists MaxDuplicatesListed of them.
	var b strings.Builder
	n := report.MaxDuplicatesListed + 7
	b.WriteString("1.." + itoa(int64(2*n)) + "\n")
	for i := range 2 * n {
		b.WriteString("ok - t" + itoa(int64(1000+i%n)) + "\n")
	}
	inv, err := report.Parse(strings.NewReader(b.String()), report.TAP, report.Options{AllowDuplicateIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Duplicates) != report.MaxDuplicatesListed || inv.DuplicateCount != n || len(inv.Tests) != 2*n || inv.Duplicates[0] != "t1000" {
		t.Errorf("%d listed of %d, %d tests kept, first %q", len(inv.Duplicates), inv.DuplicateCount, len(inv.Tests), inv.Duplicates[0])
	}
}

func idStrings(ids []report.TestID) []string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return s
}

func TestBaselineBailOutKeepsTests(t *testing.T) {
	inv := checkParse(t, "1..3\nok 1 - a\nnot ok 2 - b\nBail out! database gone\nok 3 - c\n", report.TAP, report.Options{},
		parseWant{tests: []string{"a=passed", "b=failed"}, faults: 1})
	if !strings.Contains(inv.Faults[0].Message, "Bail out! database gone") {
		t.Errorf("fault %+v", inv.Faults)
	}
}

// Issue #13, "bounded error quoting": no error quotes more than about 200
// bytes of its input, however long the offending text.
func TestErrorsQuoteBoundedInput(t *testing.T) {
	huge := strings.Repeat("9", 1_000_000)
	long := strings.Repeat("n", 10_000)
	for _, tc := range []struct {
		name   string
		format report.Format
		doc    string
	}{
		{"go-json million-digit Elapsed", report.GoJSON, `{"Action":"pass","Package":"p","Test":"T","Elapsed":1e` + huge + "}\n"},
		{"go-json duplicate long id", report.GoJSON, strings.Repeat(`{"Action":"pass","Package":"p","Test":"`+long+`"}`+"\n", 2)},
		{"go-json invalid UTF-8 long id", report.GoJSON, `{"Action":"pass","Package":"p","Test":"` + long + "\xff\"}\n"},
		{"tap duplicate long id", report.TAP, "1..2\nok 1 " + long + "\nok 2 " + long + "\n"},
		{"tap long invalid plan", report.TAP, "1.." + huge + "x\n"},
		{"tap long invalid UTF-8 id", report.TAP, "1..1\nok 1 " + long + "\xff\n"},
		{"junit duplicate long id", report.JUnit, "<testsuite>" + strings.Repeat(`<testcase name="`+long+`"/>`, 2) + "</testsuite>"},
		{"junit nameless case with a long classname", report.JUnit, `<testsuite><testcase classname="` + long + `"/></testsuite>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.Parse(strings.NewReader(tc.doc), tc.format, report.Options{})
			if err == nil {
				t.Fatal("want an error")
			}
			if n := len(err.Error()); n > 1200 {
				t.Errorf("error is %d bytes: %.300s…", n, err)
			}
		})
	}
}
