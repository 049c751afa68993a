package report_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// events joins test2json lines.
func goEvents(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestGoJSON(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  parseWant
	}{
		{
			name: "pass, fail, skip and subtests; package summaries are not ids",
			input: goEvents(
				`{"Action":"start","Package":"example.com/a"}`,
				`{"Action":"run","Package":"example.com/a","Test":"TestOK"}`,
				`{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
				`{"Action":"pass","Package":"example.com/a","Test":"TestOK","Elapsed":0}`,
				`{"Action":"run","Package":"example.com/a","Test":"TestBad"}`,
				`{"Action":"run","Package":"example.com/a","Test":"TestBad/sub"}`,
				`{"Action":"fail","Package":"example.com/a","Test":"TestBad/sub","Elapsed":0}`,
				`{"Action":"fail","Package":"example.com/a","Test":"TestBad","Elapsed":0}`,
				`{"Action":"skip","Package":"example.com/a","Test":"TestLater","Elapsed":0}`,
				`{"Action":"fail","Package":"example.com/a","Elapsed":0.1}`,
				`{"Action":"skip","Package":"example.com/none","Elapsed":0}`,
			),
			want: parseWant{tests: []string{
				"example.com/a::TestOK=passed", "example.com/a::TestBad/sub=failed",
				"example.com/a::TestBad=failed", "example.com/a::TestLater=skipped",
			}},
		},
		{
			name: "a test that never finishes is failed",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestHang"}`,
				`{"Action":"output","Package":"p","Test":"TestHang","Output":"panic: test timed out after 1s\n"}`,
				`{"Action":"run","Package":"p","Test":"TestOK"}`,
				`{"Action":"pass","Package":"p","Test":"TestOK"}`,
				`{"Action":"fail","Package":"p","Elapsed":1}`,
			),
			want: parseWant{tests: []string{"p::TestOK=passed", "p::TestHang=failed"}, notes: []string{"1 test(s) never reached pass, fail or skip"}},
		},
		{
			name: "a package that fails with no failing test is a fault",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestOne"}`,
				`{"Action":"pass","Package":"p","Test":"TestOne"}`,
				`{"Action":"output","Package":"p","Output":"panic: in TestMain\n"}`,
				`{"Action":"fail","Package":"p","Elapsed":0.003}`,
			),
			want: parseWant{tests: []string{"p::TestOne=passed"}, faults: 1},
		},
		{
			name: "a package with no final event is a fault",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestOne"}`,
				`{"Action":"pass","Package":"p","Test":"TestOne"}`,
			),
			want: parseWant{tests: []string{"p::TestOne=passed"}, faults: 1},
		},
		{
			name: "Go 1.24 build failure: a fault carrying the compiler output",
			input: goEvents(
				`{"ImportPath":"p [p.test]","Action":"build-output","Output":"./x_test.go:3:1: syntax error\n"}`,
				`{"ImportPath":"p [p.test]","Action":"build-fail"}`,
				`{"Action":"start","Package":"p"}`,
				`{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}`,
				`{"Action":"run","Package":"q","Test":"TestQ"}`,
				`{"Action":"pass","Package":"q","Test":"TestQ"}`,
				`{"Action":"pass","Package":"q"}`,
			),
			want: parseWant{tests: []string{"q::TestQ=passed"}, faults: 1},
		},
		{
			name: "a plain FAIL line (pre-1.24 build failure) is a fault, other plain lines are noted",
			input: goEvents(
				`go: downloading example.com/dep v1.0.0`,
				`# example.com/broken`,
				`FAIL	example.com/broken [setup failed]`,
				`{"Action":"run","Package":"q","Test":"TestQ"}`,
				`{"Action":"pass","Package":"q","Test":"TestQ"}`,
				`{"Action":"pass","Package":"q"}`,
			),
			want: parseWant{tests: []string{"q::TestQ=passed"}, faults: 1, notes: []string{"3 non-JSON line(s) ignored, the first at line 1"}},
		},
		{
			name: "raw test2json without Package: bare test names",
			input: goEvents(
				`{"Action":"run","Test":"TestX"}`,
				`{"Action":"pass","Test":"TestX"}`,
				`{"Action":"pass"}`,
			),
			want: parseWant{tests: []string{"TestX=passed"}, notes: []string{"without a Package field"}},
		},
		{
			name: "output after a test's end changes nothing (golang/go#29755)",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestA"}`,
				`{"Action":"pass","Package":"p","Test":"TestA"}`,
				`{"Action":"output","Package":"p","Test":"TestA","Output":"late\n"}`,
				`{"Action":"pass","Package":"p"}`,
			),
			want: parseWant{tests: []string{"p::TestA=passed"}},
		},
		{
			name: "a repeated terminal event (-count=2, reruns) is a duplicate id",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestFlaky"}`,
				`{"Action":"fail","Package":"p","Test":"TestFlaky"}`,
				`{"Action":"fail","Package":"p"}`,
				`{"Action":"run","Package":"p","Test":"TestFlaky"}`,
				`{"Action":"pass","Package":"p","Test":"TestFlaky"}`,
				`{"Action":"pass","Package":"p"}`,
			),
			want: parseWant{code: rmerr.ReportIdentity, reason: `"p::TestFlaky" has 2 terminal events`},
		},
		{
			name:  "no JSON at all",
			input: "# example.com/broken\n./x.go:1:1: undefined: y\nFAIL\texample.com/broken [build failed]\n",
			want:  parseWant{code: rmerr.ReportMalformed, reason: "no test2json event"},
		},
		{
			name:  "a line that starts like JSON must be JSON",
			input: goEvents(`{"Action":"run","Package":"p","Test":"TestA"}`, `{"Action":"pass","Package":"p","Test":"Te`),
			want:  parseWant{code: rmerr.ReportMalformed, reason: "line 2 is not a valid test2json event"},
		},
		{
			name:  "a field of the wrong type",
			input: goEvents(`{"Action":"pass","Package":"p","Test":42}`),
			want:  parseWant{code: rmerr.ReportMalformed, reason: "Test must be a string"},
		},
		{
			name:  "an event without Action",
			input: goEvents(`{"Package":"p","Test":"TestA"}`),
			want:  parseWant{code: rmerr.ReportMalformed, reason: "has no Action"},
		},
		{
			name: "zero tests is not a pass",
			input: goEvents(
				`{"Action":"output","Package":"fmt","Output":"testing: warning: no tests to run\n"}`,
				`{"Action":"pass","Package":"fmt","Elapsed":0.011}`,
			),
			want: parseWant{code: rmerr.ReportEmpty, reason: "1 package(s) ran zero tests"},
		},
		{
			name:  "empty file",
			input: "",
			want:  parseWant{code: rmerr.ReportEmpty, reason: "0 bytes"},
		},
		{
			name: "unknown actions are noted, not fatal",
			input: goEvents(
				`{"Action":"run","Package":"p","Test":"TestA"}`,
				`{"Action":"teleport","Package":"p","Test":"TestA"}`,
				`{"Action":"pass","Package":"p","Test":"TestA"}`,
				`{"Action":"pass","Package":"p"}`,
			),
			want: parseWant{tests: []string{"p::TestA=passed"}, notes: []string{`unknown test2json actions ignored: ["teleport"]`}},
		},
		{
			name: "escapes in names decode as encoding/json does",
			input: goEvents(
				`{"Action":"pass","Package":"p","Test":"Test\u00e9/x\ud83d\ude00"}`,
				`{"Action":"pass","Package":"p","Test":"Test\\xff"}`,
				`{"Action":"pass","Package":"p","Test":"Test\ufffd"}`,
				`{"Action":"pass","Package":"p"}`,
			),
			want: parseWant{tests: []string{"p::Testé/x😀=passed", `p::Test\xff=passed`, "p::Test\uFFFD=passed"}},
		},
		{
			// Byte-exact ids (issue #13): decoded with U+FFFD, these two
			// would both be "p::TestBad\uFFFD" and one test could stand for
			// the other.
			name: "invalid UTF-8 in a Test is refused, not repaired",
			input: goEvents(
				"{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestBad\xff\"}",
				"{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestBad\xfe\"}",
			),
			want: parseWant{code: rmerr.ReportIdentity, reason: `line 1: the Test field "TestBad\xff" holds invalid UTF-8`},
		},
		{
			name:  "invalid UTF-8 in a Package is refused",
			input: goEvents("{\"Action\":\"output\",\"Package\":\"p\xff\",\"Output\":\"x\"}"),
			want:  parseWant{code: rmerr.ReportIdentity, reason: `the Package field "p\xff" holds invalid UTF-8`},
		},
		{
			name:  "an escaped lone surrogate in a Test is refused",
			input: goEvents(`{"Action":"pass","Package":"p","Test":"T\ud800"}`, `{"Action":"pass","Package":"p","Test":"T\udbff"}`),
			want:  parseWant{code: rmerr.ReportIdentity, reason: `lone surrogate`},
		},
		{
			name:  "a reversed surrogate pair is two lone surrogates",
			input: goEvents(`{"Action":"pass","Package":"p","Test":"T\ude00\ud83d"}`),
			want:  parseWant{code: rmerr.ReportIdentity, reason: `lone surrogate`},
		},
		{
			name: "invalid UTF-8 in Output is only text: replaced and noted",
			input: goEvents(
				"{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"T\",\"Output\":\"bad \xff\\n\"}",
				`{"Action":"fail","Package":"p","Test":"T"}`,
				`{"Action":"fail","Package":"p"}`,
			),
			want: parseWant{tests: []string{"p::T=failed"}, notes: []string{"invalid UTF-8"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.input, report.GoJSON, report.Options{}, tc.want)
		})
	}
}

func TestGoJSONMessages(t *testing.T) {
	input := goEvents(
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: want 1, got 2\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"run","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: chatty but passing\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"fail","Package":"p"}`,
	)
	inv := checkParse(t, input, report.GoJSON, report.Options{}, parseWant{tests: []string{"p::TestA=failed", "p::TestB=passed"}})
	a, b := inv.Tests[0], inv.Tests[1]
	if a.Message != "a_test.go:12: want 1, got 2" || a.File != "a_test.go" || a.Line != 12 {
		t.Errorf("failed test: %+v", a)
	}
	if b.Message != "" || b.File != "" {
		t.Errorf("a passing test keeps no message: %+v", b)
	}
}

// Escaped values in every field must decode independently of each other.
func TestGoJSONEscapedFields(t *testing.T) {
	input := goEvents(
		`{"Action":"p\u0061ss","Package":"\u00e9x","Test":"T\u0065st"}`,
		`{"Action":"f\u0061il","Package":"\u00e9x","Test":"Other"}`,
		`{"Action":"f\u0061il","Package":"\u00e9x"}`,
	)
	checkParse(t, input, report.GoJSON, report.Options{}, parseWant{tests: []string{"éx::Test=passed", "éx::Other=failed"}})
}
