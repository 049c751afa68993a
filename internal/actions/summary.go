package actions

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// MaxSummaryBytes is GitHub's limit on one step's job summary: a larger one
// is not shown at all, so runmill cuts its own before that and says where
// the rest is.
const MaxSummaryBytes = 1 << 20

// canonicalErrorsDoc is where each code's cause and fix are documented
// outside a workflow; in one, the action's own repository at its own ref
// (Where.ErrorsDoc), so a link explains the runmill that ran.
const canonicalErrorsDoc = "https://github.com/runmill/verify/blob/main/docs/errors.md"

// Where is where the evidence of a run can be found, for the summary's
// last section. Every field may be empty.
type Where struct {
	// Artifact is the workflow artifact the action uploads the run
	// directory as (the artifact-name input).
	Artifact string
	// RunURL is the workflow run's page, where the artifact is listed.
	RunURL string
	// ArtifactURL is the artifact's page (actions/upload-artifact's
	// artifact-url output), "" before or without the upload.
	ArtifactURL string
	// Repository and RunID are what `runmill evidence download` takes.
	Repository string
	RunID      string
	// ErrorsDoc is docs/errors.md of the runmill that ran: the action's
	// repository at its ref, else canonicalErrorsDoc.
	ErrorsDoc string
}

// The four questions of the specification, in its order.
const (
	qDiscovery = "Discovery"
	qCoverage  = "Coverage"
	qFreshness = "Freshness"
	qOutcome   = "Outcome"
)

var questions = []struct{ name, ask string }{
	{qDiscovery, "which checks are required?"},
	{qCoverage, "did every required check run?"},
	{qFreshness, "against the exact commit?"},
	{qOutcome, "without a prohibited skip?"},
}

// question says which of the four questions a finding answers no to.
func question(f record.Finding) string {
	switch {
	case f.Rule == verdict.RuleEmptyManifest || f.Code == rmerr.VerifyManifest || strings.HasPrefix(f.Rule, "discovery."):
		return qDiscovery
	case strings.HasPrefix(f.Rule, "freshness.") || f.Code == rmerr.VerifyTreeMoved || f.Code == rmerr.VerifyDependencies ||
		strings.HasPrefix(f.Rule, "dependencies."):
		return qFreshness
	case strings.HasPrefix(f.Rule, "coverage.") || strings.HasPrefix(f.Rule, "record.") || strings.HasPrefix(f.Rule, "ci.") ||
		f.Code == rmerr.VerifyNoRunnable || f.Code == rmerr.CINeverScheduled:
		return qCoverage
	}
	return qOutcome // outcome.*, baseline.*, report.*: what "passed" excludes
}

