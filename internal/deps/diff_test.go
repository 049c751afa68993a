package deps_test

import (
	"context"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
)

// The summary table and console lines show repository text (package names
// and versions from a lockfile): escaped, table syntax neutralised, and
// bounded.
func TestDiffTable(t *testing.T) {
	d := []evidence.DependencyDiff{{Changes: []evidence.DependencyChange{
		{Strategy: "npm", Name: "node_modules/semver", Change: "changed", From: "7.5.3", To: "7.5.4"},
		{Strategy: "npm", Name: "node_modules/evil|x\x1b[31m<img>", Change: "added", To: "1.0.0"},
		{Strategy: "go-modules", Name: "github.com/google/go-cmp", Change: "removed", From: "v0.6.0"},
	}}}
	for _, tc := range []struct {
		name string
		max  int
		want []string
		not  []string
	}{
		{"all rows", 10, []string{
			"| npm | node_modules/semver | changed | 7.5.3 | 7.5.4 |",
			"| go-modules | github.com/google/go-cmp | removed | v0.6.0 |  |",
			`evil\|x`, "&lt;img&gt;"}, []string{"\x1b", "<img>", "more"}},
		{"bounded", 1, []string{"node_modules/semver", "… and 2 more"}, []string{"go-cmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deps.DiffTable(d, tc.max)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("table lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("table holds %q:\n%s", n, got)
				}
			}
		})
	}
	if got := deps.DiffTable([]evidence.DependencyDiff{{}}, 10); got != "" {
		t.Errorf("no change gives %q", got)
	}
	lines := deps.DiffLines(d, 10)
	if len(lines) != 3 || lines[0] != "npm changed node_modules/semver 7.5.3 → 7.5.4" || strings.Contains(strings.Join(lines, ""), "\x1b") {
		t.Errorf("console lines %q", lines)
	}
}

// A Go module bump as `go get` leaves it: go.mod requires the new version,
// go.sum keeps the old version's lines beside the new one's. The diff says
// the version the build uses changed, not a list of every go.sum line
// (issue 27: "v1.0.9 → v1.0.10 v1.0.9"); a module go.mod does not name
// lists its versions in semantic-version order.
func TestDiffGoBump(t *testing.T) {
	depstest.Need(t, "git")
	r := gittest.New(t)
	const h = " h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
	sum := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l + h)
		}
		return b.String()
	}
	r.Write("go.mod", "module example.com/app\n\ngo 1.22\n\nrequire github.com/acme/lib v1.0.9\n")
	r.Write("go.sum", sum("github.com/acme/lib v1.0.9", "github.com/acme/lib v1.0.9/go.mod", "github.com/acme/tool v1.0.9"))
	base := r.Commit("base")
	r.Write("go.mod", "module example.com/app\n\ngo 1.22\n\nrequire github.com/acme/lib v1.0.10\n")
	r.Write("go.sum", sum("github.com/acme/lib v1.0.10", "github.com/acme/lib v1.0.10/go.mod", "github.com/acme/lib v1.0.9", "github.com/acme/lib v1.0.9/go.mod",
		"github.com/acme/tool v1.0.10", "github.com/acme/tool v1.0.9"))
	cand := r.Commit("go get github.com/acme/lib@v1.0.10")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := deps.Diff(context.Background(), repo, deps.GoModules, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	got := deps.DiffLines([]evidence.DependencyDiff{d}, 10)
	want := []string{
		"go-modules changed github.com/acme/lib v1.0.9 → v1.0.10",
		"go-modules changed github.com/acme/tool v1.0.9 → v1.0.9, v1.0.10",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
