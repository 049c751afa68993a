package actions

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/report"
)

func TestResolve(t *testing.T) {
	files := newFileIndex([]string{
		"cart/cart_test.go", "cart/cart.go", "web/cart.test.js",
		"a/util_test.go", "b/util_test.go", "util_test.go",
		"src/test/java/com/example/FooTest.java",
	})
	for _, tc := range []struct {
		file, hint, want string
	}{
		{"cart/cart_test.go", "", "cart/cart_test.go"},
		{"cart_test.go", "example.com/shop/cart", "cart/cart_test.go"}, // go test prints the basename
		{"/sandbox/checkout/cart/cart_test.go", "", "cart/cart_test.go"},
		{"file:///home/runner/work/shop/web/cart.test.js", "", "web/cart.test.js"},
		{"./web/cart.test.js", "", "web/cart.test.js"},
		{"util_test.go", "example.com/m/b", "b/util_test.go"},
		{"util_test.go", "example.com/m/c", "util_test.go"}, // ambiguous but exact at the root
		{"a/util_test.go", "", "a/util_test.go"},
		{"x/util_test.go", "", ""}, // no tracked x/, and util_test.go alone is ambiguous
		{"FooTest.java", "com/example", "src/test/java/com/example/FooTest.java"},
		{"../../etc/passwd", "", ""},
		{"", "", ""},
		{"missing.go", "", ""},
	} {
		got := files.resolve(tc.file, tc.hint)
		if got != tc.want {
			t.Errorf("resolve(%q, %q) = %q, want %q", tc.file, tc.hint, got, tc.want)
		}
	}
	if got := newFileIndex([]string{"a/x_test.go", "b/x_test.go"}).resolve("x_test.go", ""); got != "" {
		t.Errorf("an ambiguous basename resolved to %q; want it dropped, not guessed", got)
	}
}

func TestLocationHint(t *testing.T) {
	for _, tc := range []struct {
		f    report.Format
		id   report.TestID
		want string
	}{
		{report.GoJSON, "example.com/shop/cart::TestTotal", "example.com/shop/cart"},
		{report.JUnit, "com.example.FooTest::adds", "com/example"},
		{report.JUnit, "adds", ""},
		{report.TAP, "a::b", ""},
	} {
		if got := locationHint(tc.f, tc.id); got != tc.want {
			t.Errorf("locationHint(%s, %q) = %q, want %q", tc.f, tc.id, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain words":          "plain words",
		"a|b":                  `a\|b`,
		"<b>x</b>":             `\<b\>x\<\/b\>`,
		"[x](http://e)":        `\[x\]\(http\:\/\/e\)`,
		"line\nbreak\r\tx":     "line break  x",
		"é ünïcode 界":          "é ünïcode 界",
		"\xff":                 "\uFFFD",
		"a\u2028b":             "a b",
		"*emph* _e_ ~s~ `c` @": "\\*emph\\* \\_e\\_ \\~s\\~ \\`c\\` \\@",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := text(strings.Repeat("x", 1000)); utf8.RuneCountInString(got) != maxCellRunes || !strings.HasSuffix(got, "…") {
		t.Errorf("text did not clip to %d runes: %d", maxCellRunes, utf8.RuneCountInString(got))
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"unit":     "`unit`",
		"a|b":      "`a\\|b`",
		"a`b":      "``a`b``",
		"`x":       "`` `x ``",
		"x``":      "``` x`` ```",
		" x":       "`  x `",
		"l1\nl2":   "`l1 l2`",
		"":         "",
		"<b>&amp;": "`<b>&amp;`",
	} {
		if got := code(in); got != want {
			t.Errorf("code(%q) = %q, want %q", in, got, want)
		}
	}
}

var unescapedPipe = regexp.MustCompile(`(^|[^\\])\|`)

// FuzzMarkdown: whatever a pull request puts in a name, text and code give
// one line, valid UTF-8, no unescaped cell separator, and text leaves no
// ASCII punctuation unescaped.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{"a|b", "<img src=x>", "``x``", "\\|", "x\n::error::y", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, out := range map[string]string{"text": text(s), "code": code(s)} {
			if strings.ContainsAny(out, "\n\r") || !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: a line break or invalid UTF-8", name, s, out)
			}
			if unescapedPipe.MatchString(strings.ReplaceAll(out, `\\`, "")) && !strings.Contains(s, `\`) {
				t.Fatalf("%s(%q) = %q: an unescaped |", name, s, out)
			}
		}
		out := text(s)
		for i := 0; i < len(out); i++ {
			c := out[i]
			if c == '\\' {
				i++
				continue
			}
			if c < utf8.RuneSelf && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[]^_`{|}~", rune(c)) {
				t.Fatalf("text(%q) = %q: %q at %d is not escaped", s, out, c, i)
			}
		}
	})
}