// summary renders the job summary of a finished run within limit bytes.
// Each cause of a not-merge-ready verdict is one row of Findings (missing
// and skipped tests first), and each failing test is named once, in its
// check's row, with its location and message (issue 27).
func summary(run *Run, digest string, where Where, failing []failingTest, errs, warns int, limit int) string {
	d := &run.Delivery
	causes := explain.Causes(d)
	var head, tail []string

	if d.Verdict.MergeReady {
		head = append(head, "## ✅ runmill: merge-ready", "")
	} else {
		head = append(head, "## ❌ runmill: not merge-ready", "")
	}
	line := fmt.Sprintf("Candidate %s · base %s", code(objectid.Short(d.Candidate.Head)), code(objectid.Short(d.Candidate.Base)))
	if d.Candidate.Repository.Name != "" {
		line += " · " + code(d.Candidate.Repository.Name)
	}
	if d.Candidate.PullRequest > 0 {
		line += fmt.Sprintf(" · pull request #%d", d.Candidate.PullRequest)
	}
	line += fmt.Sprintf(" · run %s · runmill %s", code(d.RunID), code(d.RunmillVersion))
	head = append(head, line, "")
	if l := explain.LandingLine(d.Candidate); l != "" {
		head = append(head, text(l), "")
	}
	if len(causes) > 0 {
		head = append(head, fmt.Sprintf("%s kept this change from being merge-ready; each is one row under **Findings**, with its fix.", printable.Plural(len(causes), "cause", "causes")), "")
	}

	// The four questions.
	byQ := map[string][]record.Finding{}
	for _, c := range causes {
		byQ[question(c.Finding)] = append(byQ[question(c.Finding)], c.Finding)
	}
	head = append(head, "| Question | Answer |", "| --- | --- |")
	for _, q := range questions {
		fs := byQ[q.name]
		mark := "✅"
		if len(fs) > 0 {
			mark = "❌"
		}
		head = append(head, fmt.Sprintf("| **%s**: %s | %s %s |", q.name, q.ask, mark, answer(q.name, run, fs)))
	}
	head = append(head, "")
	if !d.Manifest.GitHub.Consulted {
		// Said apart from the answers: it is neither a pass nor a failure,
		// but a source this run did not read.
		head = append(head, "GitHub was not consulted (no token, or `--no-github`): the required status checks of branch protection and rulesets are not part of this verdict.", "")
	}

	// One row per check.
	head = append(head, "### Checks", "",
		"| Check | Required by | Status | Coverage | Tests passed / failed / skipped | Missing at candidate | Duration |",
		"| --- | --- | --- | --- | --- | --- | --- |")
	head = append(head, checkRows(run, d.Verdict.Reasons())...)
	head = append(head, "")

	if len(causes) > 0 {
		byCheck := map[string][]failingTest{}
		for _, t := range failing {
			byCheck[t.Check] = append(byCheck[t.Check], t)
		}
		nFailed := map[string]int{}
		for _, r := range d.Checks {
			if r.Phase == record.Candidate && r.Report != nil && r.Report.Inventory != nil {
				nFailed[r.CheckID] = len(r.Report.Inventory.Failed)
			}
		}
		head = append(head, "### Findings", "", "| Check | What | Where | Fix |", "| --- | --- | --- | --- |")
		for _, c := range causes {
			head = append(head, causeRow(c, byCheck[c.Check], nFailed[c.Check], where.ErrorsDoc))
		}
		head = append(head, "")
	}
	head = append(head, whySection(run)...)
	if ls := explain.HarnessLines(d); len(ls) > 0 {
		head = append(head, "### Harness", "")
		for _, l := range ls {
			head = append(head, "- "+text(l))
		}
		head = append(head, "")
	}
	if ls := explain.MovedBlock(d, 20); len(ls) > 0 {
		head = append(head, "### Moved tests", "", "Found under the id git's renames (or a parametrized case's new ids) give them: preserved, not missing.", "")
		for _, l := range ls {
			head = append(head, "- "+text(l))
		}
		head = append(head, "")
	}
	if t := deps.DiffTable(d.Dependencies, 20); t != "" {
		head = append(head, "### Dependencies", "", t, "")
	}
	if notes := notesOf(d); len(notes) > 0 {
		head = append(head, fmt.Sprintf("<details><summary>Notes (%d)</summary>", len(notes)), "")
		for _, n := range notes {
			head = append(head, "- "+text(n))
		}
		head = append(head, "", "</details>", "")
	}

	// Where the evidence is: always written, whatever is cut above it.
	tail = append(tail, evidenceSection(run, digest, where)...)
	if errs > MaxErrors || warns > MaxWarnings {
		tail = append(tail, "", fmt.Sprintf("Annotations: %d of %s and %d of %s shown; GitHub keeps at most %d of each per step, and every cause is listed above.",
			min(errs, MaxErrors), printable.Plural(errs, "error", "errors"), min(warns, MaxWarnings), printable.Plural(warns, "warning", "warnings"), MaxErrors))
	}
	tail = append(tail, "")
	return fit(head, tail, limit)
}

