// Package report turns the test reports that real runners write (JUnit XML,
// TAP, go test -json) into an Inventory: the exact test identities of spec § 4
// ("Canonical ids come from the report") with their status. Parsers are
// streaming, strict and bounded: anything the spec says fails closed returns a
// coded error (rmerr RM-REPORT-…), never a guessed inventory.
package report

import (
	"io"

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
	// Notes are observations that do not invalidate the report (a tests=
	// attribute that disagrees with the elements counted, a field cut at
	// Limits.MaxField with the SHA-256 of the full text).
	Notes []string `json:"notes,omitempty"`
}

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
var DefaultLimits = Limits{
	MaxBytes: 512 << 20,
	MaxDepth: 64,
	MaxField: 16 << 10,
	MaxLine:  16 << 20,
	MaxTests: 2_000_000,
}

// Options configure Parse.
type Options struct {
	Identity Identity
	Limits   Limits // zero value means DefaultLimits
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
