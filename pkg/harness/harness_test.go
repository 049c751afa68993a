package harness_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/harness"
)

func TestScript(t *testing.T) {
	run := func(t *testing.T, command, want string) {
		t.Helper()
		got, ok := harness.Script(command)
		if ok != (want != "") || got != want {
			t.Fatalf("Script(%q) = %q, %v; want %q", command, got, ok, want)
		}
	}
	for _, c := range []struct{ command, want string }{
		{"sh scripts/test.sh", "scripts/test.sh"},
		{"bash scripts/test.sh --fast > reports/unit.xml", "scripts/test.sh"},
		{"./scripts/test.sh", "scripts/test.sh"},
		{"  sh ./tests/run.sh arg", "tests/run.sh"},
		{"sh tests/../scripts/t.sh", "scripts/t.sh"},
		// Nothing guessed: options, quoting, variables, other programs,
		// paths outside the checkout.
		{"sh -e scripts/test.sh", ""},
		{`sh "scripts/test.sh"`, ""},
		{"sh $SCRIPT", ""},
		{"sh scripts/*.sh", ""},
		{"npm test", ""},
		{"cd sub && sh test.sh", ""},
		{"sh /usr/local/bin/test.sh", ""},
		{"sh ../outside.sh", ""},
		{"./", ""},
		{"sh", ""},
		{"./x;rm -rf /", ""},
		{"", ""},
		{"zsh scripts/test.sh", ""},
		{"shx scripts/test.sh", ""},
	} {
		t.Run(c.command, func(t *testing.T) { run(t, c.command, c.want) })
	}
}

func entry(blob string) harness.Entry {
	return harness.Entry{Mode: "100644", Blob: strings.Repeat(blob, 40)}
}

func TestResolve(t *testing.T) {
	base := harness.Tree{"scripts/test.sh": entry("a"), "jest.config.js": entry("b"), "src/x.js": entry("c")}
	type want struct {
		ran            map[string]harness.Source
		changed, added []string
	}
	run := func(t *testing.T, command string, patterns []string, commit harness.Tree, pinned bool, w want) {
		t.Helper()
		rec, err := harness.Resolve(command, patterns, base, commit, pinned, strings.Repeat("f", 40))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]harness.Source{}
		for _, f := range rec.Files {
			got[f.Path] = f.Ran
		}
		if len(got) != len(w.ran) {
			t.Fatalf("files %v, want %v", got, w.ran)
		}
		for p, s := range w.ran {
			if got[p] != s {
				t.Errorf("%s ran %q, want %q", p, got[p], s)
			}
		}
		if strings.Join(rec.ChangedPaths(), ",") != strings.Join(w.changed, ",") {
			t.Errorf("changed %v, want %v", rec.ChangedPaths(), w.changed)
		}
		if pinned && strings.Join(rec.NewPaths(), ",") != strings.Join(w.added, ",") {
			t.Errorf("new %v, want %v", rec.NewPaths(), w.added)
		}
		if len(rec.Overlay()) != len(w.changed) {
			t.Errorf("overlay %v, want the changed files %v", rec.Overlay(), w.changed)
		}
		if !pinned && (rec.Reason == "" || len(rec.Overlay()) != 0) {
			t.Errorf("unpinned: reason %q, overlay %v", rec.Reason, rec.Overlay())
		}
	}
	edited := harness.Tree{"scripts/test.sh": entry("d"), "jest.config.js": entry("b"), "src/x.js": entry("e")}
	removed := harness.Tree{"jest.config.js": entry("b")}
	chmod := harness.Tree{"scripts/test.sh": {Mode: "100755", Blob: strings.Repeat("a", 40)}}
	added := harness.Tree{"scripts/test.sh": entry("a"), "jest.config.js": entry("b"), "vitest.config.ts": entry("9"), "scripts/new.sh": entry("8")}
	t.Run("an edited script runs in the base's version", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, edited, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("an unchanged config is recorded, not laid", func(t *testing.T) {
		run(t, "npm test", []string{"jest.config.*"}, edited, true, want{ran: map[string]harness.Source{"jest.config.js": harness.FromBase}})
	})
	t.Run("a removed script comes back", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, removed, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("a mode change is a change", func(t *testing.T) {
		run(t, "./scripts/test.sh", nil, chmod, true, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromBase}, changed: []string{"scripts/test.sh"}})
	})
	t.Run("files new in the change are the candidate's", func(t *testing.T) {
		run(t, "sh scripts/new.sh", []string{"*.config.*"}, added, true, want{ran: map[string]harness.Source{
			"scripts/new.sh": harness.FromCommit, "jest.config.js": harness.FromBase, "vitest.config.ts": harness.FromCommit},
			added: []string{"scripts/new.sh", "vitest.config.ts"}})
	})
	t.Run("a named file at neither commit is not recorded", func(t *testing.T) {
		run(t, "sh scripts/none.sh", []string{"pytest.ini"}, edited, true, want{ran: map[string]harness.Source{}})
	})
	t.Run("a policy new in the change pins nothing", func(t *testing.T) {
		run(t, "sh scripts/test.sh", nil, edited, false, want{ran: map[string]harness.Source{"scripts/test.sh": harness.FromCommit}})
	})
	t.Run("a bad pattern is an error", func(t *testing.T) {
		if _, err := harness.Resolve("true", []string{"["}, base, edited, true, ""); err == nil {
			t.Fatal("no error")
		}
	})
}

func FuzzScript(f *testing.F) {
	for _, s := range []string{"sh scripts/test.sh", "./x", "bash a/../../b", "sh $x", "./a b", "sh\t./a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		p, ok := harness.Script(command)
		if !ok {
			return
		}
		// A named script is a clean relative path that the command names
		// literally.
		if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") || p == ".." || strings.ContainsAny(p, "\"'$` \t\n*?") {
			t.Fatalf("Script(%q) = %q", command, p)
		}
	})
}
