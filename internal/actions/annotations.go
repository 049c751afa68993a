package actions

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// Annotation is one workflow-command annotation:
// ::error file=F,line=N,title=T::message.
type Annotation struct {
	Level   string `json:"level"` // "error" or "warning"
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Title   string `json:"title"`
	Message string `json:"message"`
}

// GitHub keeps at most 10 error and 10 warning annotations of one step's
// workflow commands (and 50 per job); runmill sends no more, most useful
// first, and the summary says how many it left out.
const (
	MaxErrors   = 10
	MaxWarnings = 10
)

// maxAnnotationRunes bounds one annotation's message, escaped.
const maxAnnotationRunes = 2000

// escaped is the annotation as annotate issues it. Its title and every
// line of its message pass through the one escaping rule (pkg/printable:
// control characters — ESC, CR, C1, DEL, the Unicode line separators —
// become visible escapes, and a line cannot start with "::"); the line
// breaks left are runmill's own, between a message's parts and the lines
// of a test's failure output, and go-githubactions then encodes the
// command itself (%, CR and LF; ":" and "," too in the properties). A
// file name that is not printable as it is names no location: escaping
// it would name a file that does not exist.
func escaped(a Annotation) Annotation {
	a.Title = oneLine(a.Title)
	lines := strings.Split(strings.ReplaceAll(a.Message, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = oneLine(l)
	}
	a.Message = clip(strings.Join(lines, "\n"), maxAnnotationRunes)
	if a.File != "" && oneLine(a.File) != a.File {
		a.File, a.Line = "", 0
	}
	return a
}

// oneLine is text from a report or a finding as one escaped line.
func oneLine(s string) string { return printable.Text(s, 0) }

// maxFailingPerCheck bounds the failing tests kept per check for
// annotations; the summary counts all of them from the inventory.
const maxFailingPerCheck = 100

// failingTest is a failing candidate test with what its report says of it.
type failingTest struct {
	Check   string
	ID      report.TestID
	File    string // a tracked file of the candidate, or ""
	Line    int
	Message string
}

// failingTests re-reads the reports of the candidate runs that recorded
// failing tests: the statement keeps ids only, the report keeps where a
// test failed (JUnit file/line, TAP YAML at:, the file:line go test
// prints). A report that cannot be re-read still yields its ids, unlocated.
func failingTests(run *Run, files *fileIndex) []failingTest {
	var out []failingTest
	// Reports are re-read only while they can still fill GitHub's slots:
	// at most MaxErrors of them, until MaxErrors tests are located.
	located, reread := 0, 0
	for _, c := range run.Delivery.Checks {
		rep := c.Report
		if c.Phase != record.Candidate || c.Executor != record.Orchestrator || rep == nil || rep.Inventory == nil || len(rep.Inventory.Failed) == 0 {
			continue
		}
		found := map[report.TestID]report.Test{}
		if located < MaxErrors && reread < MaxErrors {
			reread++
			for _, t := range explain.StoredFailedTests(run.Dir, &c) {
				found[t.ID] = t
			}
		}
		for i, id := range rep.Inventory.Failed {
			if i == maxFailingPerCheck {
				break
			}
			ft := failingTest{Check: c.CheckID, ID: id}
			if t, ok := found[id]; ok {
				ft.Message = t.Message
				if f := files.resolve(t.File, locationHint(rep.Format, id)); f != "" {
					ft.File, ft.Line = f, max(t.Line, 0)
				}
			}
			if ft.File == "" {
				ft.File = files.mentioned(string(id), ft.Message)
			}
			if ft.File != "" {
				located++
			}
			out = append(out, ft)
		}
	}
	return out
}

// locationHint is a directory path the test's id suggests: a Go package's
// import path, a JUnit classname's package (com.example.FooTest →
// com/example). It breaks ties between tracked files of the same name.
func locationHint(f report.Format, id report.TestID) string {
	prefix, _, ok := strings.Cut(string(id), "::")
	if !ok {
		return ""
	}
	switch f {
	case report.GoJSON:
		return prefix
	case report.JUnit:
		if i := strings.LastIndexByte(prefix, '.'); i > 0 {
			return strings.ReplaceAll(prefix[:i], ".", "/")
		}
	}
	return ""
}

// fileIndex is the candidate's tracked files. An annotation names a file
// only when it is one of them: a location a report gives (a basename, a
// path relative to a package, an absolute path inside the sandbox, a
// file:// URL) is mapped onto exactly one tracked file or dropped.
type fileIndex struct {
	all    map[string]bool
	byName map[string][]string
}

func newFileIndex(tracked []string) *fileIndex {
	x := &fileIndex{all: make(map[string]bool, len(tracked)), byName: map[string][]string{}}
	for _, p := range tracked {
		x.all[p] = true
		b := path.Base(p)
		x.byName[b] = append(x.byName[b], p)
	}
	return x
}

// resolve maps file onto one tracked path, or "". It tries the longest
// suffix of file's path components first, so /src/checkout/cart/x_test.go
// finds cart/x_test.go; several tracked files with the matching suffix are
// told apart by hint (the one whose directory ends hint's path), else the
// location is dropped rather than guessed.
func (x *fileIndex) resolve(file, hint string) string {
	file = strings.TrimPrefix(file, "file://")
	if file == "" || x == nil || len(x.all) == 0 {
		return ""
	}
	comps := strings.Split(strings.Trim(path.Clean("/"+file), "/"), "/")
	for k := len(comps); k >= 1; k-- {
		suffix := strings.Join(comps[len(comps)-k:], "/")
		var cands []string
		for _, p := range x.byName[comps[len(comps)-1]] {
			if p == suffix || strings.HasSuffix(p, "/"+suffix) {
				cands = append(cands, p)
			}
		}
		switch {
		case len(cands) == 1:
			return cands[0]
		case len(cands) > 1:
			var hinted []string
			for _, p := range cands {
				if d := path.Dir(p); hint != "" && d != "." && (hint == d || strings.HasSuffix(hint, "/"+d)) {
					hinted = append(hinted, p)
				}
			}
			if len(hinted) == 1 {
				return hinted[0]
			}
			if k == len(comps) && slices.Contains(cands, suffix) {
				return suffix // the whole location is itself a repository path
			}
			return ""
		}
	}
	return ""
}

// annotations returns every annotation the run warrants, one per cause
// (explain.Causes) and one per failing test, in the order they are worth
// GitHub's limited slots: missing and skipped tests first, then those with
// a file (they appear on the pull request's diff), then the rest; warnings
// after. A failing test's annotation is titled by its name, at its file and
// line, and stands for its check's tests-failed cause and the exit code
// folded into it.
func annotations(run *Run, failing []failingTest, files *fileIndex) []Annotation {
	var preservation, located, unlocated, warnings []Annotation
	// The causes of a check's failure (explain.Checks) go with its first
	// failing test, else its first other finding: one annotation says
	// what broke and why.
	causes := map[string]string{}
	for _, x := range explain.Checks(run.Dir, &run.Delivery) {
		if c := causeText(x); c != "" {
			causes[x.Check] += c
		}
	}
	take := func(check string) string {
		c := causes[check]
		delete(causes, check)
		return c
	}
	byCheck := map[string][]failingTest{}
	for _, t := range failing {
		byCheck[t.Check] = append(byCheck[t.Check], t)
	}
	add := func(a Annotation, first bool) {
		switch {
		case first:
			preservation = append(preservation, a)
		case a.File != "":
			located = append(located, a)
		default:
			unlocated = append(unlocated, a)
		}
	}
	var rest []explain.Cause
	for _, c := range explain.Causes(&run.Delivery) {
		tests := byCheck[c.Check]
		if !c.TestsFailed() || len(tests) == 0 {
			rest = append(rest, c)
			continue
		}
		for i, t := range tests {
			msg := "failed in check " + t.Check
			if c.ExitCode != 0 {
				msg += fmt.Sprintf(" (the check exited with code %d)", c.ExitCode)
			}
			if t.Message != "" {
				msg += ":\n" + t.Message
			}
			if i == 0 {
				msg += take(c.Check)
			}
			// A test id is one line: a line break in it is escaped, never
			// a line of the annotation.
			add(Annotation{Level: "error", File: t.File, Line: t.Line, Title: oneLine(string(t.ID)), Message: msg}, false)
		}
	}
	for _, c := range rest {
		f := c.Finding
		msg := findingText(f)
		if !c.Preservation() && f.Check != "" {
			msg += take(f.Check)
		}
		a := Annotation{Level: "error", Title: "runmill: " + findingTitle(f), Message: msg}
		if f.File != "" {
			if p := files.resolveFinding(f.File); p != "" {
				a.File, a.Line = p, max(f.Line, 0)
			}
		}
		if a.File == "" {
			a.File = files.mentioned(f.Message)
		}
		add(a, c.Preservation())
	}
	d := run.Delivery
	if run.BundlePath == "" {
		warnings = append(warnings, Annotation{Level: "warning", Title: "runmill: evidence unsigned",
			Message: "the evidence of this run is not signed, so nothing can verify it offline: pass the signing-key input (runmill evidence keygen makes one)"})
	}
	if !d.Manifest.GitHub.Consulted {
		warnings = append(warnings, Annotation{Level: "warning", Title: "runmill: GitHub not consulted",
			Message: "branch protection and remote checks were not consulted for this run: their required contexts are not part of the verdict"})
	}
	for _, p := range d.Manifest.IgnoredProposals {
		warnings = append(warnings, Annotation{Level: "warning", Title: "runmill: agent proposal ignored",
			Message: fmt.Sprintf("proposed check %q: %s", p.ID, p.Reason)})
	}
	for _, n := range d.Verdict.Notes {
		warnings = append(warnings, Annotation{Level: "warning", Title: "runmill: note", Message: n})
	}
	return slices.Concat(preservation, located, unlocated, warnings)
}

// mentioned is the one tracked file the texts name (a gofmt check's "not
// gofmt-formatted: cart/x.go", a test named by its file), or "": a word
// becomes a location only when it is exactly a tracked path, and only
// when one is named.
func (x *fileIndex) mentioned(texts ...string) string {
	if x == nil {
		return ""
	}
	var found string
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(t, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || strings.ContainsRune("\"'`()[]{},;<>", r)
		}) {
			w = strings.TrimRight(strings.TrimPrefix(w, "./"), ":.")
			// file:line as compilers and linters print it.
			if i := strings.IndexByte(w, ':'); i > 0 {
				w = w[:i]
			}
			if !x.all[w] {
				continue
			}
			if found != "" && found != w {
				return ""
			}
			found = w
		}
	}
	return found
}

