package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

type summary struct {
	RunID      string             `json:"run_id"`
	Dir        string             `json:"dir"`
	MergeReady bool               `json:"merge_ready"`
	Statement  string             `json:"statement"`
	Bundle     string             `json:"bundle,omitempty"`
	Delivery   *evidence.Delivery `json:"delivery"`
}

func runSummary(r *engine.Run) summary {
	return summary{RunID: r.ID, Dir: r.Dir, MergeReady: r.MergeReady(), Statement: r.StatementPath, Bundle: r.BundlePath, Delivery: &r.Delivery}
}

// printRun renders the verdict first, then one row per check run, then the
// reasons with their causes (issue 14: every refusal says why, in words),
// the operator's overrides and the checks whose coverage is unproven.
// Every repository-derived string goes through printable (issue 13 S5).
func printRun(w io.Writer, r *engine.Run) {
	d := &r.Delivery
	verdictWord := "NOT MERGE-READY"
	if d.Verdict.MergeReady {
		verdictWord = "MERGE-READY"
	}
	fmt.Fprintf(w, "%s  %s  (candidate %s, base %s)\n", verdictWord, r.ID, objectid.Short(d.Candidate.Head), objectid.Short(d.Candidate.Base))
	if l := explain.LandingLine(d.Candidate); l != "" {
		fmt.Fprintln(w, printable.Text(l, 0))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tPHASE\tSTATUS\tCOVERAGE\tEXIT\tTESTS p/f/s\tTREE\tDURATION")
	for _, c := range d.Checks {
		tests := "-"
		if c.Report != nil && c.Report.Inventory != nil {
			inv := c.Report.Inventory
			tests = fmt.Sprintf("%d/%d/%d", len(inv.Passed), len(inv.Failed), len(inv.Skipped))
		}
		tree := "unchanged"
		if c.TreeBefore != c.TreeAfter {
			tree = "MOVED"
		}
		exit, dur := fmt.Sprint(c.ExitCode), (time.Duration(c.DurationMS) * time.Millisecond).String()
		switch {
		case c.TimedOut:
			exit = "timeout"
		case !c.Started:
			exit = "not run"
		}
		if !c.Started {
			exit, dur = "not run", "–" // refused before it ran (issue 15)
		}
		if c.ReusedFrom != nil {
			dur = "reused" // not executed: the Reused: block says from where
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable.Text(c.CheckID, maxIDBytes), c.Phase, c.Status, c.Coverage, exit, tests, tree, dur)
	}
	tw.Flush()
	writeReused(w, d)
	writeWhy(w, d, explain.Checks(r.Dir, d), r.ID)
	writeHarness(w, d)
	if ls := explain.MovedBlock(d, maxMovedLines); len(ls) > 0 {
		// Issue 24: a test found under its moved id is preserved.
		fmt.Fprintln(w, "\nMoved (git detected the renames; the tests kept their authority):")
		for _, l := range ls {
			fmt.Fprintln(w, "  "+printable.Text(l, 0))
		}
	}
	fmt.Fprintf(w, "\nGitHub: %s\n", githubLine(d))
	fmt.Fprintf(w, "Evidence: %s\n", r.Dir)
	if r.BundlePath == "" {
		fmt.Fprintln(w, "(unsigned: pass --signing-key to sign it)")
	}
}

// maxMovedLines bounds the moved tests listed per check.
const maxMovedLines = 10

// writeReused lists the runs that were not executed but reused from a
// signed earlier verification (issue 16), with their source, for verify
// and inspect alike.
func writeReused(w io.Writer, d *evidence.Delivery) {
	first := true
	for _, c := range d.Checks {
		if c.ReusedFrom == nil {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nReused (not executed: an equal input key passed in a signed earlier run; `evidence verify --artifacts-dir` re-verifies its bundle):")
			first = false
		}
		ref := c.ReusedFrom
		from := "run"
		if ref.Proof {
			from = "the base proof" // verify --prove-base of that commit
		}
		fmt.Fprintf(w, "  %s (%s) at %s: %s %s, check run %d of bundle %s\n", printable.Text(c.CheckID, maxIDBytes), c.Phase,
			objectid.Short(c.Commit), from, printable.Text(ref.RunID, maxIDBytes), ref.Index, printable.Text(shortDigest(strings.Replace(ref.Bundle, "/", ":", 1)), maxIDBytes))
	}
}

// Bounds of what the console quotes: one id, one message, the ids one
// finding lists (the statement and --json keep all of them).
const (
	maxIDBytes      = 200
	maxMessageBytes = 600
	maxListedIDs    = 20
)

// writeWhy renders the Why:, Overrides: and Unproven: blocks shared by
// verify and inspect: each reason with its code, check and message, the
// test ids it names one per line (capped), and after a check's last reason
// what its runs printed and the causes runmill recognises (explain.Checks).
func writeWhy(w io.Writer, d *evidence.Delivery, xs []explain.Explanation, runID string) {
	byCheck := map[string][]explain.Explanation{}
	for _, x := range xs {
		byCheck[x.Check] = append(byCheck[x.Check], x)
	}
	explained := map[string]bool{}
	reasons := explain.Order(d.Verdict.Reasons())
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nWhy:")
	}
	for i, f := range reasons {
		writeReason(w, f, byCheck[f.Check], runID)
		if last := i == len(reasons)-1 || reasons[i+1].Check != f.Check; last && !explained[f.Check] {
			explained[f.Check] = true
			for _, x := range byCheck[f.Check] {
				writeCauses(w, x, "      ")
			}
		}
	}
	writeOverrides(w, d.Manifest.Conflicts)
	writeUnproven(w, xs, d.Verdict.FailOnSkippedCheck)
}

