package discovery

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/pathglob"
)

// Path rules see through symlinks (docs/policy.md, the section of that
// name): a check that runs over `migrations/**` reads db/001.sql when
// migrations/001.sql links to it, so a change to db/001.sql is a change
// under migrations/. A rule matches a changed path at every path the tree
// makes it visible at — through a symlink to the file, a symlink to a
// directory above it, or chains of them — resolved as the sandbox resolves
// them, in the trees of both ends of the change: a change that removes or
// retargets a link still meets the rules the base's link puts on it, and
// one that adds a link meets its own.

// MaxLinkHops bounds the symlinks one resolution follows, as Linux's
// MAXSYMLINKS does: a longer chain, or a loop, points nowhere.
const MaxLinkHops = 40

// Links are one tree's tracked symlinks.
type Links struct {
	Commit  string            // the commit whose tree this is
	Targets map[string]string // repository path → target, as git stores it
	Dirs    map[string]bool   // the tree's directories: what a link can go through
}

// linkTree is one tree's symlinks, indexed for matching rules through them.
type linkTree struct {
	commit   string
	targets  map[string]string
	dirs     map[string]bool
	root     []string // where checks see the repository: CheckoutRoot's components
	resolved map[string]resolution
	changed  map[string]bool
	// changedLink: one of the changed paths is a link of this tree.
	changedLink bool
	// tails are the last segments of the changed paths and the links,
	// each reversed, sorted: every path a match can end with.
	tails []string
	// names are every segment a walk can spell.
	names map[string]bool
	// Each maps a directory ("" for the root) to its entries a walk goes
	// on to, sorted by name: toLinks those on the way to a symlink
	// (before one is followed, only a symlink can lead to a changed path
	// that plain matching has not tried), all those on the way to a
	// symlink or a changed path.
	toLinks, all map[string][]dirent
}

// dirent is a directory entry of the index: its name and its path.
type dirent struct{ name, path string }

// resolution is where a symlink leads.
type resolution struct {
	path string   // the repository path it ends at
	in   bool     // false: it ends outside the repository, in a loop or past MaxLinkHops
	via  []string // the symlinks followed, in order, the resolved one first
}

// linkTrees indexes in.Links for the rules of one Resolve; trees without a
// symlink are left out, so a repository without links pays nothing.
func linkTrees(in Input) []*linkTree {
	var root []string
	if strings.HasPrefix(in.CheckoutRoot, "/") {
		root = splitPath(in.CheckoutRoot)
	} else {
		// No component can be a NUL: nothing spells its way back into
		// the repository from outside.
		root = []string{"\x00"}
	}
	var changed map[string]bool
	var trees []*linkTree
	for _, l := range in.Links {
		if len(l.Targets) == 0 {
			continue
		}
		if changed == nil {
			changed = make(map[string]bool, len(in.ChangedPaths))
			for _, p := range in.ChangedPaths {
				changed[p] = true
			}
		}
		toLinks, all := map[string]map[string]bool{}, map[string]map[string]bool{}
		for p := range l.Targets {
			addParents(toLinks, p)
			addParents(all, p)
		}
		for p := range changed {
			addParents(all, p)
		}
		t := &linkTree{commit: l.Commit, targets: l.Targets, dirs: l.Dirs, root: root, names: map[string]bool{},
			resolved: map[string]resolution{}, changed: changed, toLinks: sorted(toLinks), all: sorted(all)}
		for _, names := range all {
			for n := range names {
				t.names[n] = true
			}
		}
		tails := map[string]bool{}
		for p := range changed {
			_, link := l.Targets[p]
			t.changedLink = t.changedLink || link
			tails[reverse(p[strings.LastIndexByte(p, '/')+1:])] = true
		}
		for p := range l.Targets {
			tails[reverse(p[strings.LastIndexByte(p, '/')+1:])] = true
		}
		t.tails = slices.Sorted(maps.Keys(tails))
		trees = append(trees, t)
	}
	return trees
}

// addParents records p as the way from each of its directories down to it.
func addParents(kids map[string]map[string]bool, p string) {
	dir := ""
	for p != "" {
		name, rest, _ := strings.Cut(p, "/")
		if kids[dir] == nil {
			kids[dir] = map[string]bool{}
		}
		kids[dir][name] = true
		dir, p = join(dir, name), rest
	}
}