// evidenceSection says where a reviewer finds the evidence and how to check
// it: in a workflow, the uploaded artifact (by its URL when the upload step
// gave one) and the one command that downloads and verifies it; the
// runner's own paths only outside a workflow, where they can be opened.
func evidenceSection(run *Run, digest string, where Where) []string {
	d := &run.Delivery
	out := []string{"### Evidence", ""}
	signed := "the signed bundle `evidence.json` and the statement `statement.json`"
	if run.BundlePath == "" {
		signed = "the statement `statement.json`"
	}
	if where.Artifact == "" {
		if run.BundlePath != "" {
			out = append(out, fmt.Sprintf("- Signed bundle: %s", code(run.BundlePath)))
		}
		out = append(out, fmt.Sprintf("- Statement: %s", code(run.StatementPath)), fmt.Sprintf("- Run directory: %s (`runmill inspect %s` renders it)", code(run.Dir), d.RunID))
	} else {
		name := code(where.Artifact)
		if where.ArtifactURL != "" {
			name = fmt.Sprintf("[%s](%s)", text(where.Artifact), where.ArtifactURL)
		}
		at := "this workflow run"
		if where.RunURL != "" {
			at = fmt.Sprintf("[this workflow run](%s)", where.RunURL)
		}
		out = append(out, fmt.Sprintf("- Artifact %s of %s: %s, under %s.", name, at, signed, code(d.RunID+"/")))
	}
	out = append(out, fmt.Sprintf("- Canonical digest of the statement: %s", code(digest)))
	if run.BundlePath == "" {
		out = append(out, "- **Unsigned**: no signing key was given, so nothing can verify this evidence offline (pass the `signing-key` input).")
	} else if where.Artifact != "" && where.Repository != "" && where.RunID != "" {
		out = append(out, fmt.Sprintf("- Download and verify it anywhere: %s", code(fmt.Sprintf(
			"runmill evidence download --repo %s --run-id %s --name %s --verify --trust TRUST --expectations EXPECTATIONS", where.Repository, where.RunID, where.Artifact))))
	} else {
		out = append(out, fmt.Sprintf("- Verify it: %s", code("runmill evidence verify "+run.BundlePath+" --trust TRUST --expectations EXPECTATIONS")))
	}
	return out
}

