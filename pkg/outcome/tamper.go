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
//   - Python test code as pytest loads it by default (IsPythonTestCode):
//     conftest.py at any depth, test_*.py and *_test.py. Helpers under
//     tests/ and plugin modules loaded through pytest_plugins or -p are not
//     scanned: measured, a tests/ directory also holds linter inputs and
//     shipped testing libraries, and a framework's own source sets
//     outcomes by design.
//   - Go test files (*_test.go), parsed with go/parser: a TestMain only
//     exists there.
//
// Python rules (a lexical scan: comments, strings and f-string text are
// skipped; code inside an f-string's braces is code; indentation gives a
// def its body):
//
//   - pytest-outcome: in a pytest hook (a def named pytest_…, and what is
//     nested in it), or anywhere in a conftest.py, an assignment to
//     .outcome (except the literal "failed": a harness may add failures),
//     .wasxfail, or .longrepr = None / "" (a failure without its text);
//     setattr(…, "outcome" | "wasxfail" | "longrepr", …); in a hook,
//     .force_result( (the hook's result replaced); and a definition of
//     pytest_pyfunc_call (returning True passes a test that never ran).
//   - pytest-deselect: in pytest_collection_modifyitems, items[…] = …,
//     items.remove/pop/clear(…), del items[…] — unless the value is a new
//     order (sorted(…), reversed(…), parts concatenated a + b) or the hook
//     announces the removal through pytest_deselected(…), which pytest
//     counts; a base test removed either way is missing at preservation.
//   - atexit: atexit.register (also as a decorator) and from atexit import
//     …: a handler runs after the runner wrote its report. Accepted: a
//     handler defined in the file that writes, renames, copies, runs,
//     imports or exits nothing (it only cleans up).
//   - os-exit: os._exit / posix._exit and from os import _exit: the process
//     ends with a code of the test code's choosing. Accepted: a non-zero
//     integer constant, a forked child (inside if pid == 0: or if not
//     pid: with pid from os.fork() or pty.fork()), and a name every
//     assignment of which is pytest_sessionfinish's exitstatus or a
//     constant.
//
// Go rules, in TestMain(m *testing.M), in init functions and in
// package-level initializers of a _test.go file (a function literal inside
// them included), and in a helper of the file given the *testing.M:
//
//   - go-output: an assignment to os.Stdout or os.Stderr (also *os.Stdout
//     = …), os.NewFile(…), and any Dup2/Dup3 call (syscall, x/sys/unix):
//     the test binary's output is what go test and test2json read; and, in
//     a file with a TestMain or an init, a string literal spelling
//     "--- PASS" or "--- FAIL".
//   - go-exit: os.Exit or syscall.Exit (and a helper's return) with a code
//     that is not m.Run()'s result. Accepted: m.Run() itself, a non-zero
//     integer constant (it adds a failure), a variable every assignment of
//     which is one of those (declared without a value and assigned later,
//     too; a constant after if code != 0 { os.Exit(code) }), a value
//     received from a channel every send on which is one, a call of a
//     function of the file given m whose every return is one, a function
//     of another file or package given m (held to this rule where it is
//     declared when that is a _test.go file the change edits), and any
//     exit before the first m.Run() in TestMain's own statements — not in
//     a closure or a defer — where no test has run (a test binary
//     re-executed as a tool).
//
// In both languages:
//
//   - report-path: a string literal in test code that is a check's
//     declared report path (as written, ./-prefixed, or — for a path with
//     a directory, not a bare file name — ending in /path):
//     test code has no honest business with the report the check reads.
//
// Size and reading: the same bounds as the focus scan (MaxFileBytes, 8 MiB
// by default; files opened through an os.Root, symbolic links never
// followed out of it). A test-code file longer than the cap, or one that
// cannot be read inside the checkout, fails closed ("unscanned"). A Go
// file that does not parse is noted: it does not build, so its TestMain
// never runs. Per file at most 100 facts are kept and 256 constructs are
// weighed for their honest forms; past that every construct counts.
//
// Known limits: a lexical scan follows no data flow — a name bound to
// atexit.register or to the report's outcome attribute under another name
// (r = setattr; k = "out" + "come"), a hook body in a helper function of a
// file the change does not edit, a report path built from parts
// (os.path.join("reports", "unit.xml")) are not seen; in Go, a helper
// outside _test.go files given m is trusted, output replaced by a
// function TestMain calls is not seen, and a TestMain that prints forged
// results without the spelled literals before it runs any test runs no
// test, which the zero-test and preservation rules weigh.

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
	names := repoPaths(files)
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
		// A bare file name (junit.xml) is matched only as written: a test
		// suite of a reporting tool names /tmp/x/junit.xml honestly, while
		// a path with a directory of its own (reports/unit.xml) is the
		// check's choice, named by nothing but the check.
		if l == p || strings.Contains(p, "/") && strings.HasSuffix(l, "/"+p) {
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
