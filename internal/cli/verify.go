package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

func init() {
	c := &command{
		name:    "verify",
		usage:   "--repo DIR --base REV --candidate REV [--policy FILE] [--out DIR] [--signing-key FILE] [--agent-proposals FILE] [--containerd-address ADDR] [--parallel N] [--shard K/N [--shard-durations FILE]] [--reuse DIR]... [--trust FILE] [--no-reuse] [--github-repo OWNER/NAME] [--pr N] [--github-job NAME] [--check-run [--check-run-name NAME]] [--no-github] [--json] [--github-actions]",
		summary: "run the whole pipeline and write the run's evidence",
		long: `Resolves the required checks (Discovery), runs each in a fresh detached checkout
inside a containerd task (network off, checkout read-only) — first at the baseline
when it declares a report: the merge base of --base and --candidate, where the change
started (--base itself when the candidate contains it; the policy is always read
from --base) — applies the Outcome and Coverage rules and writes the run's evidence
under --out (default $RUNMILL_STATE_DIR, else /var/lib/runmill as root).

With a GitHub token (GITHUB_TOKEN) and a repository (GITHUB_REPOSITORY) it also
reads the pull request (GITHUB_EVENT_PATH's pull_request, or --pr), the contexts the
base branch requires (branch protection and rulesets; a refusal is recorded as
unknown), and after the local checks reconciles the remote checks on the candidate
(runmill's own job --github-job excluded; a required context never scheduled fails
after 10 minutes with RM-CI-002, one still running is waited for up to --github-wait).
Without a token no
GitHub call is made and the evidence says the GitHub sources were not consulted.
The token never enters a sandbox and is never printed.

Exit: 0 merge-ready · 1 not merge-ready (any reason) · 2 usage or operator-config error ·
3 no verdict could be produced (sandbox, git, disk).`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		var o engine.VerifyOptions
		var out, keyFile string
		var asJSON, ghActions bool
		gf := githubFlags{verify: true}
		var sf shardFlags
		var rf reuseFlags
		fs := newFlags(c, s)
		gf.register(fs)
		sf.register(fs)
		rf.register(fs)
		fs.StringVar(&o.Discover.RepoDir, "repo", "", "repository `DIR`")
		fs.StringVar(&o.Discover.Base, "base", "", "base revision")
		fs.StringVar(&o.Discover.Candidate, "candidate", "", "candidate revision")
		fs.StringVar(&o.Discover.PolicyFile, "policy", "", "operator policy `FILE`")
		fs.StringVar(&o.Discover.ProposalsFile, "agent-proposals", "", "agent-proposed check ids (`FILE`, - for stdin)")
		fs.StringVar(&out, "out", "", "state `DIR` (runs, checkouts, sandbox state)")
		fs.StringVar(&keyFile, "signing-key", "", "Ed25519 PKCS#8 PEM `FILE` (or RUNMILL_SIGNING_KEY); unsigned without")
		fs.StringVar(&o.ContainerdAddress, "containerd-address", "", "containerd socket `ADDR` (default: the system socket, else a private daemon)")
		fs.IntVar(&o.Parallel, "parallel", 0, "concurrent check runs (0: number of CPUs)")
		fs.BoolVar(&asJSON, "json", false, "print the run's record as JSON on stdout")
		fs.BoolVar(&ghActions, "github-actions", false, "also write the step outputs, job summary and annotations of a GitHub Actions step (action.yml sets it)")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if err := noPositional(fs, pos); err != nil {
			return err
		}
		if err := required(fs, "repo", "base", "candidate"); err != nil {
			return err
		}
		if o.GitHub, err = gf.options(fs, os.Getenv, s.Err); err != nil {
			return err
		}
		if err := sf.apply(&o); err != nil {
			return err
		}
		o.Repository, o.PullRequest = gf.repo, gf.pr
		o.Discover.Stdin = s.In
		o.StateDir = engine.StateDir(out, os.Getenv)
		o.Progress = s.Err
		o.Version = Version
		if o.SigningKey, err = loadSigningKey(keyFile); err != nil {
			return err
		}
		if o.SigningKey == nil {
			fmt.Fprintln(s.Err, "runmill: no signing key (--signing-key or RUNMILL_SIGNING_KEY): the evidence is written UNSIGNED")
		}
		if err := rf.apply(&o); err != nil {
			return err
		}
		gh := startGitHubStep(s, ghActions && o.Shard == nil) // a shard publishes no verdict
		run, err := engine.Verify(ctx, o)
		if err != nil {
			gh.finish(ctx, nil, err, o.Discover.RepoDir)
			return err
		}
		if o.Shard != nil {
			return finishShard(s, run, asJSON)
		}
		if asJSON {
			enc := json.NewEncoder(s.Out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(runSummary(run)); err != nil {
				return err
			}
		} else {
			printRun(s.Out, run)
		}
		gh.finish(ctx, run, nil, o.Discover.RepoDir)
		if !run.MergeReady() {
			return answer()
		}
		return nil
	}
	register(c)
}

// loadSigningKey reads the key from the flag's file or RUNMILL_SIGNING_KEY.
// The key stays in this process: it is never passed to a sandbox.
func loadSigningKey(file string) (*evidence.SigningKey, error) {
	var pem []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, rmerr.Wrap(rmerr.Usage, err, "reading the signing key").At(file, 0)
		}
		pem = b
	case os.Getenv("RUNMILL_SIGNING_KEY") != "":
		pem = []byte(os.Getenv("RUNMILL_SIGNING_KEY"))
		file = "RUNMILL_SIGNING_KEY"
	default:
		return nil, nil
	}
	k, err := evidence.ParseSigningKey(pem)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.Usage, err, "parsing the signing key").At(file, 0).
			WithHint("pass an Ed25519 PKCS#8 PEM key, e.g. from 'runmill evidence keygen'")
	}
	return k, nil
}

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
	fmt.Fprintf(w, "%s  %s  (candidate %s, base %s)\n\n", verdictWord, r.ID, short(d.Candidate.Head), short(d.Candidate.Base))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable.Text(c.CheckID, maxIDBytes), c.Phase, c.Status, c.Coverage, exit, tests, tree, dur)
	}
	tw.Flush()
	writeWhy(w, d, explain.Checks(r.Dir, d), r.ID)
	if ls := explain.HarnessLines(d); len(ls) > 0 {
		// Issue 19: a harness the change edited ran in the base's version.
		fmt.Fprintln(w, "\nHarness:")
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
	reasons := d.Verdict.Reasons()
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nWhy:")
	}
	for i, f := range reasons {
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
			for _, x := range byCheck[f.Check] {
				if x.Phase != verdict.Candidate {
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
		if last := i == len(reasons)-1 || reasons[i+1].Check != f.Check; last && !explained[f.Check] {
			explained[f.Check] = true
			for _, x := range byCheck[f.Check] {
				writeCauses(w, x, "      ")
			}
		}
	}
	var overrides []string
	for _, c := range d.Manifest.Conflicts {
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
	var unproven []explain.Explanation
	for _, x := range xs {
		if x.Unproven != "" {
			unproven = append(unproven, x)
		}
	}
	if len(unproven) > 0 {
		head := "\nUnproven:"
		if !d.Verdict.FailOnSkippedCheck {
			head = "\nUnproven (allowed here: verification.fail_on_skipped_check is false):"
		}
		fmt.Fprintln(w, head)
		for _, x := range unproven {
			fmt.Fprintf(w, "  %s: %s\n", printable.Text(x.Check, maxIDBytes), x.Unproven)
		}
	}
}

// writeCauses prints what a failing run printed and the causes runmill
// recognised in it.
func writeCauses(w io.Writer, x explain.Explanation, indent string) {
	phase := ""
	if x.Phase == verdict.Baseline {
		phase = " at the baseline"
	}
	for _, s := range []struct {
		name  string
		lines []string
	}{{"stderr", x.StderrTail}, {"stdout", x.StdoutTail}} {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s%s%s, last %s:\n", indent, s.name, phase, plural(len(s.lines), "line", "lines"))
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

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
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
