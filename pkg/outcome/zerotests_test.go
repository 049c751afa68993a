package outcome_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// scanChunks feeds data to a fresh scanner in the given chunk sizes (the
// last chunk takes the rest).
func scanChunks(data []byte, sizes ...int) outcome.OutputFindings {
	s := outcome.NewOutputScanner()
	for _, n := range sizes {
		n = min(n, len(data))
		s.Write(data[:n])
		data = data[n:]
	}
	s.Write(data)
	return s.Result()
}

// sameFindings compares two results by value.
func sameFindings(a, b outcome.OutputFindings) bool {
	return reflect.DeepEqual(a, b)
}

// checkSplits fails unless every way of writing out gives want: every
// two-way split, byte by byte, and shifted across the scanner's internal
// 64 KiB chunk boundary.
func checkSplits(t *testing.T, out string, want outcome.OutputFindings) {
	t.Helper()
	data := []byte(out)
	for i := 0; i <= len(data); i++ {
		if got := scanChunks(data, i); !sameFindings(got, want) {
			t.Fatalf("split at %d: got %s; want %s", i, show(got), show(want))
		}
	}
	ones := make([]int, len(data))
	for i := range ones {
		ones[i] = 1
	}
	if got := scanChunks(data, ones...); !sameFindings(got, want) {
		t.Fatalf("byte by byte: got %s; want %s", show(got), show(want))
	}
	for _, shift := range []int{1, 3, 7} {
		pad := strings.Repeat(".", 64<<10-shift) + "\n"
		got := scanChunks([]byte(pad+out), 100, 64<<10-150, 2, 1)
		w := want
		if w.ZeroTests != nil {
			m := *w.ZeroTests
			m.Line++
			w.ZeroTests = &m
		}
		if w.Skip != nil {
			m := *w.Skip
			m.Line++
			w.Skip = &m
		}
		if !sameFindings(got, w) {
			t.Fatalf("padded by %d: got %s; want %s", len(pad), show(got), show(w))
		}
	}
}

