package deps_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
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
