// Package explain says why a check run did not pass, in words: the causes
// runmill recognises in what it printed and in its report's failure
// messages, and the lines of its harness. The console, the job summary, the
// annotations, inspect and the doctor all read it from here, so they never
// disagree.
package explain

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 14: every refusal names its cause where a person looks first. The
// verdict's findings say which rule a run broke ("the check exited with code
// 1"); the cause is usually in what the check printed, or in the failure
// messages of its report. Checks gathers both for the console's Why: block,
// the job summary, the annotations and inspect alike — one place, so the
// four never disagree — and Diagnose names the causes runmill recognises.

// Explanation says, for one check run that did not pass (or a required
// check whose coverage is unproven), why, in words.
type Explanation struct {
	Check    string          `json:"check"`
	Phase    record.Phase    `json:"phase"`
	Status   record.Status   `json:"status"`
	Coverage record.Coverage `json:"coverage"`
	// FailedTests are the report's first verdict.MaxNamedFailures failed
	// tests with the first line of their message; FailedCount counts all.
	FailedTests []record.FailedTest `json:"failed_tests,omitempty"`
	FailedCount int                 `json:"failed_count,omitempty"`
	// StderrTail and StdoutTail are the last lines the check printed, kept
	// when it failed without a report that names failed tests: escaped,
	// each bounded, at most MaxTailLines.
	StderrTail []string `json:"stderr_tail,omitempty"`
	StdoutTail []string `json:"stdout_tail,omitempty"`
	// Hints are the causes runmill recognises in the output and messages.
	Hints []Hint `json:"hints,omitempty"`
	// Override: the operator policy's definition replaced the
	// repository's, and these of the repository's fields no longer apply.
	Override []string `json:"override,omitempty"`
	// Unproven says, for a required candidate run without a proven report,
	// what cannot be detected and how to declare a report.
	Unproven string `json:"unproven,omitempty"`
}

// Hint is one recognised cause: the line that shows it and what to do.
type Hint struct {
	Cause string `json:"cause"`
	Line  string `json:"line"` // escaped, bounded
	Fix   string `json:"fix"`
}

// Bounds of what an explanation quotes.
const (
	MaxTailLines = 12
	maxLineBytes = 240
	// tailBytes is how much of a stored stream's end is read.
	tailBytes = 64 << 10
)

// The causes Diagnose recognises (Hint.Cause).
const (
	CauseReadOnly    = "read-only checkout"
	CauseOffline     = "dependency lookup with the network off"
	CauseNoNetwork   = "no network"
	CauseNoCommand   = "command not found"
	CauseLockfile    = "lockfile write"
	CauseUnknownFlag = "flag rejected by the tests' own argument parsing"
	CausePyImport    = "Python module not importable"
)

type pattern struct {
	cause string
	re    *regexp.Regexp
	fix   string
}

