package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// output stores a captured stream's kept bytes.
func (e *executor) output(c sandbox.Capture) (record.Output, error) {
	addr, err := e.store.put(c.Kept)
	if err != nil {
		return record.Output{}, err
	}
	sha := c.SHA256
	if sha == "" { // never ran: the empty stream
		sha, _ = evidence.ArtifactHex(addr)
	}
	return record.Output{SHA256: sha, Size: c.Size, Artifact: addr, ArtifactSize: int64(len(c.Kept))}, nil
}

// readReport measures, stores and parses the declared report, in that
// order and without holding it: its size and allocated blocks are checked
// before a byte is read (issue #13: a report over budget.ReportBytes or with
// holes is never copied into the store), it is streamed into the store, the
// stored copy is parsed with the budget's caps, and its ids are admitted to
// the run's budget before the inventory is built, so a report that would
// break the budget fails its check with RM-REPORT-003 and leaves nothing in
// the statement.
func (e *executor) readReport(rec *record.CheckRun, c discovery.Check, path string, finding func(rule, code, format string, args ...any)) *report.Inventory {
	limit := func(err error) {
		re, _ := err.(*rmerr.Error)
		msg, hint := err.Error(), ""
		if re != nil {
			msg, hint = re.Msg, re.Hint
		}
		rec.Observations = append(rec.Observations, record.Finding{Code: rmerr.ReportLimit, Check: c.ID, Rule: ruleReportLimit, Message: msg, Hint: hint})
	}
	f := openReport(c, path, finding, limit)
	if f == nil {
		return nil
	}
	defer f.Close()
	addr, n, err := e.store.putFrom(f, budget.ReportBytes)
	switch {
	case errors.Is(err, errOverCap):
		limit(budget.CheckReportSize("report "+c.Report.Path+" (it grew while runmill read it)", n))
		return nil
	case err != nil:
		finding("report.unreadable", "", "storing the report: %v", err)
		return nil
	}
	sha, _ := evidence.ArtifactHex(addr)
	rec.Report = &record.ReportRecord{
		Path: c.Report.Path, Format: report.Format(c.Report.Format), Identity: report.Identity(c.Report.Identity),
		SHA256: sha, Size: n, Artifact: addr,
	}
	inv := e.parseStoredReport(rec, c, addr, finding)
	if inv == nil {
		return nil
	}
	var cost int64
	for _, t := range inv.Tests {
		cost += budget.IDCost(string(t.ID))
	}
	ids := e.store.ids
	if ids == nil { // a store without a run's account: the report's own caps still hold
		ids = &budget.Run{}
	}
	if err := ids.Admit(fmt.Sprintf("check %s (%s), report %s", c.ID, rec.Phase, c.Report.Path), len(inv.Tests), cost); err != nil {
		limit(err)
		return nil
	}
	evidence.ReportFactsOf(rec.Report, inv)
	// The report's own notes (a summary attribute that disagrees with the
	// elements, a field cut at its cap) go into the record.
	for _, n := range inv.Notes {
		rec.Notes = append(rec.Notes, "report: "+printable.Text(n, 1000))
	}
	return inv
}

// openReport opens the report the command wrote, after measuring it: a
// missing, irregular, empty, over-budget, replaced or sparse report is a
// finding (or a limit) and nil. The caller closes the file.
func openReport(c discovery.Check, path string, finding func(rule, code, format string, args ...any), limit func(error)) *os.File {
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		finding("report.missing", string(rmerr.ReportMalformed), "the command removed the report %s", c.Report.Path)
		return nil
	case !st.Mode().IsRegular():
		finding("report.not-regular", string(rmerr.ReportMalformed), "the report %s is not a regular file after the command (%s)", c.Report.Path, st.Mode().Type())
		return nil
	case st.Size() == 0:
		finding("report.empty", string(rmerr.ReportMalformed), "the command did not write the report %s (still empty)", c.Report.Path)
		return nil
	}
	if err := budget.CheckReportSize("report "+c.Report.Path, st.Size()); err != nil {
		limit(err)
		return nil
	}
	// OpenRegular: a FIFO or symlink swapped in after the Lstat is refused,
	// neither waited on nor followed; SameFile refuses another file.
	f, fst, err := bounded.OpenRegular(path)
	if errors.Is(err, bounded.ErrNotRegular) {
		finding("report.unreadable", string(rmerr.ReportMalformed), "the report %s was replaced while runmill read it", c.Report.Path)
		return nil
	}
	if err != nil {
		finding("report.unreadable", string(rmerr.ReportMalformed), "opening the report %s: %v", c.Report.Path, err)
		return nil
	}
	if !os.SameFile(st, fst) {
		f.Close()
		finding("report.unreadable", string(rmerr.ReportMalformed), "the report %s was replaced while runmill read it", c.Report.Path)
		return nil
	}
	// A hole reads as NUL bytes, which no report format allows: refusing
	// it is never a false alarm, and it keeps a `truncate -s 512M` from
	// costing the store 512 MiB on every run.
	if hole, off, err := holeAt(f, st); err != nil || hole {
		f.Close()
		if err != nil {
			finding("report.unreadable", string(rmerr.ReportMalformed), "measuring the report %s: %v", c.Report.Path, err)
		} else {
			finding("report.sparse", string(rmerr.ReportMalformed), "the report %s is sparse: %d bytes long, %d allocated, a hole at byte %d reads as NUL bytes no report format allows; it was neither read nor stored",
				c.Report.Path, st.Size(), st.Sys().(*syscall.Stat_t).Blocks*512, off)
		}
		return nil
	}
	return f
}

// parseStoredReport parses the stored copy at addr: the bytes parsed are
// the bytes the digest names, whatever happens to the checkout's file. A
// baseline's repeated ids carry no authority but do not void the rest of
// its report (the change that renames them can land); the candidate's ids
// must be unique (spec § 4).
func (e *executor) parseStoredReport(rec *record.CheckRun, c discovery.Check, addr string, finding func(rule, code, format string, args ...any)) *report.Inventory {
	sf, err := os.Open(e.store.path(addr))
	if err != nil {
		finding("report.unreadable", "", "reading the stored report: %v", err)
		return nil
	}
	defer sf.Close()
	inv, perr := report.Parse(bufio.NewReaderSize(sf, 1<<16), report.Format(c.Report.Format), report.Options{
		Identity: report.Identity(c.Report.Identity), AllowDuplicateIDs: rec.Phase == record.Baseline,
		Limits: report.DefaultLimits, Root: sandbox.CheckoutPath})
	if perr != nil {
		finding("report.invalid", string(rmerr.CodeOf(perr)), "the report %s is invalid: %v", c.Report.Path, perr)
		return nil
	}
	return inv
}

// ruleReportLimit is the rule of a report refused by the budget.
const ruleReportLimit = "report.limit"

// prepareReport checks the declared path against the fresh checkout (it
// must not exist; no component may be a symlink), creates the missing
// parent directories and an empty file, and returns the file and the
// directories it created (to remove them before the post-check hash).
func prepareReport(root, rel string) (string, []string, error) {
	path, missing, err := safeJoin(root, rel)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return "", nil, fmt.Errorf("%s exists in the commit; a declared report must be generated by the command", rel)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscallNoFollow, 0o644)
	if err != nil {
		return "", nil, err
	}
	f.Close()
	sort.Strings(missing)
	return path, missing, nil
}
