// Package report turns the test reports that real runners write (JUnit XML,
// TAP, go test -json) into an Inventory: the exact test identities of spec § 4
// ("Canonical ids come from the report") with their status. Parsers are
// streaming, strict and bounded: anything the spec says fails closed returns a
// coded error (rmerr RM-REPORT-…), never a guessed inventory.
package report

import (
	"io"

	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
)

// Format is a supported report format, as written in checks.yaml report.format.
type Format string

const (
	JUnit  Format = "junit"
	TAP    Format = "tap"
	GoJSON Format = "go-json"
)

// Formats lists the supported formats in documentation order.
var Formats = []Format{JUnit, TAP, GoJSON}

// Identity selects how test ids are formed.
type Identity string

const (
	// IdentityDefault is the spec's rule: JUnit classname::name (or name), TAP
	// description, Go Package::Test.
	IdentityDefault Identity = ""
	// IdentitySuitePath is declared, never guessed (checks.yaml
	// report.identity: suite-path): JUnit ids include the enclosing testsuite
	// names, and TAP subtests are accepted with their ancestors joined by " > ".
	IdentitySuitePath Identity = "suite-path"
)

// Status of one test in a report.
type Status string

const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// TestID is a canonical test identity, unique within one report.
type TestID string

// Test is one identity and what the report says of it.
type Test struct {
	ID      TestID `json:"id"`
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"` // failure/skip message, capped (see Limits.MaxField)
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Flaky records Surefire flakyFailure/rerunFailure elements: the test
	// passed (or failed) only after reruns.
	Flaky bool `json:"flaky,omitempty"`
}

// Fault is a failure the report records outside any test identity: a Go
// package that failed with no failing test (panic, TestMain, timeout, build
// failure), a TAP "Bail out!". A report with faults never describes a pass.
type Fault struct {
	Scope   string `json:"scope"` // package name, suite, or "report"
	Message string `json:"message"`
}

// Counts are computed from the elements seen, never from summary attributes.
type Counts struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Inventory is the canonical content of one report.
type Inventory struct {
	Format   Format   `json:"format"`
	Identity Identity `json:"identity,omitempty"`
	SHA256   string   `json:"sha256"` // hex digest of the report bytes
	Bytes    int64    `json:"bytes"`
	Counts   Counts   `json:"counts"`
	Tests    []Test   `json:"tests"`
	Faults   []Fault  `json:"faults,omitempty"`
	// Claims are the summary counts the report states about itself (JUnit
	// tests=/failures=/errors=/skipped=); nil when it states none. They are
	// evidence, never the inventory: Counts come from the elements.
	Claims *Claims `json:"claims,omitempty"`
	// Duplicates lists, sorted, the ids that occur more than once, when
	// Options.AllowDuplicateIDs let the report through (a baseline): each
	// occurrence is in Tests and keeps authority by count. At most
	// MaxDuplicatesListed are listed; DuplicateCount is how many there are.
	Duplicates     []TestID `json:"duplicates,omitempty"`
	DuplicateCount int      `json:"duplicate_count,omitempty"`
	// Files lists, sorted, the files node:test loaded that defined no
	// test: node reports each as a passing top-level test named by its
	// path, and it is a file, not a test (see nodetest.go). Paths are
	// relative to Options.Root where they lie below it. At most
	// MaxFilesListed are listed; FileCount is how many there are.
	Files     []string `json:"files,omitempty"`
	FileCount int      `json:"file_count,omitempty"`
	// Notes are observations that do not invalidate the report (a tests=
	// attribute that disagrees with the elements counted, a field cut at
	// Limits.MaxField with the SHA-256 of the full text).
	Notes []string `json:"notes,omitempty"`
}

// MaxDuplicatesListed bounds Inventory.Duplicates: a report that repeats a
// million ids must not make a million-entry finding.
const MaxDuplicatesListed = 100

// MaxFilesListed bounds Inventory.Files the same way.
const MaxFilesListed = 100