// patterns are checked in order; each cause is reported once, with the
// first line that shows it. They were taken from real runner output (the
// table test quotes each).
var patterns = []pattern{
	{CauseLockfile, regexp.MustCompile(`(?i)cannot (create|update|write) the lock ?file|because --locked was passed|lock ?file .*needs to be updated|package-lock\.json.* (not in sync|out of sync)|lockfile.*(frozen|would be modified)`),
		"the tool wants to write its lockfile, but the checkout is read-only: commit the lockfile (for a crate: remove Cargo.lock from .gitignore, run cargo generate-lockfile and commit it) and keep it current"},
	{CauseReadOnly, regexp.MustCompile(`(?i)read-only file system|\bEROFS\b`),
		"the checkout is read-only during verification; write scratch files under $TMPDIR"},
	{CauseReadOnly, regexp.MustCompile(`(?i)\b(open|mkdir|create|creat|write|rename|symlink) ['"]?(` + regexp.QuoteMeta(sandbox.CheckoutPath) + `/|(\./)?[\w.-]+/)[^ :'"]*['"]?: (no such file or directory|permission denied)|EACCES: permission denied, (open|mkdir) '` + regexp.QuoteMeta(sandbox.CheckoutPath) + `|(permission denied|no such file or directory): '` + regexp.QuoteMeta(sandbox.CheckoutPath) + `/`),
		"a file in the checkout could not be opened or created: if the check creates it (or its directory), the checkout is read-only during verification; write scratch files under $TMPDIR"},
	{CauseOffline, regexp.MustCompile(`(?i)module lookup disabled by GOPROXY=off|GOFLAGS=-mod=mod|cannot find module providing package|missing go\.sum entry|ENOTCACHED|no matching distribution found|could not find a version that satisfies|no matching package named|failed to (download|get|load source for)|attempting to make an HTTP request, but --offline|Cannot find module '[^./]|ERR_MODULE_NOT_FOUND`),
		"a module or package was looked up with the network off: declare the check's dependencies: (docs/dependencies.md), or install them into the toolchain the sandbox sees"},
	// A Python import error is as often the project's own package (a src/
	// layout pytest is not told about) as a dependency the sandbox lacks:
	// the fix names both (issue 27).
	{CausePyImport, regexp.MustCompile(`ModuleNotFoundError: No module named|ImportError: cannot import name|ImportError while importing test module`),
		"Python could not import a module: if it is the project's own code in a src/ layout, pytest does not put src/ on the path — add pythonpath = [\"src\"] under [tool.pytest.ini_options] in pyproject.toml (pytest 7 or later), or run PYTHONPATH=src python3 -m pytest; if it is a third-party package, install it into the interpreter the sandbox sees (the network is off during verification)"},
	{CauseNoNetwork, regexp.MustCompile(`(?i)network is unreachable|temporary failure in name resolution|could not resolve host|name or service not known|getaddrinfo (ENOTFOUND|EAI_AGAIN)|\bEAI_AGAIN\b|no such host|ENETUNREACH|ECONNREFUSED`),
		"the sandbox has no network: a check must not reach the network (fetch what it needs before, as prepared dependencies)"},
	{CauseNoCommand, regexp.MustCompile(`(?i)command not found|: not found$|executable file not found in \$PATH|env: '?[\w.-]+'?: no such file or directory|exec: "[^"]+": (executable file not found|no such file)`),
		"the toolchain is not visible in the sandbox: bind its directory with sandbox.host_paths in the operator policy (docs/sandbox.md), or use an image"},
	{CauseUnknownFlag, regexp.MustCompile(`(?i)(unknown|unrecognized|unrecognised) (option|argument|flag)s?:? ['"]?--?\w`),
		"a flag in the check's command reached the tests' own argument parsing (a test that reads process.argv or sys.argv): remove the flag from run:, or pass it so the tests do not see it"},
}

// Diagnose returns the causes runmill recognises in text (a check's output,
// its tests' failure messages), each once, in the order of the patterns.
func Diagnose(text string) []Hint {
	var out []Hint
	seen := map[string]bool{}
	lines := strings.Split(text, "\n")
	for _, p := range patterns {
		if seen[p.cause] {
			continue
		}
		for _, l := range lines {
			if p.re.MatchString(strings.TrimRight(l, "\r")) {
				seen[p.cause] = true
				out = append(out, Hint{Cause: p.cause, Line: printable.FirstLine(l, maxLineBytes), Fix: p.fix})
				break
			}
		}
	}
	return out
}

// Checks explains every check run of d that did not pass, and every
// required candidate run whose coverage is unproven, reading the stored
// outputs from the run directory dir ("" when there is none: the tails are
// then left out). The order is d.Checks'.
func Checks(dir string, d *evidence.Delivery) []Explanation {
	var out []Explanation
	conflicts := map[string][]string{}
	for _, c := range d.Manifest.Conflicts {
		if c.Winner == discovery.DefinedByOperator {
			conflicts[c.ID] = c.Fields
		}
	}
	for i := range d.Checks {
		r := &d.Checks[i]
		if r.Executor != record.Orchestrator {
			continue
		}
		spec, _ := d.Manifest.Check(r.CheckID)
		unproven := r.Phase == record.Candidate && spec.Required && r.Coverage != record.Proven
		if r.Status == record.Passed && !unproven {
			continue
		}
		x := Explanation{Check: r.CheckID, Phase: r.Phase, Status: r.Status, Coverage: r.Coverage, Override: conflicts[r.CheckID]}
		var said strings.Builder
		if rep := r.Report; rep != nil && rep.Inventory != nil {
			x.FailedTests, x.FailedCount = rep.FailedTests, len(rep.Inventory.Failed)
			if len(x.FailedTests) == 0 { // a record from before failed_tests: its ids
				for _, id := range rep.Inventory.Failed[:min(len(rep.Inventory.Failed), verdict.MaxNamedFailures)] {
					x.FailedTests = append(x.FailedTests, record.FailedTest{ID: id})
				}
			}
			for _, t := range rep.FailedTests {
				said.WriteString(t.Message + "\n")
			}
			for _, f := range rep.Faults {
				said.WriteString(f + "\n")
			}
		}
		// The output says why only when the report does not: no usable
		// report, or a failing exit or timeout its tests do not explain. A
		// run refused for a missing or skipped test printed nothing about it.
		// Failed tests explain nothing when every message is a runner's
		// placeholder: node:test records a file that failed to load as one
		// test named by its path with "test failed", and prints the error
		// only to its output.
		if r.Started && slices.ContainsFunc(x.FailedTests, isVague) {
			x.FailedTests = loadErrors(x.FailedTests, slices.Concat(tail(dir, r.Stdout), tail(dir, r.Stderr)))
		}
		noReport := r.Report == nil || r.Report.Inventory == nil
		vague := x.FailedCount > 0 && !slices.ContainsFunc(x.FailedTests, informative)
		if r.Status != record.Passed && r.Started && (x.FailedCount == 0 || vague) && (noReport || r.ExitCode != 0 || r.TimedOut || vague) {
			errTail, outTail := tail(dir, r.Stderr), tail(dir, r.Stdout)
			for _, l := range slices.Concat(errTail, outTail) {
				said.WriteString(l + "\n")
			}
			pick := last
			if vague {
				pick = errorLines // the error, not the runner's closing summary
			}
			x.StderrTail, x.StdoutTail = escapeAll(pick(errTail, MaxTailLines)), escapeAll(pick(outTail, MaxTailLines))
		}
		x.Hints = Diagnose(said.String())
		if unproven {
			x.Unproven = unprovenText(r, spec)
		}
		out = append(out, x)
	}
	return out
}

