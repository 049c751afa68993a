package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/initpolicy"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// Doctor check names: the stable interface of `runmill doctor --check`.
const (
	doctorContainerd   = "containerd"
	doctorSandbox      = "sandbox"
	doctorPytest       = "pytest"
	doctorDependencies = "verification:dependencies"
	doctorPolicy       = "policy"
	doctorState        = "state"
	doctorBaseChecks   = "checks"
)

// doctorChecks run by default; doctorBaseChecks runs the repository's test
// suites, so it is asked for by name.
var doctorChecks = []string{doctorContainerd, doctorSandbox, doctorPytest, doctorDependencies, doctorPolicy, doctorState}

var doctorKnown = append(slices.Clone(doctorChecks), doctorBaseChecks)

// DependencyRequest asks whether the prepared dependencies for one
// strategy match the trusted base (spec § 3, step 2): the source checkout's
// install against the base's lockfiles — ahead, behind, missing, stale —
// without fetching, copying, warming a cache or running a package manager.
type DependencyRequest struct {
	RepoDir  string
	Base     string   // resolved base commit whose policy declared the checks
	Strategy string   // npm | go-modules
	Checks   []string // ids of the checks that declare it
	// GoModules is the operator policy's go-modules settings.
	GoModules policy.GoModules
}

// DependencyChecker is what `doctor --check verification:dependencies`
// needs of prepared dependencies (internal/deps provides it). A nil error
// means ready; an error says what is wrong and carries RM-VERIFY-005.
type DependencyChecker interface {
	CheckDependencies(ctx context.Context, req DependencyRequest) (detail string, err error)
}

// dependencyChecker is internal/deps (deps.go); tests swap in a double.
var dependencyChecker DependencyChecker = depsChecker{}

// doctorResult is one line of the doctor's answer.
type doctorResult struct {
	Name   string     `json:"name"`
	OK     bool       `json:"ok"`
	Detail string     `json:"detail"`
	Code   rmerr.Code `json:"code,omitempty"`
	Fix    string     `json:"fix,omitempty"`
	// Checks are the base's checks as doctor --check checks ran them.
	Checks []engine.CheckDiagnosis `json:"checks,omitempty"`
}

func failed(name string, err error) doctorResult {
	r := doctorResult{Name: name, Detail: err.Error(), Code: rmerr.CodeOf(err)}
	var e *rmerr.Error
	if errors.As(err, &e) {
		r.Fix = e.Hint
		// The detail is the error without its hint: the fix has its own field.
		c := *e
		c.Hint = ""
		r.Detail = c.Error()
	}
	if r.Fix == "" {
		r.Fix = "see docs/errors.md for " + string(r.Code)
	}
	return r
}

type doctorOptions struct {
	checks            []string
	repo, base        string
	policyFile        string
	containerdAddress string
	stateDir          string
}

func init() {
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
		var o doctorOptions
		var asJSON bool
		var names []string
		fs := newFlags(c, s)
		fs.Func("check", "run only check `NAME` ("+strings.Join(doctorKnown, ", ")+")", func(v string) error {
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); !slices.Contains(doctorKnown, n) {
					return fmt.Errorf("unknown check %q (known: %s)", n, strings.Join(doctorKnown, ", "))
				}
				names = append(names, n)
			}
			return nil
		})
		fs.BoolVar(&asJSON, "json", false, "print the results as JSON on stdout")
		fs.StringVar(&o.repo, "repo", ".", "repository `DIR` (policy, verification:dependencies)")
		fs.StringVar(&o.base, "base", "HEAD", "base revision whose .runmill/checks.yaml governs")
		fs.StringVar(&o.policyFile, "policy", "", "operator policy `FILE`")
		fs.StringVar(&o.containerdAddress, "containerd-address", "", "containerd socket `ADDR` (default: the system socket, else a private daemon)")
		fs.StringVar(&o.stateDir, "out", "", "state `DIR` for a private containerd (default: a temporary directory, removed)")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if err := noPositional(fs, pos); err != nil {
			return err
		}
		o.checks = doctorChecks
		if len(names) > 0 {
			o.checks = names
		}
		results := runDoctor(ctx, o)
		ok := true
		for _, r := range results {
			ok = ok && r.OK
		}
		if asJSON {
			enc := json.NewEncoder(s.Out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(struct {
				OK     bool           `json:"ok"`
				Checks []doctorResult `json:"checks"`
			}{ok, results}); err != nil {
				return err
			}
		} else {
			for _, r := range results {
				word := "PASS"
				if !r.OK {
					word = "FAIL"
				}
				fmt.Fprintf(s.Out, "%s  %-26s %s\n", word, r.Name, r.Detail)
				if !r.OK && r.Fix != "" {
					fmt.Fprintf(s.Out, "      %-26s fix: %s\n", "", r.Fix)
				}
				writeBaseChecks(s.Out, r.Checks)
			}
			if !slices.Contains(o.checks, doctorBaseChecks) {
				fmt.Fprintln(s.Out, "note: the checks themselves were not run; 'runmill doctor --check checks' runs each once in the sandbox")
			}
		}
		if !ok {
			return answer()
		}
		return nil
	}
	register(c)
}