// fit joins head and tail, dropping head lines from the end (and saying so)
// until the whole fits in limit bytes. The tail always stays.
func fit(head, tail []string, limit int) string {
	t := strings.Join(tail, "\n") + "\n"
	total := len(t)
	for _, l := range head {
		total += len(l) + 1
	}
	if total <= limit {
		return strings.Join(head, "\n") + "\n" + t
	}
	note := func(n int) string {
		return fmt.Sprintf("\n**The summary was cut here to stay within GitHub's %d KiB limit**: %d more lines are not shown. "+
			"The evidence below holds the complete record (`runmill inspect RUN-ID` renders it).\n\n", limit>>10, n)
	}
	budget := limit - len(t) - len(note(len(head)))
	var b strings.Builder
	kept := 0
	for _, l := range head {
		if b.Len()+len(l)+1 > budget {
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
		kept++
	}
	return b.String() + note(len(head)-kept) + t
}

// answer is one question's answer cell.
func answer(q string, run *Run, fs []record.Finding) string {
	d := &run.Delivery
	if len(fs) > 0 {
		var codes []string
		for _, f := range fs {
			c := string(f.Code)
			if c == "" {
				c = f.Rule
			}
			if !slices.Contains(codes, c) {
				codes = append(codes, c)
			}
		}
		for i, c := range codes {
			codes[i] = code(c)
		}
		return fmt.Sprintf("%s: %s", printable.Plural(len(fs), "cause", "causes"), strings.Join(codes, ", "))
	}
	switch q {
	case qDiscovery:
		required := 0
		for _, c := range d.Manifest.Checks {
			if c.Required {
				required++
			}
		}
		s := fmt.Sprintf("%s required; repository policy %s", printable.Plural(required, "check", "checks"), readFrom(d.Manifest.ReadFrom))
		if d.Manifest.Policies.Operator != nil {
			s += "; operator policy applied"
		}
		if n := len(d.Manifest.IgnoredProposals); n > 0 {
			s += fmt.Sprintf("; %s ignored", printable.Plural(n, "agent proposal", "agent proposals"))
		}
		return s
	case qCoverage:
		return fmt.Sprintf("every required check produced a result (%s by runmill)", printable.Plural(len(d.Checks), "run", "runs"))
	case qFreshness:
		return fmt.Sprintf("every run used a fresh checkout of its commit and left the tree unchanged (candidate tree %s)", code(objectid.Short(strings.TrimPrefix(d.Candidate.Tree, "sha256:"))))
	}
	return "no failed, focused, zero-test, timed-out, missing or skipped test"
}

func readFrom(r discovery.ReadFrom) string {
	switch r {
	case discovery.ReadFromBase:
		return "read from the base commit"
	case discovery.ReadFromWorkingTree:
		return "new in the change, read from the candidate"
	}
	return "absent"
}

// checkRows renders one row per manifest check (and per recorded check the
// manifest does not list, which the verdict already fails).
func checkRows(run *Run, reasons []record.Finding) []string {
	d := &run.Delivery
	type runs struct{ base, cand *record.CheckRun }
	byID := map[string]*runs{}
	var order []string
	for i := range d.Checks {
		c := &d.Checks[i]
		if c.Executor != record.Orchestrator {
			continue
		}
		r := byID[c.CheckID]
		if r == nil {
			r = &runs{}
			byID[c.CheckID] = r
		}
		if c.Phase == record.Candidate {
			r.cand = c
		} else {
			r.base = c
		}
	}
	missing := map[string]int{}
	for _, f := range reasons {
		if f.Rule == "outcome.preservation.missing" {
			missing[f.Check] += len(f.IDs)
		}
	}
	remote := map[string]record.Conclusion{}
	for _, r := range d.Remote {
		remote[r.Context] = r.Conclusion
	}
	var rows []string
	seen := map[string]bool{}
	specs := map[string]discovery.Check{}
	for _, c := range d.Manifest.Checks {
		if !seen[c.ID] {
			seen[c.ID] = true
			specs[c.ID] = c
			order = append(order, c.ID)
		}
	}
	for _, c := range d.Checks {
		if !seen[c.CheckID] {
			seen[c.CheckID] = true
			order = append(order, c.CheckID)
		}
	}
	for _, id := range order {
		spec, listed := specs[id]
		r := byID[id]
		if r == nil {
			r = &runs{}
		}
		by := "not in the manifest"
		if listed {
			var src []string
			for _, s := range spec.Sources {
				src = append(src, string(s))
			}
			by = strings.Join(src, ", ")
			if !spec.Required {
				by += " (advisory)"
			}
		}
		status, coverage, tests, dur := "", "–", "–", "–"
		switch {
		case r.cand != nil:
			status = runStatus(r.cand)
			coverage = string(r.cand.Coverage)
			tests = counts(r.cand)
			dur = runDuration(r.cand)
			if r.base != nil {
				tests += " (base " + counts(r.base) + ")"
				dur += " (base " + runDuration(r.base) + ")"
			}
		case listed && !spec.Runnable() && spec.HasSource(discovery.SourceGitHub):
			if c, ok := remote[id]; ok {
				status = "remote: " + string(c)
				if c == record.Success {
					status = "✅ " + status
				} else {
					status = "❌ " + status
				}
			} else if slices.Contains(d.PendingContexts, id) {
				status = "⏳ remote: pending"
			} else {
				status = "❌ remote: no result"
			}
		case listed && !spec.Runnable():
			status = "❌ no runnable command"
		case listed && !spec.Required:
			status = "not run"
		default:
			status = "❌ no result"
		}
		miss := "–"
		if spec.Report != nil || missing[id] > 0 {
			miss = fmt.Sprint(missing[id])
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", code(id), text(by), status, coverage, tests, miss, dur))
	}
	return rows
}

// runStatus is a candidate run's status cell: failed whenever the verdict
// would not count it as passed.
func runStatus(c *record.CheckRun) string {
	switch {
	case !c.Started:
		return "❌ refused (not run)"
	case c.TimedOut:
		return "❌ timed out"
	case c.TreeBefore != c.TreeAfter:
		return "❌ tree moved"
	case c.Status != record.Passed || len(c.Findings) > 0:
		return fmt.Sprintf("❌ failed (exit %d)", c.ExitCode)
	}
	return "✅ passed"
}

func counts(c *record.CheckRun) string {
	if c.Report == nil || c.Report.Inventory == nil {
		return "–"
	}
	inv := c.Report.Inventory
	return fmt.Sprintf("%d / %d / %d", len(inv.Passed), len(inv.Failed), len(inv.Skipped))
}

func runDuration(c *record.CheckRun) string {
	if !c.Started {
		return "–" // refused before it ran (issue 15)
	}
	return duration(c.DurationMS)
}

func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(100 * time.Millisecond)
	}
	return d.String()
}

