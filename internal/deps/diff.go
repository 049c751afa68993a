package deps

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
)

// Diff is what a change does to one strategy's dependencies between the
// commits from (the baseline) and to (the candidate), read from their
// committed lockfiles: npm packages by install path, Go modules by path
// (their module-zip lines in go.sum; /go.mod-only lines take part in
// version selection but are not built). A lockfile absent at a commit
// holds nothing there.
func Diff(ctx context.Context, repo *git.Repo, strategy, from, to string) (evidence.DependencyDiff, error) {
	d := evidence.DependencyDiff{From: from, To: to, Changes: []evidence.DependencyChange{}}
	var read func(string) (map[string]string, error)
	switch strategy {
	case NPM:
		read = func(c string) (map[string]string, error) { return npmVersions(ctx, repo, c) }
	case GoModules:
		read = func(c string) (map[string]string, error) { return goVersions(ctx, repo, c) }
	case Cargo:
		read = func(c string) (map[string]string, error) { return cargoVersions(ctx, repo, c) }
	case Pnpm:
		read = func(c string) (map[string]string, error) { return pnpmVersions(ctx, repo, c) }
	case Yarn:
		read = func(c string) (map[string]string, error) { return yarnVersions(ctx, repo, c) }
	default:
		return d, unknown(strategy)
	}
	a, err := read(from)
	if err != nil {
		return d, err
	}
	b, err := read(to)
	if err != nil {
		return d, err
	}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		switch v, ok := b[name]; {
		case !ok:
			d.Changes = append(d.Changes, evidence.DependencyChange{Strategy: strategy, Name: name, Change: "removed", From: a[name]})
		case v != a[name]:
			d.Changes = append(d.Changes, evidence.DependencyChange{Strategy: strategy, Name: name, Change: "changed", From: a[name], To: v})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[name]; !ok {
			d.Changes = append(d.Changes, evidence.DependencyChange{Strategy: strategy, Name: name, Change: "added", To: b[name]})
		}
	}
	return d, nil
}

func npmVersions(ctx context.Context, repo *git.Repo, commit string) (map[string]string, error) {
	e, err := repo.Stat(ctx, commit, packageLock)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return out, nil
	}
	b, err := repo.ReadBlob(ctx, e, maxManifest)
	if err != nil {
		return nil, err
	}
	var l lockfile
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, refuse(NPM, "package-lock.json at %s: %v", objectid.Short(commit), err)
	}
	for k, p := range l.Packages {
		if k != "" {
			out[k] = p.Version
		}
	}
	return out, nil
}

// goVersions is, per module with module-zip lines in go.sum, the version
// go.mod requires (the one the build uses); go.sum keeps the zip lines of
// versions a bump left behind, so listing them all made a bump read
// "v1.0.9 → v1.0.10 v1.0.9" (issue 27). A module go.mod does not name
// (an older go.mod that lists only direct requirements) shows its go.sum
// versions in semantic-version order.
func goVersions(ctx context.Context, repo *git.Repo, commit string) (map[string]string, error) {
	e, err := repo.Stat(ctx, commit, "go.mod")
	if err != nil {
		return nil, err
	} else if e.Kind != git.Blob && e.Kind != git.Executable {
		return map[string]string{}, nil
	}
	required := map[string]string{}
	if b, err := repo.ReadBlob(ctx, e, maxManifest); err != nil {
		return nil, err
	} else if f, err := modfile.ParseLax("go.mod", b, nil); err == nil {
		for _, r := range f.Require {
			required[r.Mod.Path] = r.Mod.Version
		}
	}
	lines, err := readGoSum(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	vs := map[string][]string{}
	for _, l := range lines {
		if !l.GoMod {
			vs[l.Module] = append(vs[l.Module], l.Version)
		}
	}
	out := map[string]string{}
	for m, v := range vs {
		if r, ok := required[m]; ok && slices.Contains(v, r) {
			out[m] = r
			continue
		}
		slices.SortFunc(v, semver.Compare)
		out[m] = strings.Join(slices.Compact(v), ", ")
	}
	return out, nil
}

// DiffTable is the dependency diff as a short Markdown table for the job
// summary (at most max rows, then a count of the rest); "" when nothing
// changed. Names and versions come from the repository, so they are
// escaped (pkg/printable) and stripped of table syntax.
func DiffTable(diffs []evidence.DependencyDiff, max int) string {
	var rows []string
	total := 0
	for _, d := range diffs {
		for _, c := range d.Changes {
			total++
			if len(rows) < max {
				rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |", cell(c.Strategy), cell(c.Name), c.Change, cell(c.From), cell(c.To)))
			}
		}
	}
	if total == 0 {
		return ""
	}
	out := "| strategy | dependency | change | base | candidate |\n|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	if total > len(rows) {
		out += fmt.Sprintf("\n… and %d more (the evidence lists every one)\n", total-len(rows))
	}
	return out
}

// DiffLines is the dependency diff for the console, one change a line.
func DiffLines(diffs []evidence.DependencyDiff, max int) []string {
	var out []string
	total := 0
	for _, d := range diffs {
		for _, c := range d.Changes {
			total++
			if len(out) >= max {
				continue
			}
			v := printable.Text(c.To, 80)
			switch c.Change {
			case "removed":
				v = printable.Text(c.From, 80)
			case "changed":
				v = printable.Text(c.From, 80) + " → " + printable.Text(c.To, 80)
			}
			out = append(out, fmt.Sprintf("%s %s %s %s", c.Strategy, c.Change, printable.Text(c.Name, 200), v))
		}
	}
	if total > len(out) {
		out = append(out, fmt.Sprintf("… and %d more", total-len(out)))
	}
	return out
}

func cell(s string) string {
	s = printable.Text(s, 200)
	return strings.NewReplacer("|", `\|`, "`", "'", "<", "&lt;", ">", "&gt;").Replace(s)
}
