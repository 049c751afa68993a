package outcome

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// The tamper scan (issue 25, docs/outcome.md § Tamper): a change's own test
// code runs inside the test process, where it can decide what the run
// reports — turn a failure into a pass, drop a failing test from the
// collection, rewrite the report after the runner wrote it, or exit 0
// whatever happened. The scan reads the files the change adds or edits
// (FindTamper's caller chooses them) and lists every such construct with
// file:line; each is a fact (record.Tamper) that verdict.Judge makes an
// outcome.tamper finding. Nothing is exempt inline: a suppression comment
// would be the agent's way out.
//
// Which files:
//
//   - Python test code — conftest.py at any depth, test_*.py, *_test.py,
//     and any .py under a directory named test, tests or testing — for
//     every Python rule. Every other .py file for the hook rules only: a
//     pytest plugin can live anywhere (pytest_plugins, -p), but only a
//     function named like a pytest hook is one.
//   - Go test files (*_test.go), parsed with go/parser: a TestMain only
//     exists there.
//
// Python rules (a lexical scan: comments, strings and f-string text are
// skipped; code inside an f-string's braces is code):
//
//   - pytest-outcome: in a pytest hook (a def named pytest_…, and what is
//     nested in it) of any file, or anywhere in Python test code, an
//     assignment to .outcome (except the literal "failed": a harness may
//     add failures), .wasxfail, or .longrepr = None / "" (a failure without
//     its text); setattr(…, "outcome" | "wasxfail" | "longrepr", …); and,
//     in a hook, .force_result( (the hook's result replaced).
//   - pytest-deselect: in pytest_collection_modifyitems, items[…] = …
//     (unless the value is sorted(…) or reversed(…): a new order drops
//     nothing), items.remove/pop/clear(…), del items[…]; and a call of
//     pytest_deselected(…) in a hook or test code.
//   - atexit: atexit.register in test code (also as a decorator) and from
//     atexit import …: a handler runs after the runner wrote its report.
//   - os-exit: os._exit / posix._exit in test code and from os import
//     _exit: the process ends with a code of the test code's choosing.
//
// Go rules, in TestMain(m *testing.M), in init functions and in
// package-level initializers of a _test.go file (a function literal inside
// them included):
//
//   - go-output: an assignment to os.Stdout or os.Stderr (also *os.Stdout
//     = …), os.NewFile(…), and any Dup2/Dup3 call (syscall, x/sys/unix):
//     the test binary's output is what go test and test2json read.
//   - go-exit (TestMain only): os.Exit or syscall.Exit with an argument
//     that is not m.Run()'s result: accepted are m.Run() itself, a
//     non-zero integer constant (it adds a failure), a variable every
//     assignment of which in TestMain is one of those (declared without a
//     value and assigned later, too), and a call of a function of the same
//     file, given m, whose every return is one of those. os.Exit(0) and
//     os.Exit(code) with code from anything else are tamper.
//
// In both languages:
//
//   - report-path: a string literal in test code that is a check's
//     declared report path (as written, ./-prefixed, or ending in /path):
//     test code has no honest business with the report the check reads.
//
// Size and reading: the same bounds as the focus scan (MaxFileBytes, 8 MiB
// by default; files opened through an os.Root, symbolic links never
// followed out of it). A test-code file longer than the cap, or one that
// cannot be read inside the checkout, fails closed ("unscanned"); any
// other is noted. A Go file that does not parse is noted: it does not
// build, so its TestMain never runs.
//
// Known limits: a lexical scan follows no data flow — a name bound to
// atexit.register or to the report's outcome attribute under another name
// (r = setattr; k = "out" + "come"), a hook body in a helper function of a
// file the change does not edit, a report path built from parts
// (os.path.join("reports", "unit.xml")) are not seen; in Go, a TestMain
// that exits through a function of another file of the package is
// tamper (the scan cannot follow it), and output replaced by a function
// TestMain calls is not seen.

// Tamper rules (record.Tamper.Rule).
const (
	TamperOutcome    = "pytest-outcome"
	TamperDeselect   = "pytest-deselect"
	TamperAtexit     = "atexit"
	TamperOSExit     = "os-exit"
	TamperGoOutput   = "go-output"
	TamperGoExit     = "go-exit"
	TamperReportPath = "report-path"
	TamperUnscanned  = "unscanned"
)

// TamperOptions configure the tamper scan; the zero value is the default.
type TamperOptions struct {
	// MaxFileBytes: the bytes read of one file (0 means
	// DefaultMaxFileBytes).
	MaxFileBytes int64
	// ReportPaths are the checks' declared report paths (repository
	// paths); a literal naming one is report-path tamper.
	ReportPaths []string
}

// TamperReport is the result of the tamper scan.
type TamperReport struct {
	Files   int             `json:"files"` // files scanned
	Tamper  []record.Tamper `json:"tamper"`
	Skipped []SkippedFile   `json:"skipped"` // noted, not failing
}

// maxTamperCode bounds the construct a fact quotes.
const maxTamperCode = 120

// IsTamperScanned reports whether the tamper scan reads a repository path:
// Python test code (IsPythonTestCode) or a Go test file.
func IsTamperScanned(p string) bool {
	return IsPythonTestCode(p) || strings.HasSuffix(p, "_test.go")
}

