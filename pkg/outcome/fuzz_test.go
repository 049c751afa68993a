package outcome_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// FuzzOutputChunking: feeding the same bytes in any split gives the same
// answer (zero tests and skips alike), also after a prefix that moves them across the scanner's internal
// 64 KiB chunk boundary; a match names a line inside the output.
func FuzzOutputChunking(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "output", "*.txt"))
	for i, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint64(i))
		}
	}
	for i, s := range []string{
		"0 passing", "10 passed", "0 tests failed", "running 0 tests\nrunning 1 test\n", "?   \tb\t[no test files]\nok  \ta\t0.1s\n",
		"\x1b[1m0\x1b[22m passing", "1..0\n", "    1..0\n", "Tests:       1 skipped, 1 total\n", "==== 2 skipped in 0.1s ====\n",
		"no\ttests  found", "# tests 0", "collected 0 items", "ok  \tx\t(cached) [no tests to run]\n", "passWithNoTests",
		"# skipped 1\n", "ℹ todo 2\r\n", "ℹ tests 0\n", "Tests:       1 skipped, 3 passed, 4 total\n", "  1 pending\n",
		"==== 3 passed, 1 xfailed in 0.12s ====\n", "    --- SKIP: TestX/y (0.00s)\n", "ok 1 - x # SKIP\n", "not ok 2 - y \\# TODO\n",
		"[INFO] Tests run: 4, Failures: 0, Errors: 0, Skipped: 1\n", "test result: ok. 1 passed; 0 failed; 1 ignored;\n", "3 skipped files\n",
	} {
		f.Add([]byte(s), uint64(i)*0x9e3779b97f4a7c15)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if seed%8 == 0 {
			pad := 64<<10 - int(seed>>8%4096)
			data = append([]byte(strings.Repeat(".", pad)+"\n"), data...)
		}
		whole := scanChunks(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		if m := whole.ZeroTests; m != nil && (m.Line < 1 || m.Line > lines || m.Phrase == "" || m.Text == "") {
			t.Fatalf("zero-test match %+v outside the output (%d lines)", *m, lines)
		}
		if m := whole.Skip; m != nil && (m.Line < 1 || m.Line > lines || m.Phrase == "" || m.Text == "" || len(m.Text) > 128*3) {
			t.Fatalf("skip match %+v outside the output (%d lines)", *m, lines)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(len(data))))
		maxChunk := 1 + int(seed>>16%9000)
		if len(data) > 8192 {
			maxChunk = max(maxChunk, 512) // keep long inputs to a few hundred writes
		}
		var sizes []int
		for rest := len(data); rest > 0; {
			n := 1 + rng.IntN(min(rest, maxChunk))
			sizes = append(sizes, n)
			rest -= n
		}
		if got := scanChunks(data, sizes...); !sameFindings(got, whole) {
			t.Fatalf("chunks %v: got %s; want %s", sizes, show(got), show(whole))
		}
		if len(data) <= 4096 {
			ones := make([]int, len(data))
			for i := range ones {
				ones[i] = 1
			}
			if got := scanChunks(data, ones...); !sameFindings(got, whole) {
				t.Fatalf("byte by byte: got %s; want %s", show(got), show(whole))
			}
		}
	})
}

