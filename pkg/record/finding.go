package record

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// Finding is one reason a verification is not merge-ready, kept structured so
// that the evidence can record it and issue 5's verifier can recompute the
// Verdict from signed records and compare for equality.
//
// Code is set wherever rmerr defines a code for the reason (RM-VERIFY-001…005,
// RM-CI-002, RM-REPORT-…); Rule is always set and is the stable,
// machine-readable name of the rule that was broken, so reasons the
// specification gives no code (a timeout, zero tests, a focused run) are
// still told apart by machines.
type Finding struct {
	Code    rmerr.Code      `json:"code,omitempty"`
	Check   string          `json:"check,omitempty"`
	Rule    string          `json:"rule"`
	Message string          `json:"message"`
	IDs     []report.TestID `json:"ids,omitempty"`
	File    string          `json:"file,omitempty"`
	Line    int             `json:"line,omitempty"`
	Hint    string          `json:"hint,omitempty"`
}

// Err returns the finding as a coded error for the CLI's one error-to-exit-code
// mapping. The test ids are kept in the message so that the prose names them
// too.
func (f Finding) Err() *rmerr.Error {
	msg := f.Message
	if f.Check != "" {
		msg = "check " + strconv.Quote(f.Check) + ": " + msg
	}
	if len(f.IDs) > 0 {
		ids := make([]string, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = strconv.Quote(string(id))
		}
		msg += " [" + strings.Join(ids, ", ") + "]"
	}
	return &rmerr.Error{Code: f.Code, File: f.File, Line: f.Line, Msg: msg, Hint: f.Hint}
}

// Normalize returns a copy of fs in canonical order with each finding's IDs
// sorted and de-duplicated and exact duplicates removed. The Verdict is
// compared for equality after recomputation, so its order may depend on
// nothing but content. The input is not modified; the result is never nil.
func Normalize(fs []Finding) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if len(f.IDs) > 0 {
			ids := slices.Clone(f.IDs)
			slices.Sort(ids)
			f.IDs = slices.Compact(ids)
		} else {
			f.IDs = nil
		}
		out = append(out, f)
	}
	slices.SortFunc(out, compareFindings)
	return slices.CompactFunc(out, func(a, b Finding) bool { return compareFindings(a, b) == 0 })
}

func compareFindings(a, b Finding) int {
	return cmp.Or(
		cmp.Compare(a.Check, b.Check),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(a.Code, b.Code),
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Message, b.Message),
		slices.Compare(a.IDs, b.IDs),
		cmp.Compare(a.Hint, b.Hint),
	)
}