func sorted(kids map[string]map[string]bool) map[string][]dirent {
	out := make(map[string][]dirent, len(kids))
	for dir, names := range kids {
		es := make([]dirent, 0, len(names))
		for _, n := range slices.Sorted(maps.Keys(names)) {
			es = append(es, dirent{n, join(dir, n)})
		}
		out[dir] = es
	}
	return out
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// resolve follows the symlink at p as the kernel would in the sandbox, one
// component at a time: a relative target from the link's directory, an
// absolute one from the sandbox's root (in the repository when it is under
// CheckoutRoot), `..` to the parent, every link met on the way followed. A
// component that is neither a link nor a directory of the tree ends the
// walk (the kernel's ENOENT or ENOTDIR), unless it is the last: a link may
// point at a file this tree lacks, which the change added or removed.
// Outside the repository nothing is a link or missing (runmill does not know
// the sandbox's root file system), and a resolution that ends there points
// nowhere unless it came back in.
func (t *linkTree) resolve(p string) resolution {
	if r, ok := t.resolved[p]; ok {
		return r
	}
	r := t.follow(p)
	t.resolved[p] = r
	return r
}

func (t *linkTree) follow(p string) resolution {
	var r resolution
	at := slices.Clone(t.root)
	// The components still to walk, the next one last: a link's target
	// goes on top without copying what is under it.
	var pending []string
	push := func(p string) {
		cs := strings.Split(p, "/")
		slices.Reverse(cs)
		pending = append(pending, cs...)
	}
	push(p)
	hops, missing := 0, false
	for len(pending) > 0 {
		c := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if c == "" || c == "." {
			continue
		}
		if missing {
			return resolution{via: r.via}
		}
		if c == ".." {
			if len(at) > 0 {
				at = at[:len(at)-1]
			}
			continue
		}
		at = append(at, c)
		rel, in := t.rel(at)
		if !in {
			continue
		}
		target, link := t.targets[rel]
		if !link {
			missing = rel != "" && !t.dirs[rel]
			continue
		}
		if hops++; hops > MaxLinkHops {
			return resolution{via: r.via}
		}
		r.via = append(r.via, rel)
		at = at[:len(at)-1]
		if strings.HasPrefix(target, "/") {
			at = at[:0]
		}
		push(target)
	}
	r.path, r.in = t.rel(at)
	return r
}

// rel is the repository path of the absolute components at, and whether at
// is in the repository.
func (t *linkTree) rel(at []string) (string, bool) {
	if len(at) < len(t.root) || !slices.Equal(at[:len(t.root)], t.root) {
		return "", false
	}
	return strings.Join(at[len(t.root):], "/"), true
}

// hop is one step of a walk: the segment spelled, where it led and the
// pattern state after it.
type hop struct {
	node   string // the repository path reached
	state  pathglob.State
	linked bool // a symlink was followed on the way
	prev   int  // the hop this one continues; -1 for the root
	seg    string
	via    []string // the symlinks followed on this step
}

// match finds the first changed path pat matches through the tree's
// symlinks, walking from the root breadth first: each entry on the way to
// a link or a changed path spelled as one more segment, a link followed to
// where it resolves, a walk dropped where the pattern has no state left.
// A (path, state) pair is walked once, so loops end and the work is bounded
// by the paths the index holds times the pattern's length. Breadth first
// over sorted names, the match found is the shortest and always the same.
func (t *linkTree) match(pat *pathglob.Pattern) (SymlinkMatch, bool) {
	type key struct {
		node   string
		state  pathglob.State
		linked bool
	}
	// A path the pattern matches ends with its suffix and spells each of
	// its literal segments, with names of the index; without them only a
	// changed link to a directory can match, and only links lead there,
	// so the walk keeps to them (a change adding a link to the root
	// then costs the rules that cannot match nothing).
	full := t.mayEndWith(pat.Suffix()) && t.hasAll(pat.Literals())
	if !full && !t.changedLink {
		return SymlinkMatch{}, false
	}
	hops := []hop{{state: pat.Start(), prev: -1}}
	seen := map[key]bool{{state: pat.Start()}: true}
	var states []pathglob.State
	for i := 0; i < len(hops); i++ {
		h := hops[i]
		entries := t.toLinks[h.node]
		if h.linked && full {
			entries = t.all[h.node]
		}
		for _, e := range entries {
			name, child := e.name, e.path
			if states = pat.Step(h.state, name, states[:0]); len(states) == 0 {
				continue
			}
			r := resolution{path: child, in: true}
			linked := h.linked
			if _, ok := t.targets[child]; ok {
				r, linked = t.resolve(child), true
			}
			// A changed link on the way changed what the spelled
			// path shows: the file it ends at, when the pattern
			// matches the path, or everything under the directory it
			// ends at, when it can match a path below (the walk is
			// still alive: retargeting `migrations` itself changes
			// migrations/**).
			dir := r.in && t.dirs[r.path]
			for _, st := range states {
				if linked && (dir || pat.Final(st)) {
					for k, v := range r.via {
						if t.changed[v] {
							return t.witness(pat, hops, i, name, r.via[:k+1], v), true
						}
					}
				}
				if linked && pat.Final(st) && r.in && t.changed[r.path] {
					return t.witness(pat, hops, i, name, r.via, r.path), true
				}
				k := key{r.path, st, linked}
				if !r.in || seen[k] {
					continue
				}
				seen[k] = true
				hops = append(hops, hop{node: r.path, state: st, linked: linked, prev: i, seg: name, via: r.via})
			}
		}
	}
	return SymlinkMatch{}, false
}

// mayEndWith reports whether a path the walk spells that a pattern
// matches can end with suffix: its last segment is a changed path's or a
// link's. Most patterns of a large policy name a suffix (`**/*.go`) no such
// path has; tails answers with a binary search.
func (t *linkTree) mayEndWith(suffix string) bool {
	if suffix == "" {
		return true
	}
	rs := reverse(suffix)
	i, _ := slices.BinarySearch(t.tails, rs)
	return i < len(t.tails) && strings.HasPrefix(t.tails[i], rs)
}

// hasAll reports whether the walk can spell every one of names.
func (t *linkTree) hasAll(names []string) bool {
	for _, n := range names {
		if !t.names[n] {
			return false
		}
	}
	return true
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// witness spells the walk that ends with seg after hop i and the symlinks
// it followed.
func (t *linkTree) witness(pat *pathglob.Pattern, hops []hop, i int, seg string, via []string, changed string) SymlinkMatch {
	segs := []string{seg}
	var links [][]string
	for ; i > 0; i = hops[i].prev {
		segs = append(segs, hops[i].seg)
		links = append(links, hops[i].via)
	}
	slices.Reverse(segs)
	slices.Reverse(links)
	m := SymlinkMatch{Pattern: pat.String(), Path: strings.Join(segs, "/"), Changed: changed, Commit: t.commit, Symlinks: []SymlinkHop{}}
	for _, vs := range append(links, via) {
		for _, v := range vs {
			m.Symlinks = append(m.Symlinks, SymlinkHop{Path: v, Target: t.targets[v]})
		}
	}
	return m
}

// linkMatch is firstMatch through symlinks: the first match of any pattern
// in any tree (in the order given).
func linkMatch(trees []*linkTree, pats []*pathglob.Pattern) (SymlinkMatch, bool) {
	for _, pat := range pats {
		for _, t := range trees {
			if m, ok := t.match(pat); ok {
				return m, true
			}
		}
	}
	return SymlinkMatch{}, false
}

// reason says in words how m matched.
func (m SymlinkMatch) reason() string {
	links := make([]string, len(m.Symlinks))
	for i, l := range m.Symlinks {
		links[i] = l.Path + " → " + l.Target
	}
	word := "symlink"
	if len(links) > 1 {
		word = "symlinks"
	}
	return fmt.Sprintf("changed path %s matches %s as %s through %s %s (at %s)",
		m.Changed, m.Pattern, m.Path, word, strings.Join(links, ", "), objectid.Short(m.Commit))
}