// FuzzFocus: the focus scanner never panics or fails on any content, every
// occurrence it reports lies inside the file at a byte that starts its
// marker, and a file not named like a test is never judged more strictly
// than the same bytes in a test file (its focus is a subset).
func FuzzFocus(f *testing.F) {
	for _, s := range []string{
		"it.only('a', () => {});", "describe\n  .only('e', () => {});", "fit('b'); benefit(1); model.fit(2);",
		"test('c', { only: true }, () => {});", "test('d', {skip:false,'only' : true}, fn);",
		"// don't use .only( here\n", "const s = `${ fdescribe('z') } it.only(`;", "x = a / b; y = /it.only(/;",
		"const bad = 'it.only(\n", "/* fit(\n", "`\n${`${`", "#!/usr/bin/env node\nit.only()", "é\u2028it.only(1)",
		"f(...only(x)); function fit(a) {}", "a\\\nb'\\", "/[/]/.only(", "x?.only?.(1)",
		"it['only']('a'); it?.[`only`](b); f()[\"only\"]()", "test('a', {only: !0}, fn); test('b', {['only']: 1}); test('c', {only})",
		"const o = {only: 1e3}; pick(o, {only: 'x'}); Deno.test({only: void 0})", "x.only = function(){}; y = {only: function(){}}; it.only('z')",
		"const d = describe; d.only(1); import {test} from 'node:test'", "\x00\x00it.only(\x00)", "{{{{((([[[only: true]]])))}}}}",
		"test('a', {only: `x${y}`}, {only: -0}, {only: 0x00n})",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := outcome.ScanFocus(bytes.NewReader(data), "f.test.js", outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lib, err := outcome.ScanFocus(bytes.NewReader(data), "lib/f.js", outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(data, []byte("\n"))
		for _, list := range [][]outcome.Focus{rep.Focused, rep.Ignored, lib.Focused, lib.Ignored} {
			for _, fc := range list {
				if fc.File != "f.test.js" && fc.File != "lib/f.js" || fc.Line < 1 || fc.Line > len(lines) {
					t.Fatalf("occurrence %+v outside the file (%d lines)", fc, len(lines))
				}
				line := lines[fc.Line-1]
				off, ok := byteOfColumn(line, fc.Column)
				if !ok {
					t.Fatalf("occurrence %+v: column outside line %q", fc, line)
				}
				c := line[off]
				switch {
				case strings.HasPrefix(fc.Marker, "only:"):
					if c != 'o' && c != '\'' && c != '"' && c != '[' {
						t.Fatalf("occurrence %+v starts at %q", fc, line[off:])
					}
				case fc.Marker == "{ only }":
					if c != 'o' {
						t.Fatalf("occurrence %+v starts at %q", fc, line[off:])
					}
				case c != fc.Marker[0]:
					t.Fatalf("occurrence %+v starts at %q", fc, line[off:])
				}
			}
		}
		strict := map[outcome.Focus]bool{}
		for _, fc := range rep.Focused {
			fc.File = ""
			strict[fc] = true
		}
		for _, fc := range lib.Focused {
			fc.File = ""
			if !strict[fc] && len(rep.Focused) < 1000 {
				t.Fatalf("%+v focused in lib/f.js but not in f.test.js", fc)
			}
		}
		if rep.Files != 1 || lib.Files != 1 {
			t.Fatalf("file not scanned: %+v", rep)
		}
	})
}

// byteOfColumn returns the byte offset of a 1-based character column.
func byteOfColumn(line []byte, col int) (int, bool) {
	n := 0
	for i := range line {
		if utf8.RuneStart(line[i]) {
			n++
			if n == col {
				return i, true
			}
		}
	}
	return 0, false
}

// FuzzCompare: ids and renames from arbitrary bytes (lines "b id status",
// "c id status", "r from to"); Compare never panics, a moved test passed at
// the base under its old id and is at the candidate under its new one, no
// candidate occurrence serves two base occurrences, and every exception
// names an id that passed at the base.
func FuzzCompare(f *testing.F) {
	f.Add([]byte("b tests/a.py::t p\nc pkg/tests/a.py::t p\nr tests/a.py pkg/tests/a.py\n"))
	f.Add([]byte("b a.py::f[1] p\nb a.py::f[2] p\nc a.py::f[1] p\nc a.py::f[3] s\n"))
	f.Add([]byte("b x p\nb x p\nc x p\nb m.mod::T p\nr m/a_test.go n/a_test.go\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		base, cand := &report.Inventory{Format: report.JUnit}, &report.Inventory{Format: report.JUnit}
		rn := &record.Renames{}
		passed := map[report.TestID]int{}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			st := map[string]report.Status{"p": report.Passed, "f": report.Failed, "s": report.Skipped}[f[2]]
			switch f[0] {
			case "b":
				if st != "" {
					base.Tests = append(base.Tests, report.Test{ID: report.TestID(f[1]), Status: st})
					if st == report.Passed {
						passed[report.TestID(f[1])]++
					}
				}
			case "c":
				if st != "" {
					cand.Tests = append(cand.Tests, report.Test{ID: report.TestID(f[1]), Status: st})
				}
			case "r":
				rn.Files = append(rn.Files, record.FileRename{From: f[1], To: f[2], Similarity: 100})
				rn.GoPackages = append(rn.GoPackages, record.PackageMove{From: f[1], To: f[2]})
			}
		}
		res := outcome.Compare(base, cand, outcome.Change{Renames: rn, Added: []policy.DeclaredSkip{{TestID: "x", Cause: "c"}}})
		inCand := map[report.TestID]int{}
		for _, c := range cand.Tests {
			if c.Status != report.Skipped {
				inCand[c.ID]++
			}
		}
		used := map[report.TestID]int{}
		for _, m := range res.Moved {
			if passed[m.From] == 0 || inCand[m.To] == 0 {
				t.Fatalf("move %+v: from no passing base test or to no candidate test", m)
			}
			used[m.To]++
		}
		for id, n := range used {
			if n > inCand[id] {
				t.Fatalf("candidate %q serves %d moves but occurs %d times", id, n, inCand[id])
			}
		}
		for _, f := range res.Findings {
			if !slices.IsSorted(f.IDs) {
				t.Fatalf("ids not sorted: %+v", f)
			}
			if f.Rule == outcome.RuleMissing || f.Rule == outcome.RuleSkipped {
				for _, id := range f.IDs {
					if passed[id] == 0 {
						t.Fatalf("%s names %q, which did not pass at the base", f.Rule, id)
					}
				}
			}
		}
	})
}