// resolveFinding maps a finding's file (a repository path from runmill's
// own scan) onto a tracked file; without an index a clean relative path is
// kept as it is.
func (x *fileIndex) resolveFinding(file string) string {
	if x != nil && len(x.all) > 0 {
		return x.resolve(file, "")
	}
	if c := path.Clean(file); c == file && !path.IsAbs(c) && c != "." && !strings.HasPrefix(c, "../") && c != ".." {
		return c
	}
	return ""
}

// limit keeps the first MaxErrors errors and MaxWarnings warnings.
func limit(all []Annotation) (kept []Annotation, errs, warns int) {
	for _, a := range all {
		switch a.Level {
		case "error":
			errs++
			if errs <= MaxErrors {
				kept = append(kept, a)
			}
		default:
			warns++
			if warns <= MaxWarnings {
				kept = append(kept, a)
			}
		}
	}
	return kept, errs, warns
}

// findingTitle is the short name of a finding: its code or rule, and check.
func findingTitle(f record.Finding) string {
	name := string(f.Code)
	if name == "" {
		name = f.Rule
	}
	if f.Check != "" {
		name += " in check " + f.Check
	}
	return name
}

// findingText is a finding's message, its test ids (at most 20) and its fix.
func findingText(f record.Finding) string {
	var b strings.Builder
	b.WriteString(f.Message)
	if len(f.IDs) > 0 {
		b.WriteString(":")
		for i, id := range f.IDs {
			if i == maxIDs {
				fmt.Fprintf(&b, "\n  … and %d more (see the evidence bundle)", len(f.IDs)-maxIDs)
				break
			}
			b.WriteString("\n  ")
			b.WriteString(oneLine(string(id)))
		}
	}
	if f.Hint != "" {
		b.WriteString("\nFix: ")
		b.WriteString(f.Hint)
	}
	return b.String()
}

// causeText is what an annotation adds of an explanation: the recognised
// causes and, without failing tests (they have annotations of their own),
// the last lines the run printed. The lines are already escaped
// (printable); annotate escapes the message again, which leaves them as
// they are.
func causeText(x explain.Explanation) string {
	var b strings.Builder
	phase := explain.PhaseWords(x.Phase)
	for _, h := range x.Hints {
		fmt.Fprintf(&b, "\nCause%s (%s): %s\n  seen: %s", phase, h.Cause, h.Fix, h.Line)
	}
	for _, t := range []struct {
		name  string
		lines []string
	}{{"stderr", x.StderrTail}, {"stdout", x.StdoutTail}} {
		if len(t.lines) > 0 {
			fmt.Fprintf(&b, "\nLast lines of %s%s:", t.name, phase)
			for _, l := range t.lines {
				b.WriteString("\n  " + l)
			}
		}
	}
	return b.String()
}

// maxIDs bounds the test ids one finding lists in the summary and in an
// annotation; the bundle has all of them.
const maxIDs = 20