// unprovenText says what an unproven required check cannot detect, and how
// to make it proven.
func unprovenText(r *record.CheckRun, spec discovery.Check) string {
	if !r.Started {
		// Nothing was run, so nothing could write the report: the command
		// is not at fault, what stopped it is (issue 27).
		cause := "it was refused before it ran"
		for _, f := range r.Findings {
			if f.Code != "" {
				cause = string(f.Code) + " under Why: stopped it"
				break
			}
		}
		return fmt.Sprintf("the check never started (%s), so no report was written and a deleted or skipped test cannot be detected for this check; fix that cause and start a fresh run", cause)
	}
	if spec.Report != nil {
		for _, f := range r.Findings {
			if strings.HasPrefix(string(f.Code), "RM-REPORT-") {
				// Written, but refused: the command is not the fix.
				return fmt.Sprintf("the declared report %s was written but refused (%s under Why:), so a deleted or skipped test cannot be detected for this check; fix what that says",
					printable.Text(spec.Report.Path, maxLineBytes), f.Code)
			}
		}
		return fmt.Sprintf("the declared report %s was not usable, so a deleted or skipped test cannot be detected for this check; make the command write it", printable.Text(spec.Report.Path, maxLineBytes))
	}
	return "no report is declared, so a deleted or skipped test cannot be detected for this check; declare one: " + ReporterAdvice(r.Command)
}

// reporters is init's reporter table in one line each (docs/reports.md
// has the details): how a runner writes a report runmill parses.
var reporters = []struct {
	word   *regexp.Regexp
	advice string
}{
	{runnerWord(`go test`), "go test -json ./... > reports/go.json with report: {path: reports/go.json, format: go-json}"},
	{runnerWord(`pytest`), "pytest --junitxml=reports/pytest.xml with report: {path: reports/pytest.xml, format: junit}"},
	{runnerWord(`node --test`), "node --test --test-reporter=junit --test-reporter-destination=reports/node-test.xml with report: {path: reports/node-test.xml, format: junit, identity: suite-path}"},
	{runnerWord(`vitest`), "vitest run --reporter=junit --outputFile.junit=reports/vitest.xml with report: {path: reports/vitest.xml, format: junit}"},
	{runnerWord(`jest`), "jest with the jest-junit reporter (JEST_JUNIT_OUTPUT_FILE=reports/jest.xml jest --reporters=default --reporters=jest-junit) and report: {path: reports/jest.xml, format: junit}"},
	{runnerWord(`mocha`), "mocha --reporter xunit --reporter-option output=reports/mocha.xml with report: {path: reports/mocha.xml, format: junit}"},
	{runnerWord(`cargo`), "cargo test's JUnit formatter as runmill init writes it (the cargo template) with report: {path: reports/cargo.xml, format: junit}"},
}

