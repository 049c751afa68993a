package engine

import (
	"context"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// renamesResult is changeRenames' answer, computed while the run goes on.
type renamesResult struct {
	renames *record.Renames
	err     error
}

// maxGoMod bounds a go.mod read to find a package's import path.
const maxGoMod = 1 << 20

// changeRenames records git's renames from baseline to candidate
// (record.Renames) and the Go packages whose directory they moved: a
// package's import path at each commit is the module path of the go.mod
// nearest above its directory there, followed by the directory below it.
func changeRenames(ctx context.Context, repo *git.Repo, baseline, candidate string) (*record.Renames, error) {
	out := &record.Renames{From: baseline, To: candidate, Files: []record.FileRename{}, GoPackages: []record.PackageMove{}}
	if baseline == candidate {
		return out, nil
	}
	files, truncated, err := repo.Renames(ctx, baseline, candidate, budget.Renames, budget.RenameBytes)
	if err != nil {
		return nil, err
	}
	out.Truncated = truncated
	type dirs struct{ from, to string }
	var moved []dirs
	for _, f := range files {
		out.Files = append(out.Files, record.FileRename{From: f.From, To: f.To, Similarity: f.Similarity})
		d := dirs{path.Dir(f.From), path.Dir(f.To)}
		if strings.HasSuffix(f.From, ".go") && strings.HasSuffix(f.To, ".go") && d.from != d.to && !slices.Contains(moved, d) {
			moved = append(moved, d)
		}
	}
	if len(moved) > 0 {
		var fromDirs, toDirs []string
		for _, d := range moved {
			fromDirs, toDirs = append(fromDirs, d.from), append(toDirs, d.to)
		}
		fromPaths, err := importPaths(ctx, repo, baseline, fromDirs)
		if err != nil {
			return nil, err
		}
		toPaths, err := importPaths(ctx, repo, candidate, toDirs)
		if err != nil {
			return nil, err
		}
		for _, d := range moved {
			p := record.PackageMove{From: fromPaths[d.from], To: toPaths[d.to]}
			if p.From != "" && p.To != "" && p.From != p.To && !slices.Contains(out.GoPackages, p) {
				out.GoPackages = append(out.GoPackages, p)
			}
		}
	}
	evidence.SortRenames(out)
	return out, nil
}

// importPaths maps each directory (relative to the repository, "." for its
// root) to its Go import path at commit, "" where no go.mod lies above it:
// every go.mod that could be the nearest is read with one git process.
func importPaths(ctx context.Context, repo *git.Repo, commit string, dirs []string) (map[string]string, error) {
	var mods []string
	for _, d := range dirs {
		for a := d; ; a = path.Dir(a) {
			if m := path.Join(a, "go.mod"); !slices.Contains(mods, m) {
				mods = append(mods, m)
			}
			if a == "." || a == "/" {
				break
			}
		}
	}
	found, err := repo.ReadFilesAt(ctx, commit, mods, maxGoMod)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range dirs {
		for a := d; ; a = path.Dir(a) {
			if b, ok := found[path.Join(a, "go.mod")]; ok {
				switch mod := modfile.ModulePath(b); {
				case mod == "":
				case a == d:
					out[d] = mod
				case a == ".":
					out[d] = mod + "/" + d
				default:
					out[d] = mod + "/" + strings.TrimPrefix(d, a+"/")
				}
				break // the nearest go.mod decides, read or not
			}
			if a == "." || a == "/" {
				break
			}
		}
	}
	return out, nil
}
