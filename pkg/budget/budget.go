// Package budget is the one size budget signer and verifier agree on (issue
// #13, S1): how many bytes a report may have, how many test ids a report
// and a run may record, and how large the statement and the signed bundle
// may grow. runmill refuses a report that would break the budget before it
// holds it, and `runmill evidence verify` refuses a bundle over BundleBytes
// by default — both read the numbers here, so runmill never signs a bundle
// the default verifier refuses for size.
//
// The arithmetic, from the verifier's cap down:
//
//	BundleBytes     512 MiB   evidence.DefaultLimits.MaxBundleBytes
//	EnvelopeBytes     1 MiB   bundle JSON around the payload: media types,
//	                          signature, key hint (a few hundred bytes used)
//	StatementBytes  (BundleBytes − EnvelopeBytes) / 4 × 3 = 383.25 MiB
//	                          the payload is base64 in the bundle: 4 bytes
//	                          per 3 (padding fits in the envelope reserve)
//	OtherBytes       64 MiB   everything in a statement but test ids
//	                          (manifest, probe, check records, notes,
//	                          messages, the ≤ 20 named failures and ≤ 100
//	                          duplicates a record keeps)
//	IDCopies          4       how often one admitted id can appear in the
//	                          statement: once in its inventory, and three
//	                          times when a finding names it (the run's
//	                          observation, its judged finding, the
//	                          verdict's list) — a test the candidate lost
//	IDBytesPerRun   (StatementBytes − OtherBytes) / IDCopies = 79.81 MiB
//	                          the sum of IDCost over every admitted id
//
// IDCost is what one id costs in the canonical (RFC 8785) statement: its
// escaped bytes, two quotes and a comma. So a run of two million ids of up
// to 38 bytes fits, and a run with longer ids fits fewer of them.
//
// IDsPerReport bounds the parser (pkg/report DefaultLimits.MaxTests), so a
// report is cut off while it is parsed, before memory grows with it;
// IDsPerRun and IDBytesPerRun are what a Run admits across a run's check
// runs (a baseline and a candidate of one check of IDsPerReport fit).
package budget

import (
	"sync"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/rmerr"
)

const (
	// BundleBytes is the largest signed bundle: what `evidence verify`
	// accepts by default.
	BundleBytes int64 = 512 << 20
	// EnvelopeBytes is reserved in a bundle for everything but the base64
	// payload.
	EnvelopeBytes int64 = 1 << 20
	// StatementBytes is the largest statement (DSSE payload) whose bundle
	// fits BundleBytes.
	StatementBytes = (BundleBytes - EnvelopeBytes) / 4 * 3
	// OtherBytes is reserved in a statement for everything but test ids.
	OtherBytes int64 = 64 << 20
	// IDCopies is how many times one admitted id can appear in a statement.
	IDCopies = 4
	// IDBytesPerRun bounds the sum of IDCost over a run's admitted ids.
	IDBytesPerRun = (StatementBytes - OtherBytes) / IDCopies
	// IDsPerReport bounds the test ids of one report (the parsers' MaxTests).
	IDsPerReport = 1_000_000
	// IDsPerRun bounds the test ids of all a run's reports together:
	// the baseline and candidate reports of one check at IDsPerReport.
	IDsPerRun = 2 * IDsPerReport
	// ReportBytes bounds one report file (the parsers' MaxBytes). A report
	// is measured against it before a byte is read or stored.
	ReportBytes int64 = 512 << 20
	// Renames and RenameBytes bound the renames a statement records
	// between its two commits (record.Renames: git's rename detection,
	// issue 24), out of OtherBytes: at most this many file renames, whose
	// paths take at most this many bytes. git's listing is read as a
	// stream and the rest is counted, not kept.
	Renames           = 20_000
	RenameBytes int64 = 4 << 20
)

// IDCost is what id costs in the canonical statement: its bytes as RFC 8785
// writes them ('"' and '\\' escaped in two bytes, control characters in two
// or six, a byte that is not UTF-8 as the three of U+FFFD), two quotes and a
// comma.
func IDCost(id string) int64 {
	n := int64(3)
	for i := 0; i < len(id); {
		c := id[i]
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			n, i = n+2, i+1
		case c < 0x20:
			n, i = n+6, i+1
		case c < utf8.RuneSelf:
			n, i = n+1, i+1
		default:
			r, size := utf8.DecodeRuneInString(id[i:])
			if r == utf8.RuneError && size == 1 {
				n += 3
			} else {
				n += int64(size)
			}
			i += size
		}
	}
	return n
}

// Run is one run's account of admitted test ids; safe for concurrent use
// by the run's check runs. The zero value is an empty account.
type Run struct {
	mu    sync.Mutex
	ids   int64
	bytes int64
}

// Admit records a report's ids against the run's budget, or refuses them
// all with an RM-REPORT-003 error naming the cap and the fix (and records
// nothing). what names the report in the message ("check unit (candidate)").
func (r *Run) Admit(what string, ids int, cost int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ids > IDsPerReport:
		return rmerr.New(rmerr.ReportLimit, "%s: the report records %d test ids, more than the %d a report may (budget.IDsPerReport)", what, ids, IDsPerReport).
			WithHint("split the suite into several checks, each with its own report")
	case r.ids+int64(ids) > IDsPerRun:
		return rmerr.New(rmerr.ReportLimit, "%s: the report's %d test ids would bring the run to %d, more than the %d a run may record (budget.IDsPerRun); %d are left",
			what, ids, r.ids+int64(ids), IDsPerRun, IDsPerRun-r.ids).
			WithHint("verify fewer or smaller suites per run (split the manifest with verify --shard), or split the suite")
	case r.bytes+cost > IDBytesPerRun:
		return rmerr.New(rmerr.ReportLimit, "%s: the report's test ids take %d bytes in the statement, which would bring the run to %d, more than the %d bytes a run may (budget.IDBytesPerRun); %d are left",
			what, cost, r.bytes+cost, IDBytesPerRun, IDBytesPerRun-r.bytes).
			WithHint("shorten the test ids (long parametrised names), or verify fewer suites per run (verify --shard)")
	}
	r.ids += int64(ids)
	r.bytes += cost
	return nil
}

// Admitted returns the ids and id bytes admitted so far.
func (r *Run) Admitted() (ids, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids, r.bytes
}

// CheckReportSize refuses a report of size bytes over ReportBytes
// (RM-REPORT-003), before it is read.
func CheckReportSize(what string, size int64) error {
	if size > ReportBytes {
		return rmerr.New(rmerr.ReportLimit, "%s: the report has %d bytes, more than the %d a report may (budget.ReportBytes); it was neither read nor stored",
			what, size, ReportBytes).
			WithHint("split the suite into several checks, each with its own report, or use a leaner format (TAP)")
	}
	return nil
}

// The arithmetic above, held by the compiler: a negative constant does not
// convert to uint64, so a change that breaks it does not build.
const (
	_ = uint64(BundleBytes - (StatementBytes/3*4 + EnvelopeBytes))
	_ = uint64(StatementBytes - (OtherBytes + IDCopies*IDBytesPerRun))
)