// runnerWord matches a runner's name as a word of a command: "cargo test"
// is not "go test".
func runnerWord(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s/;&|(])` + regexp.QuoteMeta(name) + `($|\s)`)
}

// ReporterAdvice says how the runner command uses writes a report, from
// init's reporter table; docs/reports.md for a runner it does not know.
func ReporterAdvice(command string) string {
	for _, r := range reporters {
		if r.word.MatchString(command) {
			return r.advice + " (docs/reports.md)"
		}
	}
	return "the runner's JUnit, TAP or go test -json reporter, written to a path under report: (docs/reports.md; runmill init writes one for go, node:test, vitest, jest, mocha, pytest and cargo)"
}

// tail returns the last lines of a stored stream, unescaped; nil when it
// cannot be read (no run directory, an address the store never writes).
func tail(dir string, o record.Output) []string {
	p, ok := evidence.ArtifactPath(filepath.Join(dir, "artifacts"), o.Artifact)
	if dir == "" || !ok || o.ArtifactSize == 0 {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-tailBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, tailBytes))
	if err != nil {
		return nil
	}
	s := string(b)
	if off > 0 { // the first line is cut: drop it
		if _, rest, ok := strings.Cut(s, "\n"); ok {
			s = rest
		}
	}
	var lines []string
	for l := range strings.Lines(s) {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, "\r\n"))
		}
	}
	return lines
}

func isVague(t record.FailedTest) bool { return !informative(t) }

// loadErrors gives each failed test named by a file that only "failed"
// the error its output states for that file: node:test records a test
// file that throws while loading as one test named by its path, with the
// message "test failed", and its spec reporter prints the file's own
// error just before the "✖ PATH" line (issue 27). The report's messages
// are not modified; a test whose error is not found keeps its message.
func loadErrors(ts []record.FailedTest, output []string) []record.FailedTest {
	out := slices.Clone(ts)
	for n, t := range out {
		id := string(t.ID)
		i := strings.LastIndex(id, "::")
		if informative(t) || i < 0 || !strings.HasPrefix(id[i+2:], "/") {
			continue
		}
		if e := loadError(output, id[i+2:]); e != "" {
			out[n].Message = "the file did not load: " + e
		}
	}
	return out
}

// statesError matches a line that states a JavaScript error, as node
// prints an uncaught one: "Error: …", "TypeError: …", "Error
// [ERR_MODULE_NOT_FOUND]: …" — not the source line that threw it.
var statesError = regexp.MustCompile(`^[\w.]*(Error|Exception)( \[[\w]+\])?: `)

// loadError is the error output states for file: the first line stating
// one among the unindented lines just before the first "✖ file" result
// line, back to the previous result line.
func loadError(output []string, file string) string {
	end := slices.IndexFunc(output, func(l string) bool {
		rest, ok := strings.CutPrefix(l, "✖ "+file)
		return ok && (rest == "" || rest[0] == ' ')
	})
	if end < 0 {
		return ""
	}
	start := end
	for start > 0 && !isResultLine(output[start-1]) {
		start--
	}
	for _, l := range output[start:end] {
		if statesError.MatchString(l) {
			return printable.FirstLine(l, maxLineBytes)
		}
	}
	return ""
}

// isResultLine: a line of node's spec reporter that reports a test or a
// summary figure, indented or not.
func isResultLine(l string) bool {
	l = strings.TrimLeft(l, " ")
	for _, g := range []string{"✔ ", "✖ ", "﹣ ", "▶ ", "ℹ "} {
		if strings.HasPrefix(l, g) {
			return true
		}
	}
	return false
}

// informative: a failed test whose message says more than that it failed.
func informative(t record.FailedTest) bool {
	m := strings.TrimSpace(t.Message)
	return m != "" && !strings.EqualFold(m, "test failed") && !strings.EqualFold(m, "failed")
}

// errorLine matches the lines of an output that state an error (Node's
// `Error: Cannot find module …`, Python's `ModuleNotFoundError: …`, Go's
// `panic:`), as opposed to a runner's summary.
var errorLine = regexp.MustCompile(`(^|\s)(\w*(Error|Exception)\b|panic:|error:|ERR_[A-Z_]+)`)

// errorLines returns up to n lines of ls that state an error, the last n
// lines when none does.
func errorLines(ls []string, n int) []string {
	var out []string
	for _, l := range ls {
		if errorLine.MatchString(l) && len(out) < n {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return last(ls, n)
	}
	return out
}

func last(ls []string, n int) []string {
	if len(ls) > n {
		return ls[len(ls)-n:]
	}
	return ls
}

func escapeAll(ls []string) []string {
	if len(ls) == 0 {
		return nil
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = printable.Text(strings.ReplaceAll(l, "\t", "    "), maxLineBytes)
	}
	return out
}