// IsPythonTestCode reports whether a repository path is Python test code
// as pytest loads it by default: conftest.py at any depth (hooks and
// fixtures), and the test modules of its default python_files, test_*.py
// and *_test.py.
func IsPythonTestCode(p string) bool {
	base := path.Base(p)
	return strings.HasSuffix(base, ".py") && (base == "conftest.py" || strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py"))
}

// isTamperTestCode: a file whose unscanned rest fails closed.
func isTamperTestCode(p string) bool {
	return IsPythonTestCode(p) || strings.HasSuffix(p, "_test.go")
}

// FindTamper scans the given files of the checkout at root (repository
// paths; those IsTamperScanned does not select are passed over). A file
// listed but absent is passed over too (a deleted path). Files are opened
// through an os.Root, so nothing outside root is read; a symbolic link is
// scanned as what it points to inside root, and one that leaves root is,
// for test code, unscanned (fails closed). A file that exists but cannot be
// read is an error: the scan would prove nothing.
func FindTamper(root string, files []string, opts TamperOptions) (*TamperReport, error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.TreeUnreadable, err, "opening checkout %s for the tamper scan", root).
			WithHint("the checkout must exist and be readable by runmill")
	}
	defer dir.Close()
	names := slices.Clone(files)
	for i, f := range names {
		names[i] = strings.TrimPrefix(path.Clean("/"+f), "/")
	}
	slices.Sort(names)
	names = slices.Compact(names)
	rep := newTamperReport()
	var errs []error
	for _, name := range names {
		if !IsTamperScanned(name) {
			continue
		}
		if err := tamperTracked(dir, name, opts, rep); err != nil {
			errs = append(errs, rmerr.Wrap(rmerr.TreeUnreadable, err, "scanning %s for tamper", name).
				WithHint("a file the change adds or edits must be readable in the checkout; a scan that did not read it proves nothing"))
		}
	}
	rep.sort()
	return rep, errors.Join(errs...)
}

func tamperTracked(dir *os.Root, name string, opts TamperOptions, rep *TamperReport) error {
	fi, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if fi.Mode().Type() == fs.ModeSymlink {
		if fi, err = dir.Stat(name); err != nil {
			rep.unscanned(name, "a symbolic link that cannot be read inside the checkout")
			return nil
		}
	}
	if !fi.Mode().IsRegular() {
		rep.unscanned(name, "not a regular file")
		return nil
	}
	f, err := dir.Open(name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	one, err := ScanTamper(f, name, opts)
	if err != nil {
		return err
	}
	rep.Files += one.Files
	rep.Tamper = append(rep.Tamper, one.Tamper...)
	rep.Skipped = append(rep.Skipped, one.Skipped...)
	return nil
}

// ScanTamper scans one file's content; file is its repository path, which
// decides the rules that apply. It reads at most MaxFileBytes+1 bytes.
func ScanTamper(r io.Reader, file string, opts TamperOptions) (*TamperReport, error) {
	max := cmp.Or(opts.MaxFileBytes, DefaultMaxFileBytes)
	if max <= 0 {
		max = DefaultMaxFileBytes
	}
	src, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	rep := newTamperReport()
	if int64(len(src)) > max {
		rep.unscanned(file, fmt.Sprintf("longer than the %d-byte cap of the tamper scan", max))
		return rep, nil
	}
	rep.Files = 1
	paths := reportPaths(opts.ReportPaths)
	switch {
	case IsPythonTestCode(file):
		rep.Tamper = scanPython(src, file, paths)
	case strings.HasSuffix(file, "_test.go"):
		hits, err := scanGo(src, file, paths)
		if err != nil {
			rep.Skipped = append(rep.Skipped, SkippedFile{file, "does not parse as Go, so it does not build and its TestMain never runs: " + printable.FirstLine(err.Error(), 200)})
		}
		rep.Tamper = hits
	}
	rep.sort()
	return rep, nil
}

// reportPaths normalizes declared report paths; the empty and "." are
// dropped (they name no file).
func reportPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p = strings.TrimPrefix(path.Clean("/"+p), "/"); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// namesReportPath returns the declared report path a literal names.
func namesReportPath(lit string, paths []string) string {
	if lit == "" || len(lit) > 4096 {
		return ""
	}
	l := strings.TrimPrefix(lit, "./")
	for _, p := range paths {
		if l == p || strings.HasSuffix(l, "/"+p) {
			return p
		}
	}
	return ""
}

func newTamperReport() *TamperReport {
	return &TamperReport{Tamper: []record.Tamper{}, Skipped: []SkippedFile{}}
}

func (r *TamperReport) unscanned(file, reason string) {
	if isTamperTestCode(file) {
		r.Tamper = append(r.Tamper, record.Tamper{File: file, Rule: TamperUnscanned, Code: reason})
		return
	}
	r.Skipped = append(r.Skipped, SkippedFile{file, reason})
}

func (r *TamperReport) sort() {
	slices.SortFunc(r.Tamper, func(a, b record.Tamper) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Code, b.Code), cmp.Compare(a.ReportPath, b.ReportPath))
	})
	r.Tamper = slices.Compact(r.Tamper)
	slices.SortFunc(r.Skipped, func(a, b SkippedFile) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Reason, b.Reason))
	})
}

// tamperCode is a construct as a fact quotes it: one line, escaped,
// bounded.
func tamperCode(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return printable.Text(strings.TrimSpace(string(b)), maxTamperCode)
}
