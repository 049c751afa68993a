package outcome

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// A test id's location part is what a report derives from where the test
// lives: the text before the id's first "::" — JUnit's classname (pytest's
// dotted module path tests.test_a, a Java class com.shop.CartTest, a file
// path test/a.test.js as vitest and node:test write it), pytest's own node
// id (tests/test_a.py::test_x), go test's import path
// (example.com/shop/cart::TestTotal). Under report.identity: suite-path the
// enclosing suite names come first, each followed by " > ", and each of
// them is a location too (vitest names a suite by its file).
//
// locator maps a location through git's renames between the two commits
// (issue 24: moves are facts from git, not guesses): a file renamed from
// old to new maps
//
//   - the path old, relative to any directory both paths lie under (a
//     runner's root need not be the repository's): tests/test_a.py →
//     pkg/tests/test_a.py, and from python/ both tests/test_a.py and
//     python/tests/test_a.py;
//   - the dotted module path derived from it the same way (extension
//     dropped, "/" read as "."), alone or followed by ".Class":
//     tests.test_a → pkg.tests.test_a, tests.test_a.TestCart →
//     pkg.tests.test_a.TestCart;
//
// and a Go package whose directory moved maps its import path. Nothing
// else is guessed: a file git does not call renamed maps nothing, and a
// location that matches no rename keeps its id.
type locator struct {
	files  map[string][]string
	dotted map[string][]string
	pkgs   map[string][]string
}

// target is one id a location maps to.
type target struct {
	id report.TestID
	by record.MoveKind
}

// maxTargets bounds the ids one test may map to (a suite-path id whose
// every segment names a renamed file).
const maxTargets = 8

func newLocator(r *record.Renames) *locator {
	l := &locator{files: map[string][]string{}, dotted: map[string][]string{}, pkgs: map[string][]string{}}
	if r == nil {
		return l
	}
	add := func(m map[string][]string, from, to string) {
		if from != "" && to != "" && from != to && !slices.Contains(m[from], to) {
			m[from] = append(m[from], to)
		}
	}
	for _, f := range r.Files {
		for _, root := range commonDirs(f.From, f.To) {
			from, to := below(root, f.From), below(root, f.To)
			add(l.files, from, to)
			if df, ok := dottedPath(from); ok {
				if dt, ok := dottedPath(to); ok {
					add(l.dotted, df, dt)
				}
			}
		}
	}
	for _, p := range r.GoPackages {
		add(l.pkgs, p.From, p.To)
	}
	for _, m := range []map[string][]string{l.files, l.dotted, l.pkgs} {
		for k := range m {
			slices.Sort(m[k])
		}
	}
	return l
}

// empty reports whether nothing can map.
func (l *locator) empty() bool {
	return len(l.files) == 0 && len(l.dotted) == 0 && len(l.pkgs) == 0
}

// commonDirs are the directories both paths lie under, the repository
// root ("") first.
func commonDirs(a, b string) []string {
	out := []string{""}
	da, db := strings.Split(path.Dir(a), "/"), strings.Split(path.Dir(b), "/")
	if path.Dir(a) == "." || path.Dir(b) == "." {
		return out
	}
	for i := 0; i < len(da) && i < len(db) && da[i] == db[i]; i++ {
		out = append(out, strings.Join(da[:i+1], "/"))
	}
	return out
}

func below(root, p string) string {
	if root == "" {
		return p
	}
	return strings.TrimPrefix(p, root+"/")
}

// dottedPath is the module path a runner derives from a file path: the
// extension dropped and every "/" a "."; false when a segment holds a dot
// of its own, which no module or class name does.
func dottedPath(p string) (string, bool) {
	ext := path.Ext(p)
	stem := strings.TrimSuffix(p, ext)
	if ext == "" || stem == "" || strings.Contains(stem, ".") || strings.HasSuffix(stem, "/") {
		return "", false
	}
	return strings.ReplaceAll(stem, "/", "."), true
}

// mapped returns the ids id maps to, in a fixed order: each segment of its
// location replaced by what the renames map it to.
func (l *locator) mapped(id report.TestID) []target {
	if l.empty() {
		return nil
	}
	loc, rest, ok := strings.Cut(string(id), "::")
	if !ok {
		return nil
	}
	segs := strings.Split(loc, " > ")
	// Per segment, what it may become: what the renames map it to, then
	// itself, so that every moved segment is tried moved first and a
	// suite-path id whose classname alone moved still maps.
	options := make([][]target, len(segs))
	moved := false
	for i, s := range segs {
		options[i] = l.segment(s)
		moved = moved || len(options[i]) > 0
		options[i] = append(options[i], target{id: report.TestID(s)})
	}
	if !moved {
		return nil
	}
	var out []target
	var walk func(i int, parts []string, by record.MoveKind)
	walk = func(i int, parts []string, by record.MoveKind) {
		if len(out) >= maxTargets {
			return
		}
		if i == len(segs) {
			if by != "" {
				out = append(out, target{id: report.TestID(strings.Join(parts, " > ") + "::" + rest), by: by})
			}
			return
		}
		for _, o := range options[i] {
			k := by
			if o.by != "" {
				k = o.by
			}
			walk(i+1, append(parts, string(o.id)), k)
		}
	}
	walk(0, make([]string, 0, len(segs)), "")
	return out
}