// writeReason renders one reason: code, check, file, message, the ids it
// lists (xs are its check's explanations) and its fix.
func writeReason(w io.Writer, f record.Finding, xs []explain.Explanation, runID string) {
	code := string(f.Code)
	if code == "" {
		code = f.Rule
	}
	loc := ""
	if f.File != "" {
		loc = " " + printable.Text(f.File, maxIDBytes)
		if f.Line > 0 {
			loc += fmt.Sprintf(":%d", f.Line)
		}
	}
	check := ""
	if f.Check != "" {
		check = " " + printable.Text(f.Check, maxIDBytes)
	}
	msg := f.Message
	var listed []string
	if f.Rule == verdict.RuleTestsFailed {
		// The message names the tests on one line; they are listed below,
		// each with its message.
		msg, _, _ = strings.Cut(msg, ": ")
		phase := record.Candidate
		if strings.Contains(msg, verdict.CandidateHarnessWords) {
			phase = record.CandidateHarness // issue 25: the change's own harness failed them
		}
		listed = failedTests(xs, runID, phase)
	} else {
		for j, id := range f.IDs {
			if j == maxListedIDs {
				listed = append(listed, fmt.Sprintf("… and %d more (runmill inspect %s --json lists all)", len(f.IDs)-maxListedIDs, runID))
				break
			}
			listed = append(listed, printable.Text(string(id), maxIDBytes))
		}
	}
	if len(listed) > 0 {
		msg += ":"
	}
	fmt.Fprintf(w, "  %-14s%s%s %s\n", code, check, loc, printable.Text(msg, maxMessageBytes))
	for _, l := range listed {
		fmt.Fprintf(w, "      %s\n", l)
	}
	if f.Hint != "" {
		fmt.Fprintf(w, "      fix: %s\n", printable.Text(f.Hint, maxMessageBytes))
	}
}

// failedTests lists the failed tests of the check's run of phase (the
// candidate's, or the candidate-harness run's), each with its message, and
// how many more the record holds.
func failedTests(xs []explain.Explanation, runID string, phase record.Phase) []string {
	var listed []string
	for _, x := range xs {
		if x.Phase != phase {
			continue
		}
		for _, t := range x.FailedTests {
			l := printable.Text(string(t.ID), maxIDBytes)
			if t.Message != "" {
				l += " — " + printable.Text(t.Message, maxMessageBytes)
			}
			listed = append(listed, l)
		}
		if rest := x.FailedCount - len(x.FailedTests); rest > 0 {
			listed = append(listed, fmt.Sprintf("… and %d more (runmill inspect %s --json)", rest, runID))
		}
	}
	return listed
}

