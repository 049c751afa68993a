// Package pathglob matches slash-separated repository paths against the glob
// patterns of changed-path rules.
//
// Grammar (documented in docs/policy.md):
//   - a pattern is matched against the whole path, segment by segment;
//   - `*` matches any run of characters within one segment, `?` one
//     character, `[...]` a class (path.Match syntax);
//   - a segment that is exactly `**` matches zero or more whole segments;
//   - a trailing `/` means "everything under": `migrations/` ≡ `migrations/**`;
//   - a pattern with no `/` matches the last segment at any depth, like
//     .gitignore: `*.sql` matches `db/migrations/001.sql`.
//
// Matching is allocation-free: Discovery evaluates every rule against every
// changed path (500 checks × 10 000 paths must stay well under a second).
//
// A pattern can also be matched one segment at a time (Start, Step, Final),
// for paths that are walked rather than listed: the paths a symlink makes a
// changed file visible at.
package pathglob

import (
	"fmt"
	"path"
	"strings"
)

// Pattern is a compiled glob.
type Pattern struct {
	src    string
	segs   []string
	prefix string // literal leading segments joined with "/" plus "/", for a fast reject
	suffix string // literal tail of the last segment: every match ends with it
	base   bool   // no "/" in the source: match the last segment only
	steps  []step // the segments as Step walks them
}

// step is one segment of a pattern as Step walks it: a `**` (star), or a
// path.Match glob for exactly one segment, which may be a literal name.
type step struct {
	glob    string
	star    bool
	literal bool
}

// Compile validates and compiles a pattern.
func Compile(p string) (*Pattern, error) {
	if p == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("pattern %q is absolute; patterns are relative to the repository root (drop the leading /)", p)
	}
	if strings.ContainsRune(p, '\\') {
		return nil, fmt.Errorf("pattern %q contains a backslash; paths use /", p)
	}
	src := p
	if strings.HasSuffix(p, "/") {
		p += "**"
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch {
		case s == "":
			return nil, fmt.Errorf("pattern %q has an empty segment (//)", src)
		case s == "." || s == "..":
			return nil, fmt.Errorf("pattern %q has a %q segment", src, s)
		case s != "**" && strings.Contains(s, "**"):
			return nil, fmt.Errorf("pattern %q: ** must be a whole segment", src)
		}
		if s != "**" {
			// path.Match reports a malformed class only while matching.
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("pattern %q: bad segment %q: %v", src, s, err)
			}
		}
	}
	pt := &Pattern{src: src, segs: segs, base: !strings.Contains(src, "/")}
	var lit []string
	for _, s := range segs {
		if strings.ContainsAny(s, "*?[") {
			break
		}
		lit = append(lit, s)
	}
	if len(lit) > 0 && len(lit) < len(segs) {
		pt.prefix = strings.Join(lit, "/") + "/"
	}
	if last := segs[len(segs)-1]; last != "**" {
		// Everything after the last wildcard or class is literal
		// (Compile refused backslash escapes).
		pt.suffix = last[strings.LastIndexAny(last, "*?]")+1:]
	}
	pt.steps = stepsOf(segs, pt.base, pt.prefix != "" && len(lit) == len(segs)-1 && segs[len(segs)-1] == "**")
	return pt, nil
}

// stepsOf turns segments into the steps that walk them as Match matches:
// a slash-free pattern is its last segment under any directories (`**`
// first, its one segment a glob even when it is `**`), and `dir/**` —
// literal segments, then one `**` — needs at least one segment below dir,
// as Match's prefix requires (`migrations/**` does not match
// `migrations`).
func stepsOf(segs []string, base, under bool) []step {
	glob := func(s string) step { return step{glob: s, literal: !strings.ContainsAny(s, "*?[")} }
	if base {
		return []step{{star: true}, glob(segs[0])}
	}
	var out []step
	for _, s := range segs {
		if s == "**" {
			out = append(out, step{star: true})
		} else {
			out = append(out, glob(s))
		}
	}
	if under {
		out = append(out[:len(out)-1], glob("*"), step{star: true})
	}
	return out
}

// Literals are the segments without a wildcard or class: every path the
// pattern matches has each of them as a segment.
func (p *Pattern) Literals() []string {
	var out []string
	for _, st := range p.steps {
		if st.literal {
			out = append(out, st.glob)
		}
	}
	return out
}

// Suffix is the literal tail of the pattern's last segment: every path it
// matches ends with it ("" when there is none).
func (p *Pattern) Suffix() string { return p.suffix }

// String returns the pattern as written.
func (p *Pattern) String() string { return p.src }

// Match reports whether the repository path name matches.
func (p *Pattern) Match(name string) bool {
	if !strings.HasSuffix(name, p.suffix) {
		return false
	}
	if p.base {
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		ok, _ := path.Match(p.segs[0], name)
		return ok
	}
	if p.prefix != "" && !strings.HasPrefix(name, p.prefix) {
		return false
	}
	return matchSegs(p.segs, name)
}

// matchSegs matches segs against the remaining path without splitting it.
func matchSegs(segs []string, name string) bool {
	for len(segs) > 0 {
		s := segs[0]
		if s == "**" {
			rest := segs[1:]
			if len(rest) == 0 {
				return true
			}
			for {
				if matchSegs(rest, name) {
					return true
				}
				i := strings.IndexByte(name, '/')
				if i < 0 {
					return false
				}
				name = name[i+1:]
			}
		}
		if name == "" {
			return false
		}
		seg, after, more := strings.Cut(name, "/")
		if ok, _ := path.Match(s, seg); !ok {
			return false
		}
		segs = segs[1:]
		if !more {
			return len(segs) == 0 || (len(segs) == 1 && segs[0] == "**")
		}
		name = after
	}
	return name == ""
}

// State is how far a walk has matched a pattern: a position in its
// segments. A walk holds a set of states; one with none left can match no
// path it continues to.
type State int

// Start is the state before the first segment.
func (p *Pattern) Start() State { return 0 }

// Step appends to out the states after one more segment, seg, from s, and
// returns out.
func (p *Pattern) Step(s State, seg string, out []State) []State {
	// A `**` matches zero segments too: from it the walk may go on to
	// the next step before taking seg.
	for q := int(s); q < len(p.steps); q++ {
		st := p.steps[q]
		if st.star {
			out = append(out, State(q))
			continue
		}
		if st.literal && st.glob == seg {
			out = append(out, State(q+1))
		} else if !st.literal {
			if ok, _ := path.Match(st.glob, seg); ok {
				out = append(out, State(q+1))
			}
		}
		break
	}
	return out
}

// Final reports whether a path whose last segment left the walk in s
// matches: every step taken, or only a trailing `**` left (which matches
// zero segments at the end, as Match's does).
func (p *Pattern) Final(s State) bool {
	n := len(p.steps)
	return int(s) == n || (int(s) == n-1 && p.steps[n-1].star)
}
