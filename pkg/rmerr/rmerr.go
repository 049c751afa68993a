// Package rmerr is runmill's one typed error. Every failure a user can act on
// carries a stable code (the interface documented in docs/errors.md), the place
// it concerns (file, line, field) and what to do about it.
package rmerr

import (
	"errors"
	"fmt"
	"strings"
)

// Code is a stable, documented error code such as RM-VERIFY-004.
type Code string

// Codes of the specification (spec/verification.md) and of runmill's own
// subsystems. docs/errors.md lists each with cause and fix; a test keeps the
// two in step.
const (
	// VerifyNoRunnable: a required check has no runnable command and no remote result.
	VerifyNoRunnable Code = "RM-VERIFY-001"
	// VerifyTreeMoved: the checkout changed during a check; the result is invalidated.
	VerifyTreeMoved Code = "RM-VERIFY-002"
	// VerifySkipped: a test that passed at base is missing or skipped at the candidate
	// and is not declared exactly, or the declarations are stale/invalid.
	VerifySkipped Code = "RM-VERIFY-003"
	// VerifyManifest: the repository manifest exists but cannot be read or parsed.
	VerifyManifest Code = "RM-VERIFY-004"
	// VerifyDependencies: prepared dependencies are missing, stale or mutated.
	VerifyDependencies Code = "RM-VERIFY-005"
	// CINeverScheduled: a required remote context was never scheduled.
	CINeverScheduled Code = "RM-CI-002"

	// PolicyInvalid: the operator policy cannot be read or is invalid.
	PolicyInvalid Code = "RM-POLICY-001"
	// PolicyProposals: the agent proposal list cannot be read or is invalid.
	PolicyProposals Code = "RM-POLICY-002"

	// GitRevision: a revision does not exist or is not a commit.
	GitRevision Code = "RM-GIT-001"
	// GitRepository: the directory is not a git repository, or git failed.
	GitRepository Code = "RM-GIT-002"

	// ReportMalformed: a report is not well-formed for its declared format.
	ReportMalformed Code = "RM-REPORT-001"
	// ReportIdentity: a report's test identities are ambiguous (duplicate ids,
	// nested TAP plans, empty descriptions) so it cannot prove what ran.
	ReportIdentity Code = "RM-REPORT-002"
	// ReportLimit: a report exceeds a hard cap (bytes, depth, line, field, tests).
	ReportLimit Code = "RM-REPORT-003"
	// ReportFormat: the declared report format is not supported.
	ReportFormat Code = "RM-REPORT-004"
	// ReportEmpty: a report holds no test at all (zero tests is not a pass).
	ReportEmpty Code = "RM-REPORT-005"

	// Usage: the command line is wrong.
	Usage Code = "RM-USAGE-001"
)

// Error is a coded, located, actionable error.
type Error struct {
	Code  Code
	File  string // file the error concerns, if any
	Line  int    // 1-based line in File, if known
	Field string // dotted field path, if any (checks[2].report.path)
	Msg   string // what is wrong
	Hint  string // what to do
	Err   error  // underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (fix: ")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with code and message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with code wrapping err.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// WithHint sets the fix and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// At sets file and line and returns e.
func (e *Error) At(file string, line int) *Error {
	e.File, e.Line = file, line
	return e
}

// InField sets the field and returns e.
func (e *Error) InField(field string) *Error {
	e.Field = field
	return e
}

// CodeOf returns the code of the first *Error in err's chain (including every
// member of a joined error), or "" when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// List collects every finding of a validator; it is an error only when non-empty.
type List []*Error

func (l List) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes the members so errors.As and CodeOf see them.
func (l List) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list and the list otherwise.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