// causeRow is one row of the findings table: a failing-tests cause names
// each of its tests once, where it failed and what it said; any other
// cause its message and its test ids; then where, and the fix with its
// code.
func causeRow(c explain.Cause, tests []failingTest, nFailed int, errorsDoc string) string {
	f := c.Finding
	name := code(f.Rule)
	if f.Code != "" {
		name = fmt.Sprintf("[%s](%s#%s)", f.Code, errorsDoc, strings.ToLower(string(f.Code)))
	}
	where := ""
	if f.File != "" {
		where = code(location(f.File, f.Line))
	}
	var what string
	if c.TestsFailed() && len(tests) > 0 {
		n := max(nFailed, len(tests))
		what = printable.Plural(n, "test", "tests") + " failed"
		if c.ExitCode != 0 {
			what += fmt.Sprintf(" (the check exited with code %d)", c.ExitCode)
		}
		var named, locs []string
		for i, t := range tests {
			if i == maxIDs {
				break
			}
			s := code(string(t.ID))
			if t.File != "" {
				l := location(t.File, t.Line)
				if !slices.Contains(locs, l) {
					locs = append(locs, l)
				}
			}
			if t.Message != "" {
				s += " — " + text(t.Message)
			}
			named = append(named, s)
		}
		what += ": " + strings.Join(named, "; ")
		if rest := n - len(named); rest > 0 {
			what += fmt.Sprintf("; and %d more (see the evidence bundle)", rest)
		}
		if where == "" && len(locs) > 0 {
			for i, l := range locs {
				locs[i] = code(l)
			}
			where = strings.Join(locs[:min(len(locs), 3)], ", ")
		}
	} else {
		what = text(f.Message)
		if len(f.IDs) > 0 {
			ids := make([]string, 0, min(len(f.IDs), maxIDs))
			for i, id := range f.IDs {
				if i == maxIDs {
					break
				}
				ids = append(ids, code(string(id)))
			}
			what += ": " + strings.Join(ids, ", ")
			if len(f.IDs) > maxIDs {
				what += fmt.Sprintf(" and %d more (see the evidence bundle)", len(f.IDs)-maxIDs)
			}
		}
	}
	// The code (documented, linked) or rule closes the fix: what to do
	// first, where it is written down after.
	fix := text(f.Hint)
	if fix != "" {
		fix += " · "
	}
	fix += name
	check := ""
	if f.Check != "" {
		check = code(f.Check)
	}
	return fmt.Sprintf("| %s | %s | %s | %s |", check, what, where, fix)
}