// runDoctor runs the selected checks in the documented order. containerd
// is connected once, when a selected check needs it.
func runDoctor(ctx context.Context, o doctorOptions) []doctorResult {
	want := func(n string) bool { return slices.Contains(o.checks, n) }
	var out []doctorResult

	// The policies are read first: the sandbox check probes with the
	// operator's host paths, as verification will.
	var pol *doctorPolicies
	var polErr error
	if want(doctorPolicy) || want(doctorDependencies) || want(doctorSandbox) || want(doctorPytest) {
		pol, polErr = loadDoctorPolicies(ctx, o)
	}

	if want(doctorContainerd) || want(doctorSandbox) || want(doctorPytest) {
		stateDir := o.stateDir
		if stateDir == "" {
			d, err := os.MkdirTemp("", "runmill-doctor-")
			if err != nil {
				return append(out, failed(doctorContainerd, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating a state directory").WithHint("set TMPDIR to a writable directory, or pass --out")))
			}
			defer os.RemoveAll(d)
			stateDir = d
		}
		sb, err := sandbox.Connect(ctx, sandbox.Options{Address: o.containerdAddress, StateDir: stateDir})
		if err == nil {
			defer sb.Close()
		}
		if want(doctorContainerd) {
			if err != nil {
				out = append(out, failed(doctorContainerd, err))
			} else {
				how := "system containerd"
				if sb.Private() {
					how = "private containerd started by runmill (no daemon answered at the system socket)"
				} else if o.containerdAddress != "" {
					how = "containerd"
				}
				out = append(out, doctorResult{Name: doctorContainerd, OK: true, Detail: fmt.Sprintf("%s answers at %s", how, sb.Address())})
			}
		}
		if want(doctorSandbox) {
			out = append(out, doctorProbe(ctx, sb, err, stateDir, pol, polErr))
		}
		if want(doctorPytest) {
			out = append(out, doctorPytestCheck(ctx, sb, err, pol, polErr))
		}
	}
	if want(doctorDependencies) {
		out = append(out, doctorDeps(ctx, o, pol, polErr))
	}
	if want(doctorBaseChecks) {
		out = append(out, doctorBase(ctx, o))
	}
	if want(doctorPolicy) {
		if polErr != nil {
			out = append(out, failed(doctorPolicy, polErr))
		} else {
			out = append(out, doctorResult{Name: doctorPolicy, OK: true, Detail: pol.describe()})
		}
	}
	if want(doctorState) {
		out = append(out, doctorStateDir(engine.StateDir(o.stateDir, os.Getenv)))
	}
	return out
}

func doctorProbe(ctx context.Context, sb *sandbox.Sandbox, connErr error, stateDir string, pol *doctorPolicies, polErr error) doctorResult {
	if connErr != nil {
		r := failed(doctorSandbox, connErr)
		r.Detail = "cannot run the probe: " + r.Detail
		return r
	}
	var hostPaths []string
	switch {
	case pol != nil && pol.operator != nil:
		hostPaths = pol.operator.Doc.Sandbox.HostPaths
	case pol == nil && polErr != nil:
		// Probing the defaults would vouch for settings verification will
		// not use.
		r := failed(doctorSandbox, polErr)
		r.Detail = "cannot probe with the operator's settings: " + r.Detail
		return r
	}
	rep, err := engine.ProbeSandbox(ctx, sb, stateDir, hostPaths)
	if err != nil {
		return failed(doctorSandbox, err)
	}
	rro := "rro"
	if !rep.Runtime.RecursiveReadOnly {
		rro = "ro (no rro; the mountinfo check held)"
	}
	return doctorResult{Name: doctorSandbox, OK: true, Detail: fmt.Sprintf("%d guarantees measured, all held (containerd %s, %s, kernel %s, %s)",
		len(rep.Checks), rep.Runtime.Containerd, rep.Runtime.Runc, rep.Runtime.Kernel, rro)}
}

// doctorPolicies are the two documents verification would read.
type doctorPolicies struct {
	repoDir  string
	base     string
	repo     *discovery.RepositoryPolicy
	operator *discovery.OperatorPolicy
	file     string
}

// loadDoctorPolicies loads the operator policy first, so the probe can use
// its host paths even when the repository's policy is broken: the result is
// then non-nil (operator only) together with the error.
func loadDoctorPolicies(ctx context.Context, o doctorOptions) (*doctorPolicies, error) {
	p := &doctorPolicies{file: o.policyFile}
	if o.policyFile != "" {
		op, err := engine.LoadOperatorPolicy(o.policyFile, o.repo)
		if err != nil {
			return nil, err
		}
		p.operator = op
	}
	r, err := git.Open(ctx, o.repo)
	if err != nil {
		return p, err
	}
	p.repoDir = r.Dir
	if p.base, err = r.ResolveCommit(ctx, o.base, "--base"); err != nil {
		return p, err
	}
	// Base and candidate are the same commit: doctor judges the policy
	// that governs changes on top of --base.
	if p.repo, err = discovery.LoadRepositoryPolicy(ctx, r, p.base, p.base); err != nil {
		return p, err
	}
	if p.repo == nil {
		return p, rmerr.New(rmerr.VerifyManifest, "no %s at %s", policy.RepoPolicyPath, short(p.base)).At(r.Dir, 0).
			WithHint("run 'runmill init', review and commit %s", policy.RepoPolicyPath)
	}
	return p, nil
}

func (p *doctorPolicies) describe() string {
	ids := make([]string, len(p.repo.Doc.Checks))
	for i, c := range p.repo.Doc.Checks {
		ids[i] = c.ID
	}
	s := fmt.Sprintf("%s@%s: %d checks (%s)", policy.RepoPolicyPath, short(p.base), len(ids), strings.Join(ids, ", "))
	if p.operator == nil {
		return s + "; no operator policy given (--policy)"
	}
	op := p.operator.Doc
	return s + fmt.Sprintf("; operator policy %s: autonomy %s, fail_on_skipped_check %v, %d commands", p.file, op.Autonomy,
		op.Verification.FailOnSkipped(), len(op.Verification.Commands))
}

// doctorDeps groups the checks that declare dependencies by strategy (the
// operator's definition wins, as in Discovery) and asks the dependency
// checker about each.
func doctorDeps(ctx context.Context, o doctorOptions, pol *doctorPolicies, polErr error) doctorResult {
	if polErr != nil {
		r := failed(doctorDependencies, polErr)
		r.Detail = "cannot read which checks declare dependencies: " + r.Detail
		return r
	}
	strategy := map[string]string{} // check id → strategy
	for _, c := range pol.repo.Doc.Checks {
		strategy[c.ID] = c.Dependencies
	}
	if pol.operator != nil {
		for _, c := range pol.operator.Doc.Verification.Commands {
			strategy[c.ID] = c.Dependencies
		}
	}
	byStrategy := map[string][]string{}
	for id, s := range strategy {
		if s != "" {
			byStrategy[s] = append(byStrategy[s], id)
		}
	}
	if len(byStrategy) == 0 {
		return doctorResult{Name: doctorDependencies, OK: true, Detail: "no check declares dependencies"}
	}
	var names []string
	for s := range byStrategy {
		names = append(names, s)
	}
	sort.Strings(names)
	var details []string
	for _, s := range names {
		ids := byStrategy[s]
		sort.Strings(ids)
		req := DependencyRequest{RepoDir: pol.repoDir, Base: pol.base, Strategy: s, Checks: ids}
		if pol.operator != nil {
			req.GoModules = pol.operator.Doc.Dependencies.GoModules
		}
		d, err := dependencyChecker.CheckDependencies(ctx, req)
		if err != nil {
			return failed(doctorDependencies, err)
		}
		details = append(details, fmt.Sprintf("%s (%s): %s", s, strings.Join(ids, ", "), d))
	}
	return doctorResult{Name: doctorDependencies, OK: true, Detail: strings.Join(details, "; ")}
}

// pytestCall finds the interpreter a command runs pytest with: the word
// before `-m pytest` (python3, python3.11, /opt/py/bin/python3), after a
// shell separator or an environment assignment.
var pytestCall = regexp.MustCompile(`(?:^|[\s;&|(])((?:[^\s;&|()'"=]*/)?python[0-9.]*)\s+-m\s+pytest\b`)

// doctorPytestCheck proves, for each interpreter the governing checks run
// pytest with, that `INTERP -m pytest --version` runs inside the sandbox
// with the operator's host paths: the interpreter the task's PATH resolves
// to, its environment, its user. init proves the same on the host before
// it writes the check (RM-INIT-003).
func doctorPytestCheck(ctx context.Context, sb *sandbox.Sandbox, connErr error, pol *doctorPolicies, polErr error) doctorResult {
	if polErr != nil {
		r := failed(doctorPytest, polErr)
		r.Detail = "cannot read which checks run pytest: " + r.Detail
		return r
	}
	run := map[string]policy.CheckSpec{} // check id → definition; the operator's wins
	for _, c := range pol.repo.Doc.Checks {
		run[c.ID] = c
	}
	var hostPaths []string
	if pol.operator != nil {
		for _, c := range pol.operator.Doc.Verification.Commands {
			run[c.ID] = c
		}
		hostPaths = pol.operator.Doc.Sandbox.HostPaths
	}
	users := map[string][]string{} // interpreter → check ids
	var inImage []string
	for id, c := range run {
		m := pytestCall.FindStringSubmatch(c.Run)
		switch {
		case m == nil:
		case c.Image != "":
			inImage = append(inImage, id)
		default:
			users[m[1]] = append(users[m[1]], id)
		}
	}
	sort.Strings(inImage)
	imageNote := ""
	if len(inImage) > 0 {
		imageNote = fmt.Sprintf("; %s run in an image, not probed here", strings.Join(inImage, ", "))
	}
	if len(users) == 0 {
		return doctorResult{Name: doctorPytest, OK: true, Detail: "no check runs pytest on the host toolchain" + imageNote}
	}
	if connErr != nil {
		r := failed(doctorPytest, connErr)
		r.Detail = "cannot run python3 -m pytest in the sandbox: " + r.Detail
		return r
	}
	interps := make([]string, 0, len(users))
	for i := range users {
		interps = append(interps, i)
	}
	sort.Strings(interps)
	var details []string
	for _, interp := range interps {
		ids := users[interp]
		sort.Strings(ids)
		q := shellWord(interp)
		// command -v names the interpreter the task's PATH resolves to, on
		// the first line, for the detail and the fix.
		res, err := engine.ProbeTool(ctx, sb, hostPaths, "command -v "+q+" || { echo "+q+": not found on the sandbox PATH; exit 127; }; "+q+" -m pytest -p no:cacheprovider --version 2>&1")
		if err != nil {
			r := failed(doctorPytest, err)
			r.Detail = "running python3 -m pytest in the sandbox: " + r.Detail
			return r
		}
		lines := strings.Split(strings.TrimSpace(string(res.Stdout.Kept)), "\n")
		resolved, said := interp, ""
		if len(lines) > 0 && strings.HasPrefix(lines[0], "/") && res.ExitCode != 127 {
			resolved = lines[0]
		}
		if len(lines) > 1 || res.ExitCode == 127 {
			said = strings.TrimSpace(lines[len(lines)-1])
		}
		if res.ExitCode != 0 {
			if said == "" {
				said = strings.TrimSpace(string(res.Stderr.Kept))
			}
			fix := initpolicy.PytestFix(resolved, "")
			if len(hostPaths) > 0 {
				fix += ", or add the interpreter's prefix to sandbox.host_paths"
			}
			return failed(doctorPytest, rmerr.New(rmerr.InitToolchain, "%s -m pytest fails in the sandbox (checks: %s; exit %d): %s",
				resolved, strings.Join(ids, ", "), res.ExitCode, said).WithHint("%s", fix))
		}
		details = append(details, fmt.Sprintf("%s: %s (checks: %s)", resolved, said, strings.Join(ids, ", ")))
	}
	return doctorResult{Name: doctorPytest, OK: true, Detail: "python3 -m pytest runs in the sandbox: " + strings.Join(details, "; ") + imageNote}
}

// shellWord quotes s for /bin/sh unless it is plainly safe.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// doctorBase runs the base's checks once (engine.CheckBase). It fails when
// a check failed, or when a required check is unproven under a policy whose
// gate blocks on it: the first pull request would not be merge-ready.
func doctorBase(ctx context.Context, o doctorOptions) doctorResult {
	stateDir := o.stateDir
	if stateDir == "" {
		d, err := os.MkdirTemp("", "runmill-doctor-")
		if err != nil {
			return failed(doctorBaseChecks, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating a state directory").WithHint("set TMPDIR to a writable directory, or pass --out"))
		}
		defer os.RemoveAll(d)
		stateDir = d
	}
	bc, err := engine.CheckBase(ctx, engine.DoctorChecksOptions{RepoDir: o.repo, Base: o.base, PolicyFile: o.policyFile,
		StateDir: stateDir, ContainerdAddress: o.containerdAddress})
	if err != nil {
		if rmerr.CodeOf(err) == "" {
			err = rmerr.Wrap(rmerr.InitChecks, err, "running the base's checks").WithHint("fix what the error names (--out must be a writable directory), then run the doctor again")
		}
		return failed(doctorBaseChecks, err)
	}
	var failedN, unprovenN int
	for _, c := range bc.Checks {
		if c.Status != verdict.Passed {
			failedN++
		} else if c.Coverage != verdict.Proven {
			unprovenN++
		}
	}
	r := doctorResult{Name: doctorBaseChecks, Checks: bc.Checks,
		Detail: fmt.Sprintf("%s run once at the base %s: %d passed, %d failed, %d unproven", plural(len(bc.Checks), "check", "checks"), short(bc.Base),
			len(bc.Checks)-failedN, failedN, unprovenN)}
	blocked := unprovenN > 0 && bc.FailOnSkippedCheck
	r.OK = failedN == 0 && !blocked && len(bc.Checks) > 0
	switch {
	case len(bc.Checks) == 0:
		r.Code, r.Fix = rmerr.InitChecks, "declare checks in .runmill/checks.yaml (runmill init writes a starter)"
	case failedN > 0:
		r.Code, r.Fix = rmerr.InitChecks, "a pull request would not be merge-ready: fix each failed check as its cause says, then run this again"
	case blocked:
		r.Code, r.Fix = rmerr.InitChecks, "verification.fail_on_skipped_check is true: declare a report for each unproven check (as said above)"
	}
	return r
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
		if c.Why != nil {
			writeCauses(w, *c.Why, "        ")
			if c.Why.Unproven != "" {
				fmt.Fprintf(w, "        unproven: %s\n", c.Why.Unproven)
			}
		}
	}
}