// Claims are a report's own summary counts. A field is nil when no element
// in scope declares it (or declares something that is not a count).
//
// For each attribute separately, the outermost element that declares it
// speaks for everything inside it, and sibling declarations add up: a
// <testsuites failures="3"> root is the claim; without it, the failures= of
// the top-level <testsuite> elements are summed, descending further only
// below a suite that declares nothing. So a root total and the per-suite
// figures it totals (Surefire aggregates, jest-junit, go-junit-report,
// gotestsum) are never counted twice, and a report whose root carries no
// counts (pytest, node:test, Mocha xunit) is claimed by its suites.
type Claims struct {
	Tests    *int64 `json:"tests,omitempty"`
	Failures *int64 `json:"failures,omitempty"`
	Errors   *int64 `json:"errors,omitempty"`
	Skipped  *int64 `json:"skipped,omitempty"`
	// Scope says where the figures were read, e.g. "<testsuites>" or
	// "3 <testsuite> elements".
	Scope string `json:"scope"`
	// Shown is what the file shows failed, counted the way reporters count
	// failures=/errors=: every <failure>, <error>, <rerunFailure>,
	// <rerunError>, <flakyFailure> and <flakyError> in a testcase (a failed
	// testcase counts at least once, e.g. by status="failed"), plus each
	// suite-level <error>/<failure> (a Fault). Counting elements, not
	// tests, keeps a testcase with two <failure> elements, or Surefire's
	// reruns, from reading as a claim of something unseen.
	Shown int64 `json:"shown"`
}

// ClaimsMoreFailures compares the failures and errors a report claims
// (failures= plus errors=, as one sum because reporters disagree on which of
// the two an error goes in) with what it shows (Claims.Shown). more is true
// when the claim is larger: the file says something failed that no element
// shows, so it cannot describe a pass (issue #12, "summary counts are
// evidence"). A claim of fewer failures than shown is only recorded: the
// elements already fail the check. Formats without claims return false.
func (inv *Inventory) ClaimsMoreFailures() (claimed, seen int64, more bool) {
	c := inv.Claims
	if c == nil || c.Failures == nil && c.Errors == nil {
		return 0, 0, false
	}
	if c.Failures != nil {
		claimed += *c.Failures
	}
	if c.Errors != nil {
		claimed += *c.Errors
	}
	return claimed, c.Shown, claimed > c.Shown
}

// FirstLine returns the first non-blank line of msg, trimmed, escaped and
// bounded to max bytes ("…" included): how a finding quotes a failure
// message. It is pkg/printable's one escaping rule.
func FirstLine(msg string, max int) string { return printable.FirstLine(msg, max) }

// Limits are the hard caps every parser enforces. Exceeding one is an
// RM-REPORT-003 error naming the cap, never a crash or a hang.
type Limits struct {
	MaxBytes int64 // bytes per report file
	MaxDepth int   // element / subtest nesting depth
	MaxField int   // bytes kept per text field (message, name); longer text is cut and hashed
	MaxLine  int   // bytes per line for TAP and go-json
	MaxTests int   // test cases per report
}

// DefaultLimits are generous for real suites and small enough to bound memory.
// Bytes and tests per report are the run's one budget (pkg/budget): a report
// the parser accepts fits the signed statement.
var DefaultLimits = Limits{
	MaxBytes: budget.ReportBytes,
	MaxDepth: 64,
	MaxField: 16 << 10,
	MaxLine:  16 << 20,
	MaxTests: budget.IDsPerReport,
}

// Options configure Parse.
type Options struct {
	Identity Identity
	Limits   Limits // zero value means DefaultLimits
	// AllowDuplicateIDs is for baseline reports only (spec § 3, "broken
	// baselines keep authority"): an id that occurs more than once is kept
	// in Tests once per occurrence and listed in Inventory.Duplicates
	// instead of failing the report, so preservation counts it (a base
	// that passed X twice keeps two X). A candidate report must still have
	// unique ids (spec § 4): leave it false there.
	AllowDuplicateIDs bool
	// Root is the directory the test command saw its checkout at (the
	// sandbox's fixed /runmill/checkout; the current directory for a local
	// `report inventory`). node:test names files by absolute path; below
	// Root they are written relative to it, in ids and in Files, so an id
	// reads the same wherever the checkout lived. "" keeps every path as
	// the report wrote it.
	Root string
}

// Parse reads one report of the given format.
func Parse(r io.Reader, format Format, opts Options) (*Inventory, error) {
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits
	}
	switch format {
	case JUnit:
		return parseJUnit(r, opts)
	case TAP:
		return parseTAP(r, opts)
	case GoJSON:
		return parseGoJSON(r, opts)
	}
	return nil, rmerr.New(rmerr.ReportFormat, "unsupported report format %q", string(format)).
		InField("report.format").
		WithHint("use one of junit, tap, go-json; a generic JSON object has no standard test semantics and is rejected rather than guessed")
}
