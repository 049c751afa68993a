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

		{"src/foo.ts", false},
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
		rep, err := outcome.ScanFocus(strings.NewReader(c.src), "x.test.js", outcome.FocusOptions{})
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
		for _, f := range rep.Focused {
			if f.File != "x.test.js" {
				t.Errorf("file = %q", f.File)
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
		{name: "optional chaining after a call", src: "f()?.only('a');", focused: []string{"1:4 ?.only"}},
		{name: "chained over lines", src: "describe\n  .only('a', () => {});", focused: []string{"1:1 describe.only"}},
		{name: "comment between tokens", src: "it /* focus */ . only ('a');", focused: []string{"1:1 it.only"}},
		{name: "call result receiver", src: "foo().only('a');", focused: []string{"1:6 .only"}},
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
		{name: "only property read", src: "const o = it.only;"},
		{name: "only false", src: "test('a', { only: false }, fn); x = { only: trueish };"},
		{name: "ternary is not an option", src: "x = c ? only : true;"},

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

func TestScanFocusLimits(t *testing.T) {
	t.Run("binary", func(t *testing.T) {
		rep, err := outcome.ScanFocus(strings.NewReader("it.only('a');\x00\x01"), "b.test.js", outcome.FocusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files != 0 || len(rep.Focused) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "binary") {
			t.Fatalf("got %+v; want the file skipped as binary", rep)
		}
	})
	t.Run("longer than the cap", func(t *testing.T) {
		src := "it.only('a');\n" + strings.Repeat("x", 100) + "\nfit('b');"
		rep, err := outcome.ScanFocus(strings.NewReader(src), "big.test.js", outcome.FocusOptions{MaxFileBytes: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Focused) != 1 || rep.Focused[0].Marker != "it.only" || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "only the first 50 bytes") {
			t.Fatalf("got %+v; want the prefix scanned and a note", rep)
		}
	})
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

// TestFindFocus scans a small checkout: only tracked test files are read,
// symbolic links and special files are not followed, and large or binary
// files are skipped with a note.
func TestFindFocus(t *testing.T) {
	root := t.TempDir()
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
	write("src/app.js", "it.only('not a test file');\n")
	write("src/app.test.js", "describe('app', () => {\n  it.only('focused', () => {});\n  // it.only( in a comment\n});\n")
	write("test/helpers.js", "export const focus = () => fdescribe('x', () => {});\n")
	write("test/clean.spec.ts", "test('a', () => {});\n")
	write("test/untracked.test.js", "fit('not tracked');\n")
	write("test/big.test.js", strings.Repeat("// filler\n", 200)+"it.only('beyond the cap');\n")
	write("test/bin.test.js", "it.only('x')\x00")
	outside := filepath.Join(t.TempDir(), "secret.test.js")
	if err := os.WriteFile(outside, []byte("it.only('outside');"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "test", "link.test.js")); err != nil {
		t.Fatal(err)
	}
	tracked := []string{"src/app.js", "src/app.test.js", "test/helpers.js", "test/clean.spec.ts",
		"test/big.test.js", "test/bin.test.js", "test/link.test.js", "src/app.test.js"}
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
