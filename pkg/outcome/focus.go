package outcome

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/verdict"
)

// Focus detection (spec § 4 "Focused execution"): a .only left in a test
// file silently reduces the suite to one case and still exits 0.
//
// Which files: IsTestFile. What counts, in code only:
//
//   - X.only followed by "(", "." or "<" — it.only(, describe.only(,
//     test.only(, context.only(, suite.only(, QUnit.only(, it.only.each(,
//     test.describe.only( … whatever X is, because an alias (const d =
//     describe; d.only(…)) focuses just the same. "onlyOnce(" and spread
//     "...only(" are not markers.
//   - fit / fdescribe called as functions: fit(, fdescribe(, fit.each(. Not
//     benefit(, not model.fit(, not a declaration (function fit(…)).
//   - the node:test option { only: true } (also 'only' quoted, other options
//     before it, any whitespace).
//
// Comments and strings: the scanner lexes JavaScript/TypeScript (comments,
// '…' and "…" strings, `…${…}…` templates with nesting, regular-expression
// literals by the usual previous-token rule) and reports markers inside
// comments, strings, templates and regular expressions as Ignored — visible,
// with file:line, but not failing the build: "// don't use .only(" and a lint
// rule's test table are not focused runs. Where the lexer may have been
// wrong, it fails toward the alarm: an occurrence inside a string or regular
// expression that does not close on its line, or a comment or template that
// does not close before the end of the file, counts as Focused (in valid
// JavaScript none of those happen, so the lexer misread something). There is
// deliberately no inline suppression: an agent could use it to hide a focus.

// DefaultMaxFileBytes bounds one test file's read.
const DefaultMaxFileBytes = 8 << 20

// maxHits bounds the occurrences kept per file and list.
const maxHits = 1000

// FocusOptions configure focus detection; the zero value is the default.
type FocusOptions struct {
	// MaxFileBytes: larger files are skipped with a note (0 means
	// DefaultMaxFileBytes).
	MaxFileBytes int64
}