// FuzzResolve: a location resolves to one of the tracked files or to
// nothing, never to a path a report made up.
func FuzzResolve(f *testing.F) {
	tracked := []string{"cart/cart_test.go", "a/x_test.go", "b/x_test.go", "x_test.go"}
	files := newFileIndex(tracked)
	f.Add("cart_test.go", "example.com/m/cart")
	f.Add("/abs/../b/x_test.go", "")
	f.Add("file://x_test.go", "a")
	f.Fuzz(func(t *testing.T, file, hint string) {
		got := files.resolve(file, hint)
		if got == "" {
			return
		}
		if !files.all[got] {
			t.Fatalf("resolve(%q, %q) = %q: not a tracked file", file, hint, got)
		}
	})
}

// TestMentioned: a word of a message locates a finding only when it is
// exactly one tracked file.
func TestMentioned(t *testing.T) {
	files := newFileIndex([]string{"cart/cart_test.go", "cart/cart.go", "migrations/002_note.sql", "README.md"})
	for _, tc := range []struct {
		texts []string
		want  string
	}{
		{[]string{"gofmt", "not gofmt-formatted: cart/cart_test.go"}, "cart/cart_test.go"},
		{[]string{"migrations/002_note.sql"}, "migrations/002_note.sql"},
		{[]string{"vet: cart/cart.go:12:3: unreachable code"}, "cart/cart.go"},
		{[]string{`"./cart/cart.go"`}, "cart/cart.go"},
		{[]string{"cart/cart.go and cart/cart_test.go"}, ""}, // two files: no one location
		{[]string{"cart_test.go:18: boom"}, ""},              // a basename is resolve's business, with a hint
		{[]string{"/etc/passwd", "../cart/cart.go"}, ""},
		{nil, ""},
	} {
		if got := files.mentioned(tc.texts...); got != tc.want {
			t.Errorf("mentioned(%q) = %q, want %q", tc.texts, got, tc.want)
		}
	}
}

// TestWhere: the artifact URL and the action's own docs become links only
// when built from plain parts; else the canonical docs.
func TestWhere(t *testing.T) {
	for _, tc := range []struct {
		env                 map[string]string
		artifactURL, errors string
	}{
		{map[string]string{"RUNMILL_ACTION_REPOSITORY": "octo-org/runmill", "RUNMILL_ACTION_REF": "v1.4.2", "RUNMILL_ARTIFACT_URL": "https://github.com/o/r/actions/runs/1/artifacts/2"},
			"https://github.com/o/r/actions/runs/1/artifacts/2", "https://github.com/octo-org/runmill/blob/v1.4.2/docs/errors.md"},
		{map[string]string{"GITHUB_SERVER_URL": "https://ghe.example.com", "RUNMILL_ACTION_REPOSITORY": "tools/runmill", "RUNMILL_ACTION_REF": "0123abcd"},
			"", "https://ghe.example.com/tools/runmill/blob/0123abcd/docs/errors.md"},
		{map[string]string{}, "", canonicalErrorsDoc}, // outside Actions, or a local action (uses: ./)
		{map[string]string{"RUNMILL_ACTION_REPOSITORY": "octo-org/runmill", "RUNMILL_ACTION_REF": "x)](javascript:alert(1)"}, "", canonicalErrorsDoc},
		{map[string]string{"RUNMILL_ACTION_REPOSITORY": "a/b/c", "RUNMILL_ACTION_REF": "main"}, "", canonicalErrorsDoc},
		{map[string]string{"RUNMILL_ACTION_REPOSITORY": "a/b", "RUNMILL_ACTION_REF": "../../evil"}, "", canonicalErrorsDoc},
		{map[string]string{"RUNMILL_ARTIFACT_URL": "javascript:alert(1)"}, "", canonicalErrorsDoc},
		{map[string]string{"RUNMILL_ARTIFACT_URL": "https://github.com/x) [y](https://evil"}, "", canonicalErrorsDoc},
	} {
		rt := New(nil, nil, func(k string) string { return tc.env[k] })
		if w := rt.Where(); w.ArtifactURL != tc.artifactURL || w.ErrorsDoc != tc.errors {
			t.Errorf("%v: artifact URL %q, errors doc %q; want %q, %q", tc.env, w.ArtifactURL, w.ErrorsDoc, tc.artifactURL, tc.errors)
		}
	}
}