// segment maps one location segment: a path, a dotted module path (or a
// class in one), a Go import path.
func (l *locator) segment(s string) []target {
	var out []target
	for _, to := range l.files[s] {
		out = append(out, target{id: report.TestID(to), by: record.MovedFile})
	}
	// A dotted location maps by its longest renamed module prefix.
	for end := len(s); end > 0; end = strings.LastIndexByte(s[:end], '.') {
		if tos, ok := l.dotted[s[:end]]; ok {
			for _, to := range tos {
				out = append(out, target{id: report.TestID(to + s[end:]), by: record.MovedFile})
			}
			break
		}
	}
	for _, to := range l.pkgs[s] {
		out = append(out, target{id: report.TestID(to), by: record.MovedPackage})
	}
	return out
}

// function splits a parametrized case id into its function and its case:
// "tests/test_a.py::test_x[1-2]" is the function "tests/test_a.py::test_x"
// with case "[1-2]" (pytest's ids; the bracket is looked for after the
// location, which may hold one: app/[slug]/page.test.js).
func function(id report.TestID) (string, bool) {
	s := string(id)
	if !strings.HasSuffix(s, "]") {
		return "", false
	}
	start := 0
	if i := strings.Index(s, "::"); i >= 0 {
		start = i + 2
	}
	i := strings.IndexByte(s[start:], '[')
	if i <= 0 {
		return "", false
	}
	return s[:start+i], true
}

// exception is n occurrences of a test that passed at the base and are
// missing (or skipped) at the candidate under every id it may have.
type exception struct {
	id      report.TestID
	n       int
	skipped bool
}

// matching is what match found.
type matching struct {
	exceptions []exception
	moved      []record.TestMove
	// base and candidate, for what is looked up once a finding needs it.
	base, candidate *report.Inventory
	// basePassed are the ids that passed at the base, one per occurrence,
	// sorted (the recorded inventory already is).
	basePassed []report.TestID
}

// occurrences are a candidate id's occurrences not yet paired: run (passed
// or failed) and skipped.
type occurrences struct{ run, skip int32 }

// unpaired is a test that passed at the base whose occurrences are not all
// paired yet: n found nowhere, skipped found skipped.
type unpaired struct {
	id         report.TestID
	n, skipped int
}

// pool is the candidate's occurrences not yet paired, by id: one map for
// the whole candidate (1 M ids), values rather than pointers.
type pool map[report.TestID]occurrences

// take pairs up to want of id's occurrences, not skipped or skipped.
func (p pool) take(id report.TestID, want int, skipped bool) int {
	o, ok := p[id]
	if !ok || want <= 0 {
		return 0
	}
	have := &o.run
	if skipped {
		have = &o.skip
	}
	n := min(int32(want), *have)
	*have -= n
	p[id] = o
	return int(n)
}

// match pairs every occurrence of a test that passed at the base with an
// occurrence at the candidate: first under its own id (not skipped, then
// skipped), then under the ids l maps it to, then as a parametrized case
// of its function (parameterCases). What remains are the exceptions.
func match(base, candidate *report.Inventory, l *locator) *matching {
	m := &matching{base: base, candidate: candidate}
	cand := make(pool, len(candidate.Tests))
	for _, t := range candidate.Tests {
		o := cand[t.ID]
		if t.Status == report.Skipped {
			o.skip++
		} else {
			o.run++
		}
		cand[t.ID] = o
	}
	for _, t := range base.Tests {
		if t.Status == report.Passed {
			m.basePassed = append(m.basePassed, t.ID)
		}
	}
	if !slices.IsSorted(m.basePassed) {
		slices.Sort(m.basePassed)
	}
	var rest []unpaired
	for i := 0; i < len(m.basePassed); {
		id := m.basePassed[i]
		j := i + 1
		for j < len(m.basePassed) && m.basePassed[j] == id {
			j++
		}
		n := j - i
		i = j
		n -= cand.take(id, n, false)
		s := cand.take(id, n, true)
		if n -= s; n > 0 || s > 0 {
			rest = append(rest, unpaired{id: id, n: n, skipped: s})
		}
	}
	// Moves: what git's renames map the rest to, once every candidate
	// occurrence served its own id.
	moved := func(from report.TestID, to target, n int) int {
		got := cand.take(to.id, n, false)
		if got > 0 {
			m.moved = append(m.moved, record.TestMove{From: from, To: to.id, By: to.by})
		}
		return got
	}
	for i := range rest {
		r := &rest[i]
		if r.n == 0 {
			continue
		}
		targets := l.mapped(r.id)
		for _, to := range targets {
			r.n -= moved(r.id, to, r.n)
		}
		for _, to := range targets {
			s := cand.take(to.id, r.n, true)
			r.n, r.skipped = r.n-s, r.skipped+s
		}
	}
	m.parameterCases(l, rest, cand)
	for _, r := range rest {
		if r.n > 0 {
			m.exceptions = append(m.exceptions, exception{id: r.id, n: r.n})
		}
		if r.skipped > 0 {
			m.exceptions = append(m.exceptions, exception{id: r.id, n: r.skipped, skipped: true})
		}
	}
	slices.SortFunc(m.moved, func(a, b record.TestMove) int {
		return cmp.Or(strings.Compare(string(a.From), string(b.From)), strings.Compare(string(a.To), string(b.To)))
	})
	m.moved = slices.Compact(m.moved)
	if m.moved == nil {
		m.moved = []record.TestMove{}
	}
	return m
}