// Focus is one focus marker occurrence.
type Focus struct {
	File   string `json:"file"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in characters (bytes that start a UTF-8 sequence)
	Marker string `json:"marker"` // "it.only", ".only", "fit", "fdescribe", "only: true"
	// In is where the lexer found it: code, comment, string, template or
	// regexp.
	In string `json:"in"`
	// Note says why an occurrence outside code still counts.
	Note string `json:"note,omitempty"`
}

// SkippedFile is a test file that was not (fully) scanned, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// FocusReport is the result of focus detection.
type FocusReport struct {
	Files   int           `json:"files"`   // test files scanned
	Focused []Focus       `json:"focused"` // each one fails the check
	Ignored []Focus       `json:"ignored"` // in comments or strings; not failing
	Skipped []SkippedFile `json:"skipped"`
}

// Findings returns one finding per focused occurrence.
func (r *FocusReport) Findings() []verdict.Finding {
	out := make([]verdict.Finding, 0, len(r.Focused))
	for _, f := range r.Focused {
		msg := fmt.Sprintf("focused test marker %s at %s:%d:%d: the whole suite did not run, so the suite did not pass", f.Marker, f.File, f.Line, f.Column)
		if f.Note != "" {
			msg += " (" + f.Note + ")"
		}
		out = append(out, verdict.Finding{Rule: RuleFocused, Message: msg, File: f.File, Line: f.Line,
			Hint: "remove .only / fit / fdescribe / { only: true } from the test file"})
	}
	return out
}

var jsExtensions = []string{".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"}

var testDirs = set("__tests__", "__test__", "test", "tests", "spec", "specs", "e2e", "cypress")

// IsTestFile reports whether a repository path (slash-separated) is a
// JavaScript/TypeScript test file: one of the extensions .js .jsx .ts .tsx
// .mjs .cjs .mts .cts, and either
//
//   - a name with a test/spec part: foo.test.ts, foo.spec.js, foo.e2e.spec.tsx,
//     foo.cy.js (Cypress), foo-test.js, foo_test.mjs, foo-spec.js, foo_spec.js,
//     fooSpec.js (Jasmine), test-foo.js, test_foo.js, test.js, spec.js; or
//   - any file under a directory named __tests__, __test__, test, tests,
//     spec, specs, e2e or cypress.
//
// The set is the union of the default patterns of Jest, Vitest, Mocha,
// Jasmine, node:test, Playwright and Cypress, so that a repository relying on
// any runner's defaults is covered. Declaration files (.d.ts …), minified
// bundles (.min.js) and anything under node_modules/ are not test files: they
// hold no test code of the candidate's own.
func IsTestFile(p string) bool {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	base := path.Base(p)
	ext := path.Ext(base)
	if !slices.Contains(jsExtensions, ext) {
		return false
	}
	stem := strings.TrimSuffix(base, ext)
	if strings.HasSuffix(stem, ".d") || strings.Contains(base, ".min.") {
		return false
	}
	dirs := strings.Split(path.Dir(p), "/")
	if slices.Contains(dirs, "node_modules") {
		return false
	}
	for _, d := range dirs {
		if testDirs[d] {
			return true
		}
	}
	parts := strings.Split(stem, ".")
	for _, part := range parts[1:] {
		if part == "test" || part == "spec" || part == "cy" {
			return true
		}
	}
	switch {
	case stem == "test" || stem == "spec":
		return true
	case strings.HasSuffix(stem, "-test"), strings.HasSuffix(stem, "_test"),
		strings.HasSuffix(stem, "-spec"), strings.HasSuffix(stem, "_spec"),
		strings.HasSuffix(stem, "Spec") && len(stem) > 4,
		strings.HasPrefix(stem, "test-"), strings.HasPrefix(stem, "test_"):
		return true
	}
	return false
}

// FindFocus scans the tracked test files under root. tracked are
// repository paths as `git ls-files` prints them; only regular files are
// read (a tracked symbolic link is skipped with a note, never followed: the
// candidate tree is untrusted), through an os.Root so nothing outside root
// is opened. Files larger than the cap or binary are skipped with a note. A
// file that cannot be read is an error: the caller cannot claim the
// candidate has no focus.
func FindFocus(root string, tracked []string, opts FocusOptions) (*FocusReport, error) {
	opts = opts.withDefaults()
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening checkout for focus detection: %w", err)
	}
	defer dir.Close()

	files := slices.Clone(tracked)
	slices.Sort(files)
	files = slices.Compact(files)
	rep := newFocusReport()
	var errs []error
	for _, name := range files {
		if !IsTestFile(name) {
			continue
		}
		if err := scanTracked(dir, name, opts, rep); err != nil {
			errs = append(errs, err)
		}
	}
	rep.sort()
	return rep, errors.Join(errs...)
}

func scanTracked(dir *os.Root, name string, opts FocusOptions, rep *FocusReport) error {
	fi, err := dir.Lstat(name)
	if err != nil {
		return fmt.Errorf("reading test file %s: %w", name, err)
	}
	switch {
	case fi.Mode().Type() == fs.ModeSymlink:
		rep.Skipped = append(rep.Skipped, SkippedFile{name, "symbolic link, not followed (its target is scanned if it is a tracked test file)"})
		return nil
	case !fi.Mode().IsRegular():
		rep.Skipped = append(rep.Skipped, SkippedFile{name, "not a regular file"})
		return nil
	case fi.Size() > opts.MaxFileBytes:
		rep.Skipped = append(rep.Skipped, SkippedFile{name, fmt.Sprintf("%d bytes, larger than the %d-byte cap; not scanned", fi.Size(), opts.MaxFileBytes)})
		return nil
	}
	f, err := dir.Open(name)
	if err != nil {
		return fmt.Errorf("reading test file %s: %w", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return fmt.Errorf("reading test file %s: the file changed while it was being opened", name)
	}
	one, err := ScanFocus(f, name, opts)
	if err != nil {
		return err
	}
	rep.Files += one.Files
	rep.Focused = append(rep.Focused, one.Focused...)
	rep.Ignored = append(rep.Ignored, one.Ignored...)
	rep.Skipped = append(rep.Skipped, one.Skipped...)
	return nil
}

// ScanFocus scans one file's content. It reads at most MaxFileBytes+1
// bytes; a file that is longer is reported as scanned only in part, and one
// with a NUL byte in its first 8000 bytes as binary (with no occurrences).
func ScanFocus(r io.Reader, file string, opts FocusOptions) (*FocusReport, error) {
	opts = opts.withDefaults()
	l := &lexer{
		r:    bufio.NewReader(io.LimitReader(r, opts.MaxFileBytes+1)),
		file: file, line: 1, col: 1, max: opts.MaxFileBytes,
	}
	rep := newFocusReport()
	if err := l.run(); err != nil {
		return nil, fmt.Errorf("reading test file %s: %w", file, err)
	}
	switch {
	case l.binary:
		rep.Skipped = append(rep.Skipped, SkippedFile{file, "binary (NUL byte in the first 8000 bytes); not scanned"})
		return rep, nil
	case l.truncated:
		rep.Skipped = append(rep.Skipped, SkippedFile{file, fmt.Sprintf("longer than the %d-byte cap; only the first %d bytes were scanned", opts.MaxFileBytes, opts.MaxFileBytes)})
	}
	rep.Files = 1
	rep.Focused, rep.Ignored = l.focused, l.ignored
	if l.dropped > 0 {
		rep.Skipped = append(rep.Skipped, SkippedFile{file, fmt.Sprintf("%d further occurrences not listed (cap %d per file)", l.dropped, maxHits)})
	}
	rep.sort()
	return rep, nil
}

func (o FocusOptions) withDefaults() FocusOptions {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

func newFocusReport() *FocusReport {
	return &FocusReport{Focused: []Focus{}, Ignored: []Focus{}, Skipped: []SkippedFile{}}
}

func (r *FocusReport) sort() {
	byPos := func(a, b Focus) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Marker, b.Marker))
	}
	slices.SortFunc(r.Focused, byPos)
	slices.SortFunc(r.Ignored, byPos)
	slices.SortFunc(r.Skipped, func(a, b SkippedFile) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Reason, b.Reason))
	})
}
