package discovery_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/pathglob"
	"github.com/runmill/verify/pkg/policy"
)

const checkoutRoot = "/runmill/checkout"

// tree is one commit's tree as Discovery is given it: its symlinks ("path
// -> target") and the directories of them, of files and of "dir/" entries.
func tree(commit string, files []string, links ...string) discovery.Links {
	l := discovery.Links{Commit: commit, Targets: map[string]string{}, Dirs: map[string]bool{}}
	addDirs := func(p string) {
		for i := range p {
			if p[i] == '/' {
				l.Dirs[p[:i]] = true
			}
		}
	}
	for _, f := range files {
		addDirs(f)
	}
	for _, s := range links {
		if strings.HasSuffix(s, "/") {
			addDirs(s)
			continue
		}
		p, target, ok := strings.Cut(s, " -> ")
		if !ok {
			panic("link " + s + " is not path -> target")
		}
		l.Targets[p] = target
		addDirs(p)
	}
	return l
}

// viaLinks resolves one check gated on pattern over the changed paths and
// trees and returns how it matched through symlinks (nil: it did not).
func viaLinks(t *testing.T, pattern string, changed []string, trees ...discovery.Links) *discovery.SymlinkMatch {
	t.Helper()
	m, err := discovery.Resolve(discovery.Input{
		Base: "b", Candidate: "c",
		Repository: &discovery.RepositoryPolicy{Doc: policy.Repository{Checks: []policy.CheckSpec{
			{ID: "migration", Run: "./check", Paths: []string{pattern}}}}, ReadFrom: discovery.ReadFromBase},
		ChangedPaths: changed, Links: trees, CheckoutRoot: checkoutRoot,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := m.Check("migration")
	if !ok {
		if len(m.NotTriggered) != 1 {
			t.Fatalf("not triggered %+v", m.NotTriggered)
		}
		return nil
	}
	if len(c.SymlinkMatches) != 1 || len(c.Reasons) != 1 || !c.Required || !c.HasSource(discovery.SourceChangedPath) {
		t.Fatalf("check %+v: want one required changed-path reason through symlinks", c)
	}
	if want := "changed path " + c.SymlinkMatches[0].Changed + " matches " + pattern + " as "; !strings.HasPrefix(c.Reasons[0], want) {
		t.Fatalf("reason %q does not start %q", c.Reasons[0], want)
	}
	return &c.SymlinkMatches[0]
}

// TestPathRulesSeeThroughSymlinks: a path rule matches a changed path at
// every path the tree shows it at (docs/policy.md § Path rules see through symlinks), resolved as
// the sandbox resolves links under /runmill/checkout; a link out of the
// repository, a loop and a chain past MaxLinkHops match nothing.
func TestPathRulesSeeThroughSymlinks(t *testing.T) {
	type hop = discovery.SymlinkHop
	chain := func(n int) []string { // migrations/001.sql -> l1 -> … -> ln -> db/001.sql
		links := []string{"migrations/001.sql -> ../l/1"}
		for i := 1; i < n; i++ {
			links = append(links, fmt.Sprintf("l/%d -> %d", i, i+1))
		}
		return append(links, fmt.Sprintf("l/%d -> ../db/001.sql", n))
	}
	db := []string{"db/001.sql"}
	for _, tc := range []struct {
		name    string
		pattern string
		changed []string
		links   []string
		want    *discovery.SymlinkMatch // Commit is c; nil: no match
	}{
		{"a link to the changed file", "migrations/**", db, []string{"migrations/001.sql -> ../db/001.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql", Symlinks: []hop{{"migrations/001.sql", "../db/001.sql"}}}},
		{"a link to the directory above it", "migrations/**", []string{"db/migrations/001.sql"}, []string{"migrations -> db/migrations"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/migrations/001.sql", Symlinks: []hop{{"migrations", "db/migrations"}}}},
		{"a directory link the pattern matches only below", "migrations/*.sql", db, []string{"migrations -> db"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql", Symlinks: []hop{{"migrations", "db"}}}},
		{"a link into a subdirectory", "migrations/**", []string{"db/x/y.sql"}, []string{"migrations/shared -> ../db"},
			&discovery.SymlinkMatch{Path: "migrations/shared/x/y.sql", Changed: "db/x/y.sql", Symlinks: []hop{{"migrations/shared", "../db"}}}},
		{"a chain of links", "migrations/**", db, []string{"migrations/001.sql -> ../db/current.sql", "db/current.sql -> 001.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql",
				Symlinks: []hop{{"migrations/001.sql", "../db/current.sql"}, {"db/current.sql", "001.sql"}}}},
		{"a changed link in the chain", "migrations/**", []string{"db/current.sql"}, []string{"migrations/001.sql -> ../db/current.sql", "db/current.sql -> 002.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/current.sql",
				Symlinks: []hop{{"migrations/001.sql", "../db/current.sql"}, {"db/current.sql", "002.sql"}}}},
		{"a directory link in the target", "migrations/**", []string{"store/001.sql"}, []string{"migrations/001.sql -> ../data/001.sql", "data -> store"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "store/001.sql",
				Symlinks: []hop{{"migrations/001.sql", "../data/001.sql"}, {"data", "store"}}}},
		{"a link inside a linked directory", "migrations/**", []string{"other/001.sql"}, []string{"migrations -> db", "db/001.sql -> ../other/001.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "other/001.sql",
				Symlinks: []hop{{"migrations", "db"}, {"db/001.sql", "../other/001.sql"}}}},
		{"an absolute target in the checkout", "migrations/**", db, []string{"migrations/001.sql -> /runmill/checkout/db/001.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql", Symlinks: []hop{{"migrations/001.sql", "/runmill/checkout/db/001.sql"}}}},
		{"a relative target that leaves and comes back", "migrations/**", db, []string{"migrations/001.sql -> ../../checkout/db/001.sql"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql", Symlinks: []hop{{"migrations/001.sql", "../../checkout/db/001.sql"}}}},
		{".. after a directory link is the link target's parent", "migrations/**", []string{"a/db/001.sql"}, []string{"migrations/001.sql -> ../x/../db/001.sql", "x -> a/b", "a/b/"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "a/db/001.sql",
				Symlinks: []hop{{"migrations/001.sql", "../x/../db/001.sql"}, {"x", "a/b"}}}},
		{"a slash-free pattern sees the link's name", "*.sql", []string{"db/001.txt"}, []string{"migrations/001.sql -> ../db/001.txt"},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.txt", Symlinks: []hop{{"migrations/001.sql", "../db/001.txt"}}}},
		{"a retargeted directory link the rule is under", "migrations/**", []string{"migrations"}, []string{"migrations -> db2", "db2/"},
			&discovery.SymlinkMatch{Path: "migrations", Changed: "migrations", Symlinks: []hop{{"migrations", "db2"}}}},
		{"a retargeted directory link, the pattern naming a suffix", "migrations/*.sql", []string{"migrations"}, []string{"migrations -> db2", "db2/"},
			&discovery.SymlinkMatch{Path: "migrations", Changed: "migrations", Symlinks: []hop{{"migrations", "db2"}}}},
		{"a retargeted directory link, the pattern naming a segment below it", "migrations/v1/*.sql", []string{"migrations"}, []string{"migrations -> db2", "db2/"},
			&discovery.SymlinkMatch{Path: "migrations", Changed: "migrations", Symlinks: []hop{{"migrations", "db2"}}}},
		{"a link to the root", "migrations/**", []string{"src/a.go"}, []string{"migrations/up -> .."},
			&discovery.SymlinkMatch{Path: "migrations/up/src/a.go", Changed: "src/a.go", Symlinks: []hop{{"migrations/up", ".."}}}},
		{"a self loop under a linked directory ends", "migrations/**", db, []string{"migrations -> db", "db/self -> ."},
			&discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql", Symlinks: []hop{{"migrations", "db"}}}},
		{"a chain of MaxLinkHops links", "migrations/**", db, chain(discovery.MaxLinkHops - 1), &discovery.SymlinkMatch{Path: "migrations/001.sql", Changed: "db/001.sql"}},

		{"a chain past MaxLinkHops", "migrations/**", db, chain(discovery.MaxLinkHops), nil},
		{"a target through a missing directory", "migrations/**", db, []string{"migrations/001.sql -> ../gone/../db/001.sql"}, nil},
		{"a target through a file", "migrations/**", db, []string{"migrations/001.sql -> ../README.md/../db/001.sql"}, nil},
		{"a loop", "migrations/**", db, []string{"migrations/001.sql -> ../a", "a -> b", "b -> a"}, nil},
		{"an absolute target outside the checkout", "migrations/**", db, []string{"migrations/001.sql -> /db/001.sql"}, nil},
		{"a relative target out of the repository", "migrations/**", db, []string{"migrations/001.sql -> ../../db/001.sql"}, nil},
		{"a link outside the pattern", "migrations/**", db, []string{"docs/001.sql -> ../db/001.sql"}, nil},
		{"a link to another file", "migrations/**", db, []string{"migrations/001.sql -> ../db/002.sql"}, nil},
		{"a file link the pattern does not match", "migrations/*.sql", db, []string{"migrations/001.txt -> ../db/001.sql"}, nil},
		{"below a linked directory the pattern does not reach", "migrations/*", []string{"db/sub/x.sql"}, []string{"migrations/d -> ../db"}, nil},
		{"a changed file link the pattern cannot match", "src/**/test/*.js", []string{"src/a.js"}, []string{"src/a.js -> b.js"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := append([]string{"README.md"}, tc.changed...)
			got := viaLinks(t, tc.pattern, tc.changed, tree("c", files, tc.links...))
			if tc.want == nil {
				if got != nil {
					t.Fatalf("matched %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatal("did not match")
			}
			tc.want.Pattern, tc.want.Commit = tc.pattern, "c"
			if tc.want.Symlinks == nil { // the chain: every link, in order
				for _, l := range chain(discovery.MaxLinkHops - 1) {
					p, target, _ := strings.Cut(l, " -> ")
					tc.want.Symlinks = append(tc.want.Symlinks, hop{Path: p, Target: target})
				}
			}
			if !reflect.DeepEqual(*got, *tc.want) {
				t.Fatalf("matched\n%+v\nwant\n%+v", *got, *tc.want)
			}
		})
	}
}

// TestSymlinksOfBothTrees: the links of both ends of the change count, so
// removing or retargeting a link does not escape the rule its old target
// was under — and the end that still has the link says so.
func TestSymlinksOfBothTrees(t *testing.T) {
	// The change retargets migrations from db to db2 and edits db/001.sql:
	// the candidate's migrations shows nothing changed, the base's did.
	base := tree("b", []string{"db/001.sql"}, "migrations -> db")
	cand := tree("c", []string{"db/001.sql", "db2/001.sql"}, "migrations -> db2")
	changed := []string{"db/001.sql", "migrations"}
	if got := viaLinks(t, "migrations/*.sql", []string{"db/001.sql"}, cand); got != nil {
		t.Fatalf("the candidate's tree alone matched %+v", *got)
	}
	got := viaLinks(t, "migrations/**", changed, cand, base)
	if got == nil || got.Changed != "migrations" {
		t.Fatalf("retargeting the link escaped the rule: %+v", got)
	}
	// The change removes the directory link data that migrations/001.sql
	// goes through and edits store/001.sql, its old target: only the
	// base's tree still goes there.
	base = tree("b", []string{"store/001.sql"}, "migrations/001.sql -> ../data/001.sql", "data -> store")
	cand = tree("c", []string{"store/001.sql"}, "migrations/001.sql -> ../data/001.sql")
	changed = []string{"data", "store/001.sql"}
	if got := viaLinks(t, "migrations/**", changed, cand); got != nil {
		t.Fatalf("the candidate's tree alone matched %+v", *got)
	}
	got = viaLinks(t, "migrations/**", changed, cand, base)
	want := discovery.SymlinkMatch{Pattern: "migrations/**", Path: "migrations/001.sql", Changed: "data", Commit: "b",
		Symlinks: []discovery.SymlinkHop{{Path: "migrations/001.sql", Target: "../data/001.sql"}, {Path: "data", Target: "store"}}}
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("removing the link escaped the rule: %+v, want %+v", got, want)
	}
}

// TestPlainMatchComesFirst: a rule that matches a changed path as it is
// records that, not a way through a link; operator path rules see through
// links as checks' paths do.
func TestPlainMatchComesFirst(t *testing.T) {
	links := []discovery.Links{tree("c", []string{"db/001.sql", "migrations/002.sql"}, "migrations/001.sql -> ../db/001.sql")}
	in := discovery.Input{
		Base: "b", Candidate: "c", CheckoutRoot: checkoutRoot, Links: links,
		Repository: &discovery.RepositoryPolicy{Doc: policy.Repository{Checks: []policy.CheckSpec{
			{ID: "migration", Run: "./check", Paths: []string{"migrations/**"}}}}, ReadFrom: discovery.ReadFromBase},
		Operator: &discovery.OperatorPolicy{Doc: policy.Operator{Verification: policy.Verification{
			PathRules: []policy.PathRule{{Paths: []string{"migrations/*.sql"}, Checks: []string{"schema"}}}}}},
		ChangedPaths: []string{"db/001.sql", "migrations/002.sql"},
	}
	m, err := discovery.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Check("migration"); len(c.SymlinkMatches) != 0 || c.Reasons[0] != "changed path migrations/002.sql matches migrations/**" {
		t.Fatalf("plain match not preferred: %+v", c)
	}
	in.ChangedPaths = []string{"db/001.sql"}
	if m, err = discovery.Resolve(in); err != nil {
		t.Fatal(err)
	}
	c, ok := m.Check("schema")
	if !ok || !c.Required || len(c.SymlinkMatches) != 1 ||
		c.Reasons[0] != "operator path rule 0: changed path db/001.sql matches migrations/*.sql as migrations/001.sql through symlink migrations/001.sql → ../db/001.sql (at c)" {
		t.Fatalf("operator path rule through a link: %+v", c)
	}
}

// FuzzSymlinkMatch: whatever the targets, resolving ends, and a match
// through symlinks is honest — its path is one the pattern matches (or a
// changed link to a directory), its changed path one the change touches,
// each hop a link of its tree.
func FuzzSymlinkMatch(f *testing.F) {
	f.Add("migrations/**", "../db/001.sql", "store", "db/001.sql")
	f.Add("migrations/*.sql", "/runmill/checkout/db", "../x/../..", "db/001.sql")
	f.Add("*.sql", "..", "../../checkout/db/001.sql", "src/a.go")
	f.Add("migrations/*.sql", "x", "../db", "migrations/d")
	f.Fuzz(func(t *testing.T, pattern, target1, target2, changed string) {
		pat, err := pathglob.Compile(pattern)
		if err != nil || changed == "" || slices.Contains(strings.Split(changed, "/"), "") || pat.Match(changed) {
			return // not a repository path, or a plain match
		}
		tr := tree("c", []string{changed, "db/001.sql"}, "migrations/001.sql -> "+target1, "migrations/d -> "+target2, "db/x -> "+target1)
		m := viaLinks(t, pattern, []string{changed}, tr)
		if m == nil {
			return
		}
		// Through a changed link to a directory, the path is the link's:
		// everything below it changed.
		_, dirLink := tr.Targets[changed]
		dirLink = dirLink && len(m.Symlinks) > 0 && m.Symlinks[len(m.Symlinks)-1].Path == changed
		if !(pat.Match(m.Path) || dirLink) || m.Changed != changed {
			t.Fatalf("dishonest match %+v", *m)
		}
		for _, h := range m.Symlinks {
			if tr.Targets[h.Path] != h.Target {
				t.Fatalf("hop %+v is no link of the tree", h)
			}
		}
	})
}

// BenchmarkResolveThroughRootLink: the walk's worst case for a policy —
// 400 suffix-free patterns (`**/fixturesNNN/**`), 10 000 changed paths, and
// a change adding a link to the repository root, through which every
// pattern could walk every changed directory — against the same without
// the link (plain matching alone, which such patterns make slow too).
func BenchmarkResolveThroughRootLink(b *testing.B) {
	var checks []policy.CheckSpec
	for i := 0; i < 400; i++ {
		checks = append(checks, policy.CheckSpec{ID: fmt.Sprintf("c%03d", i), Run: "x", Paths: []string{fmt.Sprintf("**/fixtures%03d/**", i)}})
	}
	var changed []string
	for i := 0; i < 10000; i++ {
		changed = append(changed, fmt.Sprintf("src/d%02d/f%05d.go", i%100, i))
	}
	for _, bc := range []struct {
		name  string
		links []discovery.Links
	}{
		{"no link", nil},
		{"a link to the root", []discovery.Links{tree("c", append(changed, "x/root"), "x/root -> ..")}},
	} {
		in := discovery.Input{Base: "b", Candidate: "c", CheckoutRoot: checkoutRoot, ChangedPaths: append(changed, "x/root"), Links: bc.links,
			Repository: &discovery.RepositoryPolicy{Doc: policy.Repository{Checks: checks}, ReadFrom: discovery.ReadFromBase}}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				m, err := discovery.Resolve(in)
				if err != nil || len(m.NotTriggered) != 400 {
					b.Fatalf("%v, %d not triggered", err, len(m.NotTriggered))
				}
			}
		})
	}
}
