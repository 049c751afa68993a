package pathglob_test

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/pathglob"
)

func TestMatch(t *testing.T) {
	run := func(t *testing.T, pattern, name string, want bool) {
		t.Helper()
		p, err := pathglob.Compile(pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", pattern, err)
		}
		if got := p.Match(name); got != want {
			t.Errorf("%q.Match(%q) = %v, want %v", pattern, name, got, want)
		}
		if got := walk(p, name); got != want {
			t.Errorf("%q walked over %q = %v, want %v", pattern, name, got, want)
		}
	}
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"migrations/**", "migrations/001.sql", true},
		{"migrations/**", "migrations/a/b/c.sql", true},
		{"migrations/**", "migrations", false}, // inside the directory only, as in .gitignore
		{"migrations/**", "src/migrations/x", false},
		{"migrations/", "migrations/001.sql", true},
		{"migrations/", "migrationsx/001.sql", false},
		{"migrations/*.sql", "migrations/001.sql", true},
		{"migrations/*.sql", "migrations/a/001.sql", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/main.go", true},
		{"**/*.go", "a/b/main.gox", false},
		{"src/**/test/*.js", "src/test/a.js", true},
		{"src/**/test/*.js", "src/x/y/test/a.js", true},
		{"src/**/test/*.js", "src/x/y/test/z/a.js", false},
		{"*.sql", "db/migrations/001.sql", true},
		{"*.sql", "001.sql", true},
		{"*.sql", "db/001.sqlx", false},
		{"go.mod", "go.mod", true},
		{"go.mod", "sub/go.mod", true},
		{"docs/README.md", "docs/README.md", true},
		{"docs/README.md", "docs/README.md/x", false},
		{"a/?.txt", "a/b.txt", true},
		{"a/[bc].txt", "a/c.txt", true},
		{"a/[bc].txt", "a/d.txt", false},
		{"a/*", "a/b/c", false},
		{"a/**/b", "a/b", true},
		{"a/**/**", "a", false},
		{"a/**/**", "a/b", true},
		{"a/*/**", "a/b", true},
		{"**", "a/b", true},
		{"a/**/b/**", "a/x/b", true}, // a trailing ** after a wildcard matches zero segments
		{"a/**/b/**", "a/x/b/c", true},
	} {
		t.Run(tc.pattern+"|"+tc.name, func(t *testing.T) { run(t, tc.pattern, tc.name, tc.want) })
	}
}

// walk matches name one segment at a time, as Discovery walks the paths a
// symlink makes visible: Start, Step, Final.
func walk(p *pathglob.Pattern, name string) bool {
	states := []pathglob.State{p.Start()}
	for _, seg := range strings.Split(name, "/") {
		var next []pathglob.State
		for _, s := range states {
			next = p.Step(s, seg, next)
		}
		states = next
	}
	for _, s := range states {
		if p.Final(s) {
			return true
		}
	}
	return false
}

func TestCompileRejects(t *testing.T) {
	for _, p := range []string{"", "/abs", `a\b`, "a//b", "../x", "a/./b", "a/**x/b", "a/[b"} {
		if _, err := pathglob.Compile(p); err == nil {
			t.Errorf("Compile(%q) accepted a bad pattern", p)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("migrations/**", "migrations/a.sql")
	f.Add("**/*.go", "a/b/c.go")
	f.Add("*.sql", "x.sql")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		p, err := pathglob.Compile(pattern)
		if err != nil {
			return
		}
		got := p.Match(name)
		// Without ** the grammar is path.Match over the whole path (or
		// over the last segment for slash-free patterns): the fast
		// prefix/suffix rejects must never change an answer.
		if name == "" || strings.Contains(pattern, "**") || strings.HasSuffix(pattern, "/") || strings.Contains(name, "//") || strings.HasSuffix(name, "/") || strings.HasPrefix(name, "/") {
			return
		}
		target := name
		if !strings.Contains(pattern, "/") {
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				target = name[i+1:]
			}
		}
		want, _ := path.Match(pattern, target)
		if got != want {
			t.Fatalf("%q.Match(%q) = %v, path.Match says %v", pattern, name, got, want)
		}
	})
}

// FuzzStep: walking a path one segment at a time (Start, Step, Final) gives
// Match's answer for every repository path (no empty segment: git lists
// none), with and without `**`; a match ends with Suffix and holds every
// one of Literals as a segment.
func FuzzStep(f *testing.F) {
	for _, s := range [][2]string{{"migrations/**", "migrations"}, {"migrations/**", "migrations/a.sql"}, {"**/*.go", "a/b/c.go"},
		{"*.sql", "x/y.sql"}, {"a/**/**", "a"}, {"src/**/test/*.js", "src/x/test/a.js"}, {"**", "a"}, {"a/*/**", "a/b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		p, err := pathglob.Compile(pattern)
		if err != nil || name == "" || slices.Contains(strings.Split(name, "/"), "") {
			return
		}
		got, want := walk(p, name), p.Match(name)
		if got != want {
			t.Fatalf("%q walked over %q = %v, Match says %v", pattern, name, got, want)
		}
		// What Discovery skips a walk on: a match ends with the suffix
		// and has every literal as a segment.
		if want && !strings.HasSuffix(name, p.Suffix()) {
			t.Fatalf("%q matches %q, which does not end with its suffix %q", pattern, name, p.Suffix())
		}
		for _, l := range p.Literals() {
			if want && !slices.Contains(strings.Split(name, "/"), l) {
				t.Fatalf("%q matches %q, which lacks its literal segment %q", pattern, name, l)
			}
		}
	})
}
