// Package harness decides which repository files a check's run takes from
// the base instead of the candidate (issue 19): the repository policy is
// read from the base so that a change cannot relax the checks that govern
// its own merge (spec § 1), and the scripts and runner configs a check's
// command runs are as much a part of that contract as the command string.
//
// A check's harness is
//   - what Discover resolves from its command and the base (issue 25): the
//     files it runs or reads as programs and scripts, and per runner the
//     files that decide how it collects, runs or reports tests;
//   - every file its policy lists under `harness:` (paths or pkg/pathglob
//     globs).
//
// Each is matched in both trees. A harness file runs in the base's
// version: one the change edited is laid over the checkout from the base,
// one the change removed is restored, and one new in the change is kept out
// of it — the base-harness run sees its absence (a new conftest.py or
// GNUmakefile is a harness change, not a file that runs in the candidate's
// version). A change that updates its harness takes effect from the next
// change on, as with the policy. The package is pure: callers hand it the
// two trees' entries (git ls-tree) and a reader of the base's blobs, so the
// engine and `evidence expect` compute the same record from the same
// commits.
package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/pathglob"
	"github.com/runmill/verify/pkg/rmerr"
)

// Entry is one file of a commit's tree, as git ls-tree names it.
type Entry struct {
	// Mode is git's mode: "100644", "100755" or "120000" (symlink).
	Mode string `json:"mode"`
	// Blob is the object id of the file's content.
	Blob string `json:"blob"`
}

// Tree maps repository paths to their entries (files and symlinks only).
type Tree map[string]Entry

// Source says whose version of a harness file a run saw.
type Source string

const (
	// FromBase: the base's version, laid over the checkout; for a file the
	// base does not have (new in the change), its absence: the file is
	// kept out of the checkout.
	FromBase Source = "base"
	// FromCommit: the checked-out commit's own version — nothing is pinned
	// (the repository policy is new in the change).
	FromCommit Source = "commit"
)

// File is one harness file of one check run.
type File struct {
	Path string `json:"path"`
	// Ran is whose version the run saw.
	Ran Source `json:"ran"`
	// Base is the file at the base commit; nil when it does not exist there.
	Base *Entry `json:"base,omitempty"`
	// Commit is the file at the run's commit; nil when it does not exist
	// there (the run then sees the base's version all the same).
	Commit *Entry `json:"commit,omitempty"`
}

// Changed reports whether the change edited, removed or added the file: the
// run saw the base's version (or its absence), not the commit's.
func (f File) Changed() bool {
	return f.Ran == FromBase && !sameEntry(f.Base, f.Commit)
}

// Record is the harness of one check run, as the evidence records it.
type Record struct {
	// Pinned is false when nothing was taken from the base; Reason says why.
	Pinned bool   `json:"pinned"`
	Reason string `json:"reason,omitempty"`
	// Base is the commit the harness was read from (the policy's base).
	Base string `json:"base,omitempty"`
	// Files are the harness files, sorted by path.
	Files []File `json:"files"`
	// Unpinned are the parts of the command whose harness runmill cannot
	// name (Discover), for a pinned check whose policy lists no harness:
	// entries; "harness not pinned: …; list it under harness:".
	Unpinned []Unpinned `json:"unpinned,omitempty"`
	// CommitTree is pkg/treehash's digest of the run's commit alone; the
	// run's tree_before is the tree as run (commit + base harness). They
	// are equal when no harness file differs.
	CommitTree string `json:"commit_tree"`
}

// ReasonPolicyNew is the Reason when the repository policy is new in the
// change (read_from: working-tree): there is no prior contract to pin.
const ReasonPolicyNew = "the repository policy is new in the change (read_from: working-tree): no prior contract, nothing pinned"

// Overlay is what the run lays over its checkout: the base's version of
// every changed harness file, and the removal of every one new in the
// change, sorted by path.
func (r *Record) Overlay() []Pin {
	var out []Pin
	for _, f := range r.Files {
		if !f.Changed() {
			continue
		}
		if f.Base == nil {
			out = append(out, Pin{Path: f.Path, Remove: true})
		} else {
			out = append(out, Pin{Path: f.Path, Entry: *f.Base})
		}
	}
	return out
}

// Changed reports whether the run with the base's harness differs from the
// commit as it stands: some harness file of the change is laid over (or, for
// a file new in the change, kept out of) its checkout.
func (r *Record) Changed() bool { return len(r.Overlay()) > 0 }

// ChangedPaths lists the harness files the change edited or removed,
// whose base version ran.
func (r *Record) ChangedPaths() []string {
	var out []string
	for _, f := range r.Files {
		if f.Changed() && f.Base != nil {
			out = append(out, f.Path)
		}
	}
	return out
}

// NewPaths lists the harness files new in the change: kept out of a pinned
// run, the candidate's version in an unpinned one.
func (r *Record) NewPaths() []string {
	var out []string
	for _, f := range r.Files {
		if f.Base == nil && f.Commit != nil {
			out = append(out, f.Path)
		}
	}
	return out
}

// Pin is one file laid over a checkout: the entry written at Path, or, with
// Remove, Path kept out of it.
type Pin struct {
	Path string
	Entry
	Remove bool
}

// MaxFiles bounds the files one run's harness may name, base and commit
// together (issue 23): a harness is the scripts and runner configs a check
// runs, a handful in every repository we know, while its globs are matched
// against trees the change controls — a change adding 200 000 files that
// match `conftest.py` would otherwise make every run record (and the
// evidence) list each, and the base's version of every one be laid over
// each checkout. Each file costs about 200 bytes in each run's record of
// the signed statement, so the cap keeps a harness under 2 MB of it; 10 000
// is a hundred times the largest harness we know of, so no honest change
// meets it.
const MaxFiles = 10_000

