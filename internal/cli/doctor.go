package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	doctorpkg "github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/printable"
)

// dependencyChecker answers doctor's verification:dependencies check and
// init's dependency check; tests swap in a double.
var dependencyChecker doctorpkg.DependencyChecker = doctorpkg.Deps{}

// doctorOptions are doctor's flags.
type doctorOptions struct {
	run  doctorpkg.Options // Checks, RepoDir, Base, PolicyFile, ContainerdAddress, StateDir
	json bool
}

func newDoctorCmd(runF func(context.Context, IO, *doctorOptions) error) *command {
	if runF == nil {
		runF = runDoctor
	}
	c := &command{
		name:    "doctor",
		usage:   "[--check NAME]... [--json] [--repo DIR] [--base REV] [--policy FILE] [--containerd-address ADDR] [--out DIR]",
		summary: "check the environment: containerd, the sandbox probe, prepared dependencies, the policies",
		long: `Checks, each with one PASS or FAIL line and the fix:
  containerd                 a containerd answers (--containerd-address, the system socket, or a private one runmill starts)
  sandbox                    the probe: a canary task measures every isolation guarantee verification relies on
  pytest                     each interpreter a check runs pytest with ('python3 -m pytest') runs it in the sandbox
  verification:dependencies  prepared dependencies of the checks that declare them match the base
  policy                     .runmill/checks.yaml at --base (default HEAD) and --policy load strictly
  state                      the state directory's size (runs and caches) and the retention rule pruning its runs
  checks                     (only by name) runs each check of --base once in the sandbox, exactly as
                             verification runs a candidate (operator policy, prepared dependencies),
                             and says per check: passed or failed with the cause, proven or unproven,
                             the tests its report found

--check (repeatable, or comma-separated) runs only the named checks.
Exit: 0 every check passed · 1 a check failed · 2 usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &doctorOptions{}
		var names []string
		fs := newFlags(c, s)
		fs.Func("check", "run only check `NAME` ("+strings.Join(doctorpkg.Known, ", ")+")", func(v string) error {
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); !slices.Contains(doctorpkg.Known, n) {
					return fmt.Errorf("unknown check %q (known: %s)", n, strings.Join(doctorpkg.Known, ", "))
				}
				names = append(names, n)
			}
			return nil
		})
		fs.BoolVar(&o.json, "json", false, "print the results as JSON on stdout")
		fs.StringVar(&o.run.RepoDir, "repo", ".", "repository `DIR` (policy, verification:dependencies)")
		fs.StringVar(&o.run.Base, "base", "HEAD", "base revision whose .runmill/checks.yaml governs")
		fs.StringVar(&o.run.PolicyFile, "policy", "", "operator policy `FILE`")
		fs.StringVar(&o.run.ContainerdAddress, "containerd-address", "", "containerd socket `ADDR` (default: the system socket, else a private daemon)")
		fs.StringVar(&o.run.StateDir, "out", "", "the state `DIR` verification uses, as for verify (default $RUNMILL_STATE_DIR, else /var/lib/runmill as root): the state check measures it and names it; containerd and the checks run there (without --out, in a temporary directory, removed)")
		if err := fs.parseStrict(args); err != nil {
			return err
		}
		o.run.Checks = doctorpkg.Default
		if len(names) > 0 {
			o.run.Checks = names
		}
		return runF(ctx, s, o)
	}
	return c
}

// runDoctor runs the checks and prints one PASS or FAIL line each (or the
// JSON answer); any failure answers exit 1.
func runDoctor(ctx context.Context, s IO, o *doctorOptions) error {
	ro := o.run
	ro.Dependencies, ro.Getenv = dependencyChecker, os.Getenv
	results := doctorpkg.Run(ctx, ro)
	ok := true
	for _, r := range results {
		ok = ok && r.OK
	}
	if o.json {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			OK     bool               `json:"ok"`
			Checks []doctorpkg.Result `json:"checks"`
		}{ok, results}); err != nil {
			return err
		}
	} else {
		printDoctor(s.Out, results, slices.Contains(ro.Checks, doctorpkg.BaseChecks))
	}
	if !ok {
		return answer()
	}
	return nil
}

func printDoctor(w io.Writer, results []doctorpkg.Result, ranBase bool) {
	for _, r := range results {
		word := "PASS"
		if !r.OK {
			word = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-26s %s\n", word, r.Name, r.Detail)
		if !r.OK && r.Fix != "" {
			fmt.Fprintf(w, "      %-26s fix: %s\n", "", r.Fix)
		}
		writeBaseChecks(w, r.Checks)
		writeOverrides(w, r.Overrides)
	}
	if !ranBase {
		fmt.Fprintln(w, "note: the checks themselves were not run; 'runmill doctor --check checks' runs each once in the sandbox")
	}
}

// writeBaseChecks renders doctor --check checks' per-check lines, with
// the causes as verify's Why: block says them.
func writeBaseChecks(w io.Writer, cs []engine.CheckDiagnosis) {
	for _, c := range cs {
		tests := "no report"
		if c.Tests != nil {
			tests = fmt.Sprintf("%d tests found (%d passed, %d failed, %d skipped)", c.Tests.Passed+c.Tests.Failed+c.Tests.Skipped, c.Tests.Passed, c.Tests.Failed, c.Tests.Skipped)
		}
		fmt.Fprintf(w, "      %-20s %-7s %-9s %s\n", printable.Text(c.Check, maxIDBytes), c.Status, c.Coverage, tests)
		for _, f := range c.Findings {
			fmt.Fprintf(w, "        - %s\n", printable.Text(f.Message, maxMessageBytes))
		}
		for _, l := range c.Harness {
			fmt.Fprintf(w, "        note: %s\n", printable.Text(l, maxMessageBytes))
		}
		if c.Why != nil {
			writeCauses(w, *c.Why, "        ")
			if c.Why.Unproven != "" {
				fmt.Fprintf(w, "        unproven: %s\n", c.Why.Unproven)
			}
		}
	}
}