// parameterCases pairs the rest that are parametrized cases (function)
// with the cases their function gained: when the function — under its own
// location or one the renames map it to — has as many cases at the
// candidate as at the base (every status counted), a case id the base
// passed and the candidate lacks takes an unpaired case of that function,
// cases the base did not know first, each in id order. A change that only
// corrects a parametrize value (pytest derives the id from it) keeps its
// cases; one that drops a case leaves it missing.
func (m *matching) parameterCases(l *locator, rest []unpaired, cand pool) {
	base, candidate := m.base, m.candidate
	wanted := map[string][]string{} // a base function → the candidate functions it may be
	for _, r := range rest {
		if r.n == 0 {
			continue
		}
		if f, ok := function(r.id); ok {
			if _, done := wanted[f]; !done {
				fs := []string{f}
				for _, t := range l.mapped(report.TestID(f)) {
					fs = append(fs, string(t.id))
				}
				wanted[f] = fs
			}
		}
	}
	if len(wanted) == 0 {
		return
	}
	candFns := map[string]bool{}
	for _, fs := range wanted {
		for _, f := range fs {
			candFns[f] = true
		}
	}
	baseCases, candCases := map[string]int{}, map[string]int{}
	inBase := map[report.TestID]bool{}
	for _, t := range base.Tests {
		if f, ok := function(t.ID); ok && (wanted[f] != nil || candFns[f]) {
			baseCases[f]++
			inBase[t.ID] = true
		}
	}
	ids := map[string][]report.TestID{} // a candidate function → its case ids, new ones first
	for _, t := range candidate.Tests {
		if f, ok := function(t.ID); ok && candFns[f] {
			if candCases[f]++; !slices.Contains(ids[f], t.ID) {
				ids[f] = append(ids[f], t.ID)
			}
		}
	}
	for _, l := range ids {
		slices.SortFunc(l, func(a, b report.TestID) int {
			if inBase[a] != inBase[b] {
				if inBase[a] {
					return 1
				}
				return -1
			}
			return strings.Compare(string(a), string(b))
		})
	}
	for i := range rest {
		r := &rest[i]
		f, ok := function(r.id)
		if !ok || r.n == 0 {
			continue
		}
		for _, cf := range wanted[f] {
			if baseCases[f] != candCases[cf] {
				continue
			}
			for _, c := range ids[cf] {
				if got := cand.take(c, r.n, false); got > 0 {
					r.n -= got
					m.moved = append(m.moved, record.TestMove{From: r.id, To: c, By: record.MovedParameters})
				}
			}
			for _, c := range ids[cf] {
				s := cand.take(c, r.n, true)
				r.n, r.skipped = r.n-s, r.skipped+s
			}
		}
	}
}

// repeatNote names, for a finding about ids, the first one the base
// passed more than once, with how often the candidate has it: a repeated
// id counts once per occurrence.
func (m *matching) repeatNote(ids []report.TestID) string {
	for _, id := range ids {
		lo, _ := slices.BinarySearch(m.basePassed, id)
		hi, _ := slices.BinarySearch(m.basePassed, id+"\x00")
		if n := hi - lo; n > 1 {
			seen := 0
			for _, t := range m.candidate.Tests {
				if t.ID == id {
					seen++
				}
			}
			return fmt.Sprintf(" (ids count once per occurrence: %s passed %d times at the base and is found %s at the candidate)",
				printable.Text(strconv.Quote(string(id)), 200), n, printable.Plural(seen, "time", "times"))
		}
	}
	return ""
}

// passing are the ids of want that pass somewhere at the candidate.
func (m *matching) passing(want map[report.TestID]bool) map[report.TestID]bool {
	out := map[report.TestID]bool{}
	if len(want) == 0 {
		return out
	}
	for _, t := range m.candidate.Tests {
		if t.Status == report.Passed && want[t.ID] {
			out[t.ID] = true
		}
	}
	return out
}