func show(o outcome.OutputFindings) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func TestZeroTestPhrases(t *testing.T) {
	type tc struct {
		name   string
		out    string
		phrase string // "" means no zero-test verdict
		line   int
	}
	run := func(t *testing.T, c tc) {
		o, err := outcome.ScanOutput(strings.NewReader(c.out))
		if err != nil {
			t.Fatal(err)
		}
		m := o.ZeroTests
		if c.phrase == "" {
			if m != nil {
				t.Fatalf("found %+v; want no zero-test phrase", *m)
			}
		} else if m == nil || m.Phrase != c.phrase || m.Line != c.line {
			t.Fatalf("got %s; want phrase %q at line %d", show(o), c.phrase, c.line)
		}
		checkSplits(t, c.out, o)
	}
	for _, c := range []tc{
		// Spec § 4's phrases.
		{"jest no tests found", "No tests found, exiting with code 0\n", "no tests found", 1},
		{"zero tests", "[==========] 0 tests from 0 test suites ran. (0 ms total)\n", "0 tests", 1},
		{"zero passed", "ok | 0 passed | 0 failed (0ms)\n", "0 passed", 1},
		{"passWithNoTests echoed by npm", "\n> demo@1.0.0 test\n> jest --passWithNoTests\n\n", "passWithNoTests", 3},
		// Other runners.
		{"pytest collected 0 items", "rootdir: /x\ncollected 0 items\n", "collected 0 items", 2},
		{"pytest deselected everything", "collected 2 items / 2 deselected / 0 selected\n", "0 selected", 1},
		{"pytest no tests ran", "=== no tests ran in 0.01s ===\n", "no tests ran", 1},
		{"unittest", "---\nRan 0 tests in 0.000s\n\nOK\n", "Ran 0 tests", 2},
		{"unittest 3.12", "\nNO TESTS RAN\n", "no tests ran", 2},
		{"go no test files", "?   \texample.com/m/b\t[no test files]\n", "no test files", 1},
		{"go no tests to run", "testing: warning: no tests to run\nPASS\nok  \tx\t0.1s [no tests to run]\n", "no tests to run", 1},
		{"go ok line with no tests to run only", "ok  \tx\t0.1s [no tests to run]\n", "no tests to run", 1},
		{"rspec", "\nFinished in 0.001 seconds\n0 examples, 0 failures\n", "0 examples", 3},
		{"rspec no examples found", "No examples found.\n", "no examples found", 1},
		{"phpunit", "No tests executed!\n", "no tests executed", 1},
		{"phpunit OK line", "OK (0 tests, 0 assertions)\n", "0 tests", 1},
		{"cargo only empty binaries", "running 0 tests\n\ntest result: ok. 0 passed; 0 failed\n", "running 0 tests", 1},
		{"nextest", "error: no tests to run\n", "error: no tests to run", 1},
		{"node test tap", "TAP version 13\n1..0\n# tests 0\n", "1..0", 2},
		{"node test summary", "# tests 0\n# pass 0\n", "# tests 0", 1},
		{"node test summary no space", "#tests 0\n", "# tests 0", 1},
		{"node spec reporter", "ℹ tests 0\nℹ suites 0\nℹ pass 0\n", "ℹ tests 0", 1},
		{"node spec reporter coloured", "\x1b[34mℹ tests 0\x1b[39m\r\n", "ℹ tests 0", 1},
		{"mocha", "\n\n  0 passing (1ms)\n\n", "0 passing", 3},
		{"mocha coloured", "\x1b[92m \x1b[0m\x1b[32m 0 passing\x1b[0m\x1b[90m (6ms)\x1b[0m\n", "0 passing", 1},
		{"colour code inside phrase", "\x1b[1m0\x1b[22m passing\n", "0 passing", 1},
		{"karma", "Executed 0 of 0 SUCCESS (0.001 secs / 0 secs)\n", "Executed 0 of", 1},
		{"ginkgo", "Ran 0 of 5 Specs in 0.001 seconds\n", "Ran 0 of", 1},
		{"ctest", "No tests were found!!!\n", "no tests were found", 1},
		{"vitest", "No test files found, exiting with code 1\n", "no test files found", 1},
		{"jest summary", "Tests:       0 total\n", "Tests: 0 total", 1},
		{"jest all skipped", "Test Suites: 1 skipped, 0 of 1 total\nTests:       1 skipped, 1 total\n", "Tests: N skipped, N total", 2},
		{"pytest all skipped", "collected 1 item\n\n==== 1 skipped in 0.00s ====\n", "= N skipped in Ts =", 3},
		{"maven module with zero", "Tests run: 0, Failures: 0, Errors: 0, Skipped: 0\n", "Tests run: 0", 1},
		{"dotnet", "Total tests: 0. Passed: 0.\n", "Total tests: 0", 1},
		{"dotnet no test available", "No test is available in /x/y.dll.\n", "no test is available", 1},
		{"cucumber", "0 scenarios\n0 steps\n", "0 scenarios", 1},
		{"jasmine", "0 specs, 0 failures\n", "0 specs", 1},
		{"upper case", "NO TESTS FOUND\n", "no tests found", 1},
		{"tabs and runs of spaces", "no \t tests\t\tfound\n", "no tests found", 1},
		{"CRLF", "x\r\n  0 passing (1ms)\r\n", "0 passing", 2},
		{"no trailing newline", "0 passing", "0 passing", 1},
		{"at start of output", "0 tests", "0 tests", 1},
		{"always phrase beats earlier per-unit phrase", "?   \tb\t[no test files]\nok  \ta\t0.1s\n0 passing\n", "0 passing", 3},
		{"0 tests then comma", "Executed 0 tests, with 0 failures (0 unexpected)\n", "0 tests", 1},

		// Not zero tests.
		{"ten passed", "10 passed in 0.5s\n", "", 0},
		{"hundred tests", "Ran 100 tests in 1.0s\n", "", 0},
		{"decimal", "coverage 1.0 passed threshold\n", "", 0},
		{"decimal comma", "1,0 tests\n", "", 0},
		{"zero failed", "5 passed, 0 failed\n", "", 0},
		{"ctest 0 tests failed", "100% tests passed, 0 tests failed out of 12\n", "", 0},
		{"0 tests were skipped", "12 tests, 0 tests were skipped\n", "", 0},
		{"qualifier before", "Failed: 0 tests\nSkipped: 0 tests\n", "", 0},
		{"0 examples pending", "4 examples, 0 examples pending\n", "", 0},
		{"word boundary left", "snow tests found\n", "", 0},
		{"word boundary right", "no tests foundation\n", "", 0},
		{"passed suffix", "0 passedx\n", "", 0},
		{"number suffix", "# tests 05\n", "", 0},
		{"indented TAP plan is a nested subtest", "    1..0\nok 1 - suite\n1..1\n", "", 0},
		{"plan not at line start", "range x1..0\n", "", 0},
		{"plan with more digits", "1..05\n", "", 0},
		{"go mixed packages", "ok  \texample.com/m/a\t0.008s\n?   \texample.com/m/b\t[no test files]\n", "", 0},
		{"go cached", "ok  \texample.com/m/a\t(cached)\n?   \texample.com/m/b\t[no test files]\n", "", 0},
		{"go verbose", "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n?   \tb\t[no test files]\n", "", 0},
		{"go json", "{\"Action\":\"output\",\"Output\":\"?   \\tb\\t[no test files]\\n\"}\n{\"Action\":\"run\",\"Test\":\"TestAdd\"}\n", "", 0},
		{"cargo with unit tests and empty doc-tests", "running 1 test\ntest t ... ok\n\ntest result: ok. 1 passed\n\n   Doc-tests c\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed\n", "", 0},
		{"cargo summary alone", "test result: ok. 0 passed; 0 failed; 0 ignored\n", "", 0},
		{"maven modules", "No tests to run.\n[INFO] Tests run: 12, Failures: 0, Errors: 0, Skipped: 0\n", "", 0},
		{"jest some passed", "Tests:       1 skipped, 1 passed, 2 total\n", "", 0},
		{"pytest some passed", "==== 1 passed, 2 skipped in 0.10s ====\n", "", 0},
		{"test name with underscores", "test_no_tests_found PASSED\n", "", 0},
		{"node spec tests ran", "ℹ tests 12\nℹ pass 12\n", "", 0},
		{"node spec pass 0 is no total", "ℹ pass 0\nℹ fail 2\n", "", 0},
		{"node spec ran beside a go package without tests", "?   \tb\t[no test files]\nℹ tests 12\n", "", 0},
		{"node tap ran beside a go package without tests", "?   \tb\t[no test files]\n# tests 3\n", "", 0},
		{"empty", "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestOutputRecorded runs the scanner over outputs recorded from real
// runners (testdata/output/SOURCES.md says how each was produced).
func TestOutputRecorded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "output", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded outputs: %v", err)
	}
	got := map[string]outcome.OutputFindings{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o, err := outcome.ScanOutput(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(f)] = o
	}
	goldenJSON(t, got)
}

func TestOutputScannerWriteAfterResult(t *testing.T) {
	s := outcome.NewOutputScanner()
	s.Write([]byte("0 passing\n1 pending\n"))
	first := s.Result()
	if first.ZeroTests == nil || first.Skip == nil {
		t.Fatalf("want both matches, got %s", show(first))
	}
	if _, err := s.Write([]byte("x")); err == nil {
		t.Fatal("write after Result succeeded")
	}
	if again := s.Result(); !sameFindings(again, first) {
		t.Fatalf("second Result = %s; want %s", show(again), show(first))
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("pipe broke") }

func TestScanOutputReadError(t *testing.T) {
	if _, err := outcome.ScanOutput(failingReader{}); err == nil {
		t.Fatal("read error not returned")
	}
}

// filler streams n bytes of harmless log lines.
type filler struct{ n int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	const line = "2024-01-01T00:00:00Z INFO ran the thing in 0.12s; 10 passed, 100 tests total\n"
	n := 0
	for n < len(p) && f.n > 0 {
		c := copy(p[n:min(len(p), n+int(min(f.n, int64(len(line)))))], line)
		n += c
		f.n -= int64(c)
	}
	return n, nil
}

// TestOutputScannerBoundedMemory streams 256 MiB through the scanner and
// checks that the live heap does not grow with it (outputs can be 2 GB).
func TestOutputScannerBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB")
	}
	s := outcome.NewOutputScanner()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := io.CopyBuffer(s, io.MultiReader(&filler{n: 256 << 20}, strings.NewReader("\n0 passing\n")), make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	o := s.Result()
	if o.ZeroTests == nil || o.ZeroTests.Phrase != "0 passing" || o.Skip != nil {
		t.Fatalf("got %s; want 0 passing at the end and no skip", show(o))
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Fatalf("heap grew by %d bytes while scanning", grew)
	}
}

func TestZeroTestsInInventory(t *testing.T) {
	type tc struct {
		name string
		inv  *report.Inventory
		zero bool
		msg  string
	}
	tests := func(st ...report.Status) []report.Test {
		var out []report.Test
		for i, s := range st {
			out = append(out, report.Test{ID: report.TestID(rune('a' + i)), Status: s})
		}
		return out
	}
	run := func(t *testing.T, c tc) {
		f, zero := outcome.ZeroTestsInInventory(c.inv)
		if zero != c.zero {
			t.Fatalf("zero = %v; want %v (%+v)", zero, c.zero, f)
		}
		if zero && (f.Code != rmerr.ReportEmpty || f.Rule != outcome.RuleZeroTests || !strings.Contains(f.Message, c.msg)) {
			t.Fatalf("finding %+v; want RM-REPORT-005 %s mentioning %q", f, outcome.RuleZeroTests, c.msg)
		}
	}
	for _, c := range []tc{
		{"nil inventory is not a verdict on tests", nil, false, ""},
		{"no tests", &report.Inventory{}, true, "no test"},
		{"counts only", &report.Inventory{Counts: report.Counts{Total: 2, Skipped: 2}}, true, "all 2 tests"},
		{"all skipped", &report.Inventory{Tests: tests(report.Skipped, report.Skipped)}, true, "all 2 tests"},
		{"one passed", &report.Inventory{Tests: tests(report.Skipped, report.Passed)}, false, ""},
		{"one failed", &report.Inventory{Tests: tests(report.Failed)}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

func BenchmarkOutputScanner(b *testing.B) {
	var buf bytes.Buffer
	io.Copy(&buf, &filler{n: 16 << 20})
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		s := outcome.NewOutputScanner()
		s.Write(data)
		s.Result()
	}
}

// TestSkipPhrases: identity-free skips both ways, on the summaries and lines
// real runners print (recorded ones in testdata/output are checked by
// TestOutputRecorded; pytest, vitest, playwright, bun, deno, rspec, ExUnit,
// gradle, gotestsum, nextest, maven, dotnet and phpunit lines are typed from
// their documented formats, none being installed here).
func TestSkipPhrases(t *testing.T) {
	type tc struct {
		name   string
		out    string
		phrase string // "" means no skip
		line   int
		text   string // the quoted text, when checked
	}
	run := func(t *testing.T, c tc) {
		o, err := outcome.ScanOutput(strings.NewReader(c.out))
		if err != nil {
			t.Fatal(err)
		}
		m := o.Skip
		switch {
		case c.phrase == "" && m != nil:
			t.Fatalf("found %+v; want no skip", *m)
		case c.phrase != "" && (m == nil || m.Phrase != c.phrase || m.Line != c.line):
			t.Fatalf("got %s; want phrase %q at line %d", show(o), c.phrase, c.line)
		case c.text != "" && m.Text != c.text:
			t.Fatalf("text %q; want %q", m.Text, c.text)
		}
		checkSplits(t, c.out, o)
	}
	for _, c := range []tc{
		// node:test summaries, TAP and spec reporters.
		{"node tap skipped", "# pass 1\n# fail 0\n# skipped 1\n# todo 0\n", "# skipped N", 3, "# skipped 1"},
		{"node tap todo", "# skipped 0\n# todo 2\n", "# todo N", 2, ""},
		{"node spec skipped", "ℹ pass 3\nℹ skipped 1\n", "ℹ skipped N", 2, "ℹ skipped 1"},
		{"node spec todo", "ℹ todo 12\n", "ℹ todo N", 1, ""},
		{"node spec coloured, CRLF", "\x1b[34mℹ skipped 2\x1b[39m\r\n", "ℹ skipped N", 1, "ℹ skipped 2"},
		// Summary counts.
		{"jest", "Tests:       1 skipped, 3 passed, 4 total\n", "N skipped", 1, "1 skipped, 3 passed, 4 total"},
		{"jest todo", "Tests:       1 todo, 1 passed, 2 total\n", "N skipped", 1, ""},
		{"vitest", " Test Files  1 passed (1)\n      Tests  3 passed | 1 skipped (4)\n", "N skipped", 2, "1 skipped (4)"},
		{"pytest", "==== 3 passed, 1 skipped in 0.12s ====\n", "N skipped", 1, ""},
		{"pytest quiet", "...s\n3 passed, 1 skipped in 0.12s\n", "N skipped", 2, ""},
		{"pytest xfailed is a skip", "==== 3 passed, 1 xfailed in 0.12s ====\n", "N skipped", 1, ""},
		{"pytest many skipped", "==== 3 passed, 12 skipped, 2 warnings in 0.12s ====\n", "N skipped", 1, ""},
		{"mocha pending", "  2 passing (4ms)\n  1 pending\n", "N skipped", 2, "1 pending"},
		{"playwright", "  1 skipped\n  3 passed (1.2s)\n", "N skipped", 1, ""},
		{"bun", " 3 pass\n 1 skip\n 0 fail\n", "N skipped", 2, ""},
		{"cargo ignored", "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n", "N skipped", 1, ""},
		{"deno ignored", "ok | 3 passed | 0 failed | 1 ignored (5ms)\n", "N skipped", 1, ""},
		{"rspec pending", "4 examples, 0 failures, 1 pending\n", "N skipped", 1, ""},
		{"ExUnit", "4 tests, 0 failures, 1 skipped\n", "N skipped", 1, ""},
		{"gradle", "4 tests completed, 1 failed, 1 skipped\n", "N skipped", 1, ""},
		{"gotestsum", "DONE 4 tests, 1 skipped in 0.512s\n", "N skipped", 1, ""},
		{"nextest", "     Summary [   0.010s] 4 tests run: 3 passed, 1 skipped\n", "N skipped", 1, ""},
		{"maven", "[INFO] Tests run: 4, Failures: 0, Errors: 0, Skipped: 1\n", "Skipped: N", 1, "Skipped: 1"},
		{"dotnet", "Passed!  - Failed:     0, Passed:     3, Skipped:     1, Total:     4, Duration: 5 ms\n", "Skipped: N", 1, ""},
		{"phpunit", "OK, but some tests were skipped!\nTests: 4, Assertions: 4, Skipped: 1.\n", "Skipped: N", 2, ""},
		// Per-test lines.
		{"go test -v", "=== RUN   TestX\n    x_test.go:7: no db\n--- SKIP: TestX (0.00s)\n", "--- SKIP:", 3, "--- SKIP: TestX (0.00s)"},
		{"go subtest", "--- PASS: TestT (0.00s)\n    --- SKIP: TestT/windows (0.00s)\n", "--- SKIP:", 2, ""},
		{"TAP skip", "TAP version 13\n1..2\nok 1 - first\nok 2 - third # SKIP no db\n", "TAP # SKIP", 4, "ok 2 - third # SKIP no db"},
		{"TAP todo", "not ok 4 - fourth # TODO later\n", "TAP # SKIP", 1, ""},
		{"TAP skip lower case, no number", "ok - x # skip\n", "TAP # SKIP", 1, ""},
		{"TAP SKIPPED suffix", "ok 1 x # SKIPPED: no db\n", "TAP # SKIP", 1, ""},
		{"TAP nested point", "# Subtest: inner\n    ok 1 - nested # SKIP\n", "TAP # SKIP", 2, ""},
		{"first skip wins", "--- SKIP: TestA (0.00s)\n# skipped 2\n", "--- SKIP:", 1, ""},
		{"long line quoted bounded", "ok 1 - " + strings.Repeat("x", 300) + " # SKIP\n", "TAP # SKIP", 1, "ok 1 - " + strings.Repeat("x", 121)},

		// Not skips.
		{"node tap zero", "# skipped 0\n# todo 0\n", "", 0, ""},
		{"node spec zero", "ℹ skipped 0\nℹ todo 0\n", "", 0, ""},
		{"node summary not alone", "# todo 1 more case to write\n", "", 0, ""},
		{"node summary mid-line", "echo # skipped 1\n", "", 0, ""},
		{"zero skipped", "3 passed, 0 skipped in 0.1s\n", "", 0, ""},
		{"cargo zero ignored", "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n", "", 0, ""},
		{"xpassed ran", "==== 3 passed, 1 xpassed in 0.12s ====\n", "", 0, ""},
		{"skipped files", "3 skipped files\n", "", 0, ""},
		{"isort", "Skipped 2 files\n", "", 0, ""},
		{"golangci-lint", "level=info msg=\"[runner] Skipped 1 issues by rules\"\n", "", 0, ""},
		{"download log", "Downloaded 3, 2 skipped\n", "", 0, ""},
		{"mid-line count without summary", "cache: 2 skipped\n", "", 0, ""},
		{"pending review", "1 pending review\n", "", 0, ""},
		{"word before number", "v1 skipped, 3 passed\n", "", 0, ""},
		{"decimal", "took 1.5 skipped 3 passed\n", "", 0, ""},
		{"skipped colon without a list", "Skipped: 1\n", "", 0, ""},
		{"maven zero", "Tests run: 4, Failures: 0, Errors: 0, Skipped: 0\n", "", 0, ""},
		{"escaped TAP hash", "ok 1 - handles \\# SKIP text\n", "", 0, ""},
		{"TAP hash without space", "ok 1 - x#SKIP\n", "", 0, ""},
		{"TAP TODOS is no directive", "ok 1 - x # TODOS\n", "", 0, ""},
		{"TAP time comment", "ok 1 - x # time=12ms\n", "", 0, ""},
		{"okay is not ok", "okay # skip\n", "", 0, ""},
		{"go ok line", "ok  \texample.com/m/a\t0.02s\n", "", 0, ""},
		{"longer dash run", "---- SKIP: x\n", "", 0, ""},
		{"jest per-test skipped line alone", "  ○ skipped needs a database\n", "", 0, ""},
		{"go json package skip", "{\"Action\":\"skip\",\"Package\":\"example.com/m/b\",\"Elapsed\":0}\n", "", 0, ""},
		{"test named for skipping", "=== RUN   TestSkipHandling\n--- PASS: TestSkipHandling (0.00s)\n", "", 0, ""},
		{"empty", "", "", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestZeroTestsAndSkipsTogether: one pass reports both, and the finding of
// each carries its rule, code, line and the quoted text.
func TestZeroTestsAndSkipsTogether(t *testing.T) {
	o, err := outcome.ScanOutput(strings.NewReader("Test Suites: 1 skipped, 0 of 1 total\nTests:       1 skipped, 1 total\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.ZeroTests == nil || o.ZeroTests.Line != 2 || o.Skip == nil || o.Skip.Line != 1 {
		t.Fatalf("got %s; want zero tests at line 2 and a skip at line 1", show(o))
	}
	fs := o.Findings()
	if len(fs) != 2 || fs[0].Rule != outcome.RuleZeroTests || fs[1].Rule != outcome.RuleIdentityFreeSkip {
		t.Fatalf("findings %+v", fs)
	}
	sk := fs[1]
	if sk.Code != rmerr.VerifySkipped || sk.Line != 1 || !strings.Contains(sk.Message, `"1 skipped, 0 of 1 total"`) || !strings.Contains(sk.Hint, "declared_skips") {
		t.Fatalf("skip finding %+v", sk)
	}
	if fs := (outcome.OutputFindings{}).Findings(); len(fs) != 0 {
		t.Fatalf("no matches gave findings %+v", fs)
	}
}

// TestSkipTextEscaped: the finding quotes the output escaped, so control
// bytes and invalid UTF-8 cannot forge lines in a log or an annotation.
func TestSkipTextEscaped(t *testing.T) {
	o, _ := outcome.ScanOutput(strings.NewReader("ok 1 - a\x07b\xff # SKIP\n"))
	if o.Skip == nil {
		t.Fatal("no skip")
	}
	msg := o.Skip.Finding().Message
	if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\x07\n") || !strings.Contains(msg, `a\ab`+"\uFFFD") {
		t.Fatalf("message not escaped: %q", msg)
	}
}

// TestOutputScannerConcurrentWriters: stdout and stderr share one scanner;
// whole-line writes from both are seen whatever their interleaving (run
// with -race to prove the sharing safe).
func TestOutputScannerConcurrentWriters(t *testing.T) {
	s := outcome.NewOutputScanner()
	var wg sync.WaitGroup
	for _, line := range []string{"ok 1 - fine\n", "  1 pending\n"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				s.Write([]byte(line))
			}
		}()
	}
	wg.Wait()
	o := s.Result()
	if o.Skip == nil || o.Skip.Text != "1 pending" || o.ZeroTests != nil {
		t.Fatalf("got %s; want the pending count and no zero tests", show(o))
	}
}