// cancelEvery is how many tree entries Resolve matches between looks at
// its context: a few milliseconds of globbing.
const cancelEvery = 4096

// Resolve computes the harness of one run of a check whose command
// discovered d (Discover, over the base) and whose policy lists patterns
// under harness:, given the base's tree and the run's commit's tree: every
// discovered path and glob and every pattern matched in both trees.
// pinned=false (the policy is new in the change) records the files but takes
// every one from the commit. d's unresolved parts are recorded for a pinned
// check whose policy lists no harness: entries (a policy that lists them
// has named what discovery cannot). A harness
// of more than MaxFiles files is refused (RM-LIMIT-001) before anything is
// sorted or compared. The pass over the trees (as many entries as the
// checkout limits admit: 500 000 by default) ends with ctx, so a cancelled
// run never waits for it.
func Resolve(ctx context.Context, d Discovery, patterns []string, base, commit Tree, pinned bool, baseCommit string) (*Record, error) {
	all := slices.Concat(patterns, d.Globs)
	globs := make([]*pathglob.Pattern, len(all))
	for i, p := range all {
		g, err := pathglob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("harness pattern %q: %w", p, err)
		}
		globs[i] = g
	}
	exact := make(map[string]bool, len(d.Paths))
	for _, p := range d.Paths {
		exact[p] = true
	}
	named := func(name string) bool {
		if exact[name] {
			return true
		}
		for i, g := range globs {
			if name == all[i] || g.Match(name) {
				return true
			}
		}
		return false
	}
	// One pass over each tree, no set: a name in both trees matches in
	// both or in neither, so the union is the base's matches and the
	// commit's matches the base does not have. Past the cap, only count.
	var paths []string
	n := 0
	add := func(p string) {
		if n++; n <= MaxFiles {
			paths = append(paths, p)
		}
	}
	seen := 0
	cancelled := func() bool {
		seen++
		return seen%cancelEvery == 0 && ctx.Err() != nil
	}
	for name := range base {
		if cancelled() {
			return nil, ctx.Err()
		}
		if named(name) {
			add(name)
		}
	}
	for name := range commit {
		if cancelled() {
			return nil, ctx.Err()
		}
		if _, ok := base[name]; !ok && named(name) {
			add(name)
		}
	}
	if n > MaxFiles {
		return nil, rmerr.New(rmerr.LimitHarnessFiles, "the harness (harness: %q, discovered %q) names %d files at the base and the commit together, more than the %d a run may take (pkg/harness.MaxFiles)", patterns, d.Globs, n, MaxFiles).
			WithHint("a harness is the scripts and runner configs a check runs: narrow the check's harness: globs in the base's .runmill/checks.yaml, and do not add thousands of files matching them in one change")
	}
	rec := &Record{Pinned: pinned, Base: baseCommit, Files: make([]File, 0, n)}
	if !pinned {
		rec.Reason = ReasonPolicyNew
	} else if len(patterns) == 0 && len(d.Unpinned) > 0 {
		rec.Unpinned = slices.Clone(d.Unpinned)
	}
	for _, p := range paths {
		f := File{Path: p}
		if e, ok := base[p]; ok {
			f.Base = &e
		}
		if e, ok := commit[p]; ok {
			f.Commit = &e
		}
		f.Ran = FromCommit
		if pinned {
			f.Ran = FromBase
		}
		rec.Files = append(rec.Files, f)
	}
	slices.SortFunc(rec.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	if err := layable(rec.Files); err != nil {
		return nil, err
	}
	return rec, nil
}

// layable refuses a harness in which a file laid from the base is also a
// directory of another file laid from the base: both cannot be laid down.
// A file kept out (new in the change) conflicts with none: under a laid
// file it is gone with the commit's directory, and a laid file under it
// replaces it.
// Sorted by path components, every path under a file F follows F directly,
// so comparing each laid file with the next one finds every such pair
// (O(n log n); comparing every pair took 56 s at 40 000 files).
func layable(files []File) error {
	var laid []string
	for _, f := range files {
		if f.Ran == FromBase && f.Base != nil {
			laid = append(laid, f.Path)
		}
	}
	slices.SortFunc(laid, componentCompare)
	for i := 1; i < len(laid); i++ {
		if strings.HasPrefix(laid[i], laid[i-1]+"/") {
			return fmt.Errorf("harness files %s and %s: one is a file the other lies under", laid[i-1], laid[i])
		}
	}
	return nil
}

// componentCompare orders paths component by component: as bytes, with
// '/' before every other byte, so "a" < "a/b" < "a-b".
func componentCompare(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x == y:
			continue
		case x == '/':
			return -1
		case y == '/':
			return 1
		}
		return cmp.Compare(x, y)
	}
	return cmp.Compare(len(a), len(b))
}

// Equal reports whether two records name the same files with the same
// sources and entries (CommitTree aside).
func Equal(a, b *Record) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Pinned != b.Pinned || a.Reason != b.Reason || a.Base != b.Base || len(a.Files) != len(b.Files) || !slices.Equal(a.Unpinned, b.Unpinned) {
		return false
	}
	for i := range a.Files {
		x, y := a.Files[i], b.Files[i]
		if x.Path != y.Path || x.Ran != y.Ran || !sameEntry(x.Base, y.Base) || !sameEntry(x.Commit, y.Commit) {
			return false
		}
	}
	return true
}

func sameEntry(a, b *Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
