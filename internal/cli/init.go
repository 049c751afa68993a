package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	doctorpkg "github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/initpolicy"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

// initOptions are init's flags.
type initOptions struct {
	repo, base  string
	operatorOut string // "" writes the template to stdout
}

func newInitCmd(runF func(context.Context, IO, *initOptions) error) *command {
	if runF == nil {
		runF = runInit
	}
	c := &command{
		name:    "init",
		usage:   "[--repo DIR] [--base REV] [--operator-policy-out FILE]",
		summary: "write a starter .runmill/checks.yaml and an operator policy template",
		long: `Detects the ecosystems at the repository root (go.mod; package.json with jest,
vitest, mocha or node --test; pyproject.toml/pytest; Cargo.toml) and writes
.runmill/checks.yaml with one check per ecosystem whose command writes a report
runmill parses (coverage proven), and an operator policy template (pr-only) that
binds the toolchains this host's sandbox needs: to --operator-policy-out, which
must lie outside the repository, else to stdout. It never overwrites a file.
With --operator-policy-out, a repository that already has .runmill/checks.yaml
keeps it, and init writes only the operator template, from that file's checks
(an operator definition repeats the repository's dependencies: and timeout:).

When a check declares prepared dependencies (dependencies: npm or go-modules),
init then compares the source checkout with --base (default HEAD; fetch the
remote base first and name it) the way 'runmill doctor --check
verification:dependencies' does: ahead, behind, missing or stale install. It
fetches nothing and runs no package manager.

It writes no check that can only fail: the pytest check only when 'python3 -m
pytest' runs with the interpreter the sandbox sees and the sandbox's environment;
otherwise it is left commented out with the fix (RM-INIT-003).

Then 'runmill doctor --check checks --policy FILE' runs each check once in the
sandbox and says whether it will work.

Exit: 0 written (and dependencies ready) · 1 written, but NOT READY: the
dependencies are not ready (RM-VERIFY-005) or a check was left out because its
toolchain does not work here (RM-INIT-003); init says what it wrote and what is
missing · 2 nothing written: a file exists (RM-INIT-001; with
--operator-policy-out an existing checks.yaml is kept instead), nothing
recognised or writable (RM-INIT-002), usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &initOptions{}
		fl := newFlags(c, s)
		fl.StringVar(&o.repo, "repo", ".", "repository `DIR`")
		fl.StringVar(&o.base, "base", "HEAD", "the base `REV` the installed dependencies must match (fetch it first)")
		fl.StringVar(&o.operatorOut, "operator-policy-out", "", "write the operator policy template to `FILE` (outside the repository; default stdout)")
		if err := fl.parseStrict(args); err != nil {
			return err
		}
		return runF(ctx, s, o)
	}
	return c
}

// initTarget is where init writes, every refusal made before the first
// write: init writes both files or neither.
type initTarget struct {
	root, dir, checksFile string
	out                   string // the operator template's file; "" for stdout
	onlyOperator          bool   // checks.yaml exists and is kept
}

func runInit(ctx context.Context, s IO, o *initOptions) error {
	root, err := initRoot(o.repo)
	if err != nil {
		return err
	}
	plan, files, written, err := initPlan(root)
	if err != nil {
		return err
	}
	t, err := initTargets(root, o.operatorOut)
	if err != nil {
		return err
	}
	if t.onlyOperator {
		return initOperatorOnly(s, t.checksFile, t.out, plan)
	}
	if err := initWrite(s, t, files); err != nil {
		return err
	}
	where := initReport(s, t, plan, files, written)
	errs := []error{initDependencies(ctx, s, root, o.base, initpolicy.Plan{Checks: written})}
	if len(files.Omitted) > 0 {
		errs = append(errs, rmerr.New(rmerr.InitToolchain, "not written: %s", unusableSummary(files)).At(t.checksFile, 0).
			WithHint("%s; then uncomment the check in %s and run 'runmill doctor --check pytest'", unusableFixes(files), policy.RepoPolicyPath))
	}
	err = errors.Join(errs...)
	if err != nil {
		// Exit 1: the files are written and right; what is missing is
		// on this machine. Say both before the errors.
		fmt.Fprintf(s.Err, "runmill init: WRITTEN %s and the operator template (%s), but NOT READY (exit 1): the errors below say what is missing; fix them, then run 'runmill doctor --check checks --policy FILE'\n", t.checksFile, where)
	} else {
		fmt.Fprintf(s.Err, "then: 'runmill doctor --check checks --policy FILE' runs each check once in the sandbox and says whether it will work\n")
	}
	return err
}

// initRoot resolves --repo to the repository's real root directory.
func initRoot(repo string) (string, error) {
	root, err := filepath.Abs(repo)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", rmerr.Wrap(rmerr.Usage, err, "resolving --repo").At(repo, 0)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", rmerr.New(rmerr.Usage, "--repo is not a directory").At(repo, 0).WithHint("pass the repository's root directory")
	}
	return root, nil
}

// initPlan detects the ecosystems at root and renders the files; written
// are the checks that can be written (their toolchain works here).
func initPlan(root string) (initpolicy.Plan, initpolicy.Files, []initpolicy.Check, error) {
	plan, err := initpolicy.Detect(os.DirFS(root))
	if err != nil {
		return plan, initpolicy.Files{}, nil, rmerr.Wrap(rmerr.Usage, err, "reading the repository root").At(root, 0)
	}
	if len(plan.Checks) == 0 {
		e := rmerr.New(rmerr.InitNothing, "no ecosystem recognised at the repository root").At(root, 0).
			WithHint("write %s by hand: docs/policy.md, reporter flags in docs/reports.md", policy.RepoPolicyPath)
		if len(plan.Notes) > 0 {
			e.Msg += " (" + strings.Join(plan.Notes, "; ") + ")"
		}
		return plan, initpolicy.Files{}, nil, e
	}
	files := initpolicy.Render(plan, initHost())
	written := files.Written(plan)
	if len(written) == 0 {
		// Every recognised check needs a toolchain that does not work
		// here: an empty manifest is never merge-ready, so nothing is
		// written (as for RM-INIT-002).
		return plan, files, nil, rmerr.New(rmerr.InitNothing, "no check can be written: %s", unusableSummary(files)).At(root, 0).
			WithHint("%s; then run init again", unusableFixes(files))
	}
	return plan, files, written, nil
}

// initTargets makes every refusal before the first write.
func initTargets(root, out string) (initTarget, error) {
	t := initTarget{root: root, dir: filepath.Join(root, ".runmill")}
	t.checksFile = filepath.Join(t.dir, "checks.yaml")
	if st, err := os.Lstat(t.dir); err == nil && !st.IsDir() {
		return t, rmerr.New(rmerr.InitExists, ".runmill exists and is not a directory").At(t.dir, 0).
			WithHint("remove or rename it; init never follows a link out of the repository")
	}
	if err := refuseExisting(t.checksFile); err != nil {
		// Issue 14: with --operator-policy-out, an existing checks.yaml
		// is kept and only the operator template is written — from the
		// repository's own checks, so the operator's definitions carry
		// their dependencies: and timeout:.
		if out == "" || rmerr.CodeOf(err) != rmerr.InitExists {
			return t, err
		}
		t.onlyOperator = true
	}
	if out == "" {
		return t, nil
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return t, rmerr.Wrap(rmerr.Usage, err, "resolving --operator-policy-out").At(out, 0)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return t, rmerr.Wrap(rmerr.Usage, err, "--operator-policy-out's directory").At(out, 0).
			WithHint("create the directory first")
	}
	if rel, err := filepath.Rel(root, parent); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return t, rmerr.New(rmerr.Usage, "--operator-policy-out lies inside the repository %s", root).At(out, 0).
			WithHint("write the operator policy outside the repository, where a pull request cannot edit it")
	}
	t.out = filepath.Join(parent, filepath.Base(abs))
	return t, refuseExisting(t.out)
}

// initWrite writes checks.yaml and the operator template (to its file, or
// stdout).
func initWrite(s IO, t initTarget, files initpolicy.Files) error {
	if err := os.Mkdir(t.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return rmerr.Wrap(rmerr.Usage, err, "creating .runmill").At(t.dir, 0)
	}
	if err := writeNew(t.checksFile, files.Checks, 0o644); err != nil {
		return err
	}
	if t.out != "" {
		return writeNew(t.out, files.Operator, 0o644)
	}
	_, err := s.Out.Write(files.Operator)
	return err
}

// initReport says on stderr what init wrote, what each toolchain needs and
// what it left out; it returns where the operator template went.
func initReport(s IO, t initTarget, plan initpolicy.Plan, files initpolicy.Files, written []initpolicy.Check) string {
	fmt.Fprintf(s.Err, "runmill init: wrote %s with checks: %s\n", t.checksFile, strings.Join(initpolicy.Plan{Checks: written}.Ecosystems(), ", "))
	for _, tc := range files.Toolchains {
		switch {
		case !tc.Found():
			fmt.Fprintf(s.Err, "  %s: NOT FOUND on this host; its check fails until it is installed where the sandbox sees it\n", tc.Tool)
		case len(tc.Binds) > 0:
			fmt.Fprintf(s.Err, "  %s: %s, outside the default binds; the operator policy binds %s\n", tc.Tool, firstOf(tc.Host, tc.Visible), strings.Join(tc.Binds, ", "))
		default:
			fmt.Fprintf(s.Err, "  %s: %s (visible in the sandbox)\n", tc.Tool, tc.Visible)
		}
		if tc.Unusable != "" {
			fmt.Fprintf(s.Err, "  %s: %s\n", tc.Tool, tc.Unusable)
		}
	}
	for _, c := range files.Omitted {
		fmt.Fprintf(s.Err, "  NOT WRITTEN: the %s check (commented out in %s): it can only fail here\n", c.Spec.ID, policy.RepoPolicyPath)
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(s.Err, "  note: %s\n", n)
	}
	where := "stdout"
	if t.out != "" {
		where = t.out
	}
	fmt.Fprintf(s.Err, "runmill init: operator policy template on %s; keep it outside the repository.\n", where)
	fmt.Fprintf(s.Err, "next: review and commit %s, then run 'runmill verify --policy FILE' on a change\n", policy.RepoPolicyPath)
	return where
}

// initHost is where init looks tools up: this machine, with the sandbox's
// default binds. Tests point it at a real interpreter laid out in a temp
// directory.
var initHost = func() initpolicy.Host {
	return initpolicy.LocalHost{PATH: os.Getenv("PATH"), Getenv: os.Getenv}
}

func unusableSummary(f initpolicy.Files) string {
	var parts []string
	for _, c := range f.Omitted {
		for _, t := range f.Toolchains {
			if t.Tool == c.Tool {
				parts = append(parts, fmt.Sprintf("the %s check (%s)", c.Spec.ID, t.Unusable))
			}
		}
	}
	return strings.Join(parts, "; ")
}

func unusableFixes(f initpolicy.Files) string {
	var fixes []string
	for _, t := range f.Toolchains {
		if t.Unusable != "" {
			fixes = append(fixes, t.Fix)
		}
	}
	return strings.Join(fixes, "; ")
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func refuseExisting(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return rmerr.New(rmerr.InitExists, "file exists; init never overwrites").At(path, 0).
			WithHint("move it away or edit it by hand (docs/policy.md), then run init again")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rmerr.Wrap(rmerr.Usage, err, "checking for an existing file").At(path, 0)
	}
	return nil
}

// initDependencies checks, for each strategy the written checks declare, that
// the source checkout's install matches the base (spec § 3: init fails before
// work starts when the checkout is ahead, behind, missing dependencies or
// stale). The files are written either way: they are right, the install is
// not.
func initDependencies(ctx context.Context, s IO, root, baseRev string, plan initpolicy.Plan) error {
	var strategies []string
	for _, c := range plan.Checks {
		if d := c.Spec.Dependencies; d != "" && !slices.Contains(strategies, d) {
			strategies = append(strategies, d)
		}
	}
	if len(strategies) == 0 {
		return nil
	}
	repo, err := git.Open(ctx, root)
	if err != nil {
		return err
	}
	base, err := repo.ResolveCommit(ctx, baseRev, "--base")
	if err != nil && baseRev == "HEAD" {
		// A repository without a commit has no base to compare with.
		fmt.Fprintf(s.Err, "  dependencies %s: not checked, the repository has no commit yet; once the base exists, run 'runmill doctor --check verification:dependencies --base REV'\n", strings.Join(strategies, ", "))
		return nil
	}
	if err != nil {
		return err
	}
	slices.Sort(strategies)
	var errs []error
	for _, st := range strategies {
		detail, err := dependencyChecker.CheckDependencies(ctx, doctorpkg.DependencyRequest{RepoDir: root, Base: base, Strategy: st})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(s.Err, "  dependencies %s: %s\n", st, detail)
	}
	return errors.Join(errs...)
}

// initOperatorOnly writes the operator template for an existing
// checks.yaml: its checks, with the tool each needs as detection names it
// (by id), so the template's definitions repeat the repository's fields.
func initOperatorOnly(s IO, checksFile, out string, detected initpolicy.Plan) error {
	b, err := os.ReadFile(checksFile)
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "reading the existing checks").At(checksFile, 0)
	}
	doc, err := policy.ParseRepository(b, checksFile)
	if err != nil {
		return err
	}
	tools := map[string]initpolicy.Check{}
	for _, c := range detected.Checks {
		tools[c.Spec.ID] = c
	}
	var plan initpolicy.Plan
	for _, spec := range doc.Value.Checks {
		if d, ok := tools[spec.ID]; ok {
			plan.Checks = append(plan.Checks, initpolicy.Check{Tool: d.Tool, Spec: spec, Comment: d.Comment})
		}
	}
	files := initpolicy.Render(plan, initHost())
	if err := writeNew(out, files.Operator, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "runmill init: %s exists and is kept; wrote only the operator policy template to %s (keep it outside the repository)\n", checksFile, out)
	fmt.Fprintf(s.Err, "then: 'runmill doctor --check checks --policy %s' runs each check once in the sandbox and says whether it will work\n", out)
	return nil
}