// writeOverrides names the repository fields an operator definition
// replaced.
func writeOverrides(w io.Writer, conflicts []discovery.Conflict) {
	var overrides []string
	for _, c := range conflicts {
		if fields := overridden(c); len(fields) > 0 {
			overrides = append(overrides, fmt.Sprintf("  %s: the operator policy's definition replaces the repository's; the repository's %s %s%s\n",
				printable.Text(c.ID, maxIDBytes), strings.Join(fields, ", "), noLongerApply(len(fields)), applyHint(fields)))
		}
	}
	if len(overrides) > 0 {
		fmt.Fprintln(w, "\nOverrides:")
		for _, o := range overrides {
			fmt.Fprint(w, o)
		}
	}
}

// writeUnproven lists the checks whose coverage is unproven, and says when
// the policy lets that through.
func writeUnproven(w io.Writer, xs []explain.Explanation, failOnSkipped bool) {
	var unproven []explain.Explanation
	for _, x := range xs {
		if x.Unproven != "" {
			unproven = append(unproven, x)
		}
	}
	if len(unproven) == 0 {
		return
	}
	head := "\nUnproven:"
	if !failOnSkipped {
		head = "\nUnproven (allowed here: verification.fail_on_skipped_check is false):"
	}
	fmt.Fprintln(w, head)
	for _, x := range unproven {
		fmt.Fprintf(w, "  %s: %s\n", printable.Text(x.Check, maxIDBytes), x.Unproven)
	}
}

// writeCauses prints what a failing run printed and the causes runmill
// recognised in it.
func writeCauses(w io.Writer, x explain.Explanation, indent string) {
	phase := explain.PhaseWords(x.Phase)
	for _, s := range []struct {
		name  string
		lines []string
	}{{"stderr", x.StderrTail}, {"stdout", x.StdoutTail}} {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s%s%s, last %s:\n", indent, s.name, phase, printable.Plural(len(s.lines), "line", "lines"))
		for _, l := range s.lines {
			fmt.Fprintf(w, "%s  | %s\n", indent, l)
		}
	}
	for _, h := range x.Hints {
		fmt.Fprintf(w, "%shint%s (%s): %s\n%s  seen: %s\n", indent, phase, h.Cause, h.Fix, indent, h.Line)
	}
}

// overridden lists the repository's fields an operator definition
// replaced; paths and required stay (both documents' requirement rules
// apply, spec § 1).
func overridden(c discovery.Conflict) []string {
	if c.Winner != discovery.DefinedByOperator {
		return nil
	}
	var out []string
	for _, f := range c.Fields {
		if f != "paths" && f != "required" {
			out = append(out, f)
		}
	}
	return out
}

func noLongerApply(n int) string {
	if n == 1 {
		return "no longer applies"
	}
	return "no longer apply"
}

func applyHint(fields []string) string {
	if slices.Contains(fields, "dependencies") || slices.Contains(fields, "timeout") {
		return " (copy them into the operator's definition: runmill init --operator-policy-out FILE writes them)"
	}
	return ""
}

// githubLine says what the GitHub sources contributed, and plainly when
// they were not consulted: absence is never presented as "none required".
func githubLine(d *evidence.Delivery) string {
	g := d.Manifest.GitHub
	if !g.Consulted {
		return "NOT consulted (no token, or --no-github): required contexts and remote checks are not part of this verdict"
	}
	s := fmt.Sprintf("consulted: %d required contexts, %d reconciled, %d pending", len(g.Contexts), len(d.Remote), len(d.PendingContexts))
	for _, u := range g.Unknown {
		s += fmt.Sprintf("; %s UNKNOWN (%s)", printable.Text(u.Name, maxIDBytes), printable.Text(u.Reason, maxMessageBytes))
	}
	if len(g.Excluded) > 0 {
		s += fmt.Sprintf("; own job excluded: %s", printable.Text(strings.Join(g.Excluded, ", "), maxMessageBytes))
	}
	return s
}

// writeHarness renders the Harness: block of verify and inspect: a harness
// the change edited or added ran in the base's version (issue 19), and what
// runmill could not pin says so (issue 25).
func writeHarness(w io.Writer, d *evidence.Delivery) {
	if ls := explain.HarnessLines(d); len(ls) > 0 {
		fmt.Fprintln(w, "\nHarness:")
		for _, l := range ls {
			fmt.Fprintln(w, "  "+printable.Text(l, 0))
		}
	}
}