func location(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// notesOf lists what did not decide anything but a reader should know.
func notesOf(d *evidence.Delivery) []string {
	var out []string
	for _, p := range d.Manifest.IgnoredProposals {
		out = append(out, fmt.Sprintf("agent proposal %q ignored: %s", p.ID, p.Reason))
	}
	for _, c := range d.Manifest.Conflicts {
		out = append(out, fmt.Sprintf("check %q is defined by both policies (%s): the %s definition won", c.ID, strings.Join(c.Fields, ", "), c.Winner))
	}
	for _, n := range d.Manifest.NotTriggered {
		out = append(out, fmt.Sprintf("check %q not required: no changed path matches %s", n.ID, strings.Join(n.Paths, ", ")))
	}
	out = append(out, d.Verdict.Notes...)
	return out
}

// whySection says in words why each check run did not pass — the last
// lines it printed when no report names a failed test, the causes runmill
// recognises (explain.Checks, the same
// as the console's Why: block) — then which repository fields an operator
// definition replaced, and what an unproven required check cannot detect.
func whySection(run *Run) []string {
	d := &run.Delivery
	xs := explain.Checks(run.Dir, d)
	var out []string
	var causes []string
	for _, x := range xs {
		if x.Status == record.Passed {
			continue
		}
		phase := explain.PhaseWords(x.Phase)
		// The failing tests themselves are named once, in Findings.
		var lines []string
		for _, h := range x.Hints {
			lines = append(lines, fmt.Sprintf("- **Hint** (%s): %s — seen: %s", text(h.Cause), text(h.Fix), code(h.Line)))
		}
		for _, tl := range []struct {
			name  string
			lines []string
		}{{"stderr", x.StderrTail}, {"stdout", x.StdoutTail}} {
			if len(tl.lines) == 0 {
				continue
			}
			lines = append(lines, fmt.Sprintf("- Last %s of %s%s:", printable.Plural(len(tl.lines), "line", "lines"), tl.name, phase), "")
			lines = append(lines, fenced(tl.lines)...)
			lines = append(lines, "")
		}
		if len(lines) == 0 {
			continue
		}
		causes = append(causes, fmt.Sprintf("**%s**%s:", code(x.Check), phase), "")
		causes = append(causes, lines...)
		causes = append(causes, "")
	}
	if len(causes) > 0 {
		out = append(out, "### Why", "")
		out = append(out, causes...)
	}
	var overrides []string
	for _, c := range d.Manifest.Conflicts {
		if c.Winner != discovery.DefinedByOperator {
			continue
		}
		var fields []string
		for _, f := range c.Fields {
			// Both documents' requirement rules apply (spec § 1).
			if f != "paths" && f != "required" {
				fields = append(fields, code(f))
			}
		}
		if len(fields) > 0 {
			verb := "no longer apply"
			if len(fields) == 1 {
				verb = "no longer applies"
			}
			overrides = append(overrides, fmt.Sprintf("- %s: the operator policy's definition replaces the repository's; the repository's %s %s.", code(c.ID), strings.Join(fields, ", "), verb))
		}
	}
	if len(overrides) > 0 {
		out = append(out, "### Overrides", "")
		out = append(out, overrides...)
		out = append(out, "")
	}
	var unproven []string
	for _, x := range xs {
		if x.Unproven != "" {
			unproven = append(unproven, fmt.Sprintf("- %s: %s", code(x.Check), text(x.Unproven)))
		}
	}
	if len(unproven) > 0 {
		head := "### Unproven"
		if !d.Verdict.FailOnSkippedCheck {
			head += " (allowed: `verification.fail_on_skipped_check` is false)"
		}
		out = append(out, head, "")
		out = append(out, unproven...)
		out = append(out, "")
	}
	return out
}

// fenced renders escaped one-line strings as a fenced code block whose
// fence is longer than any backtick or tilde run inside, so no line can
// end it.
func fenced(lines []string) []string {
	longest := 2
	for _, l := range lines {
		run := 0
		for _, r := range l {
			if r == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
	}
	fence := strings.Repeat("`", longest+1)
	out := []string{fence + "text"}
	for _, l := range lines {
		out = append(out, clip(l, maxCellRunes))
	}
	return append(out, fence)
}
