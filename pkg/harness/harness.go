// Package harness decides which repository files a check's run takes from
// the base instead of the candidate (issue 19): the repository policy is
// read from the base so that a change cannot relax the checks that govern
// its own merge (spec § 1), and the scripts and runner configs a check's
// command runs are as much a part of that contract as the command string.
//
// A check's harness is
//   - the repository file its command directly executes, read from the
//     command string and nothing guessed: `sh FILE`, `bash FILE` or
//     `./FILE` as its first words (Script);
//   - every file its policy lists under `harness:` (paths or pkg/pathglob
//     globs).
//
// Each harness file that exists at the base runs in the base's version (a
// change that updates its harness takes effect from the next change on, as
// with the policy); one that does not exist at the base is new in the change
// and runs in the candidate's version. The package is pure: callers hand it
// the two trees' entries (git ls-tree), so the engine and `evidence expect`
// compute the same record from the same commits.
package harness

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/pathglob"
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
	// FromBase: the base's version, laid over the checkout.
	FromBase Source = "base"
	// FromCommit: the checked-out commit's own version — the file does not
	// exist at the base (new in the change), or nothing is pinned.
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

// Changed reports whether the change edited (or removed) the file: the run
// saw the base's version, not the commit's.
func (f File) Changed() bool {
	return f.Ran == FromBase && (f.Commit == nil || *f.Commit != *f.Base)
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
	// CommitTree is pkg/treehash's digest of the run's commit alone; the
	// run's tree_before is the tree as run (commit + base harness). They
	// are equal when no harness file differs.
	CommitTree string `json:"commit_tree"`
}

// ReasonPolicyNew is the Reason when the repository policy is new in the
// change (read_from: working-tree): there is no prior contract to pin.
const ReasonPolicyNew = "the repository policy is new in the change (read_from: working-tree): no prior contract, nothing pinned"

// Overlay is what the run lays over its checkout: the base's version of
// every changed harness file, sorted by path.
func (r *Record) Overlay() []Pin {
	var out []Pin
	for _, f := range r.Files {
		if f.Changed() {
			out = append(out, Pin{Path: f.Path, Entry: *f.Base})
		}
	}
	return out
}

// ChangedPaths lists the harness files the change edited, whose base
// version ran.
func (r *Record) ChangedPaths() []string {
	var out []string
	for _, f := range r.Files {
		if f.Changed() {
			out = append(out, f.Path)
		}
	}
	return out
}

// NewPaths lists the harness files new in the change (taken from the commit).
func (r *Record) NewPaths() []string {
	var out []string
	for _, f := range r.Files {
		if f.Ran == FromCommit && f.Base == nil {
			out = append(out, f.Path)
		}
	}
	return out
}

// Pin is one file laid over a checkout.
type Pin struct {
	Path string
	Entry
}

// Script returns the repository file the command directly executes when it
// starts with `sh FILE`, `bash FILE` or `./FILE`, cleaned and relative to
// the repository root. Anything else — an option before the file, quoting,
// a variable, a path outside the checkout — names no file, and nothing is
// guessed.
func Script(command string) (string, bool) {
	words := strings.Fields(command)
	if len(words) == 0 {
		return "", false
	}
	var file string
	switch {
	case words[0] == "sh" || words[0] == "bash":
		if len(words) < 2 {
			return "", false
		}
		file = words[1]
	case strings.HasPrefix(words[0], "./"):
		file = words[0]
	default:
		return "", false
	}
	// A word the shell would rewrite is not a literal path.
	if strings.ContainsAny(file, "\"'`$\\*?[]{}~;&|<>()#=") || strings.HasPrefix(file, "-") {
		return "", false
	}
	clean := path.Clean(file)
	if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

// Resolve computes the harness of one run of a check whose command is
// command and whose policy lists patterns under harness:, given the base's
// tree and the run's commit's tree. pinned=false (the policy is new in the
// change) records the files but takes every one from the commit.
func Resolve(command string, patterns []string, base, commit Tree, pinned bool, baseCommit string) (*Record, error) {
	paths := map[string]bool{}
	if s, ok := Script(command); ok {
		paths[s] = true
	}
	for _, p := range patterns {
		g, err := pathglob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("harness pattern %q: %w", p, err)
		}
		for _, t := range []Tree{base, commit} {
			if _, ok := t[p]; ok {
				paths[p] = true
			}
			for name := range t {
				if g.Match(name) {
					paths[name] = true
				}
			}
		}
	}
	rec := &Record{Pinned: pinned, Base: baseCommit, Files: []File{}}
	if !pinned {
		rec.Reason = ReasonPolicyNew
	}
	for p := range paths {
		f := File{Path: p}
		if e, ok := base[p]; ok {
			f.Base = &e
		}
		if e, ok := commit[p]; ok {
			f.Commit = &e
		}
		if f.Base == nil && f.Commit == nil {
			continue // named, but a file at neither commit
		}
		f.Ran = FromCommit
		if pinned && f.Base != nil {
			f.Ran = FromBase
		}
		rec.Files = append(rec.Files, f)
	}
	slices.SortFunc(rec.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	// A path that is a file at the base and a directory's prefix of
	// another pinned path cannot both be laid down.
	for i := 1; i < len(rec.Files); i++ {
		for j := 0; j < i; j++ {
			if strings.HasPrefix(rec.Files[i].Path, rec.Files[j].Path+"/") && rec.Files[j].Ran == FromBase && rec.Files[i].Ran == FromBase {
				return nil, fmt.Errorf("harness files %s and %s: one is a file the other lies under", rec.Files[j].Path, rec.Files[i].Path)
			}
		}
	}
	return rec, nil
}

// Equal reports whether two records name the same files with the same
// sources and entries (CommitTree aside).
func Equal(a, b *Record) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Pinned != b.Pinned || a.Reason != b.Reason || a.Base != b.Base || len(a.Files) != len(b.Files) {
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
