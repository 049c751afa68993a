package doctor

import (
	"context"
	"fmt"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// checkBase runs the base's checks once (engine.CheckBase). It fails when
// a check failed, or when a required check is unproven under a policy whose
// gate blocks on it: the first pull request would not be merge-ready.
func checkBase(ctx context.Context, o Options) Result {
	stateDir, cleanup, err := stateDirFor(o.StateDir)
	if err != nil {
		return failed(BaseChecks, err)
	}
	defer cleanup()
	bc, err := engine.CheckBase(ctx, engine.DoctorChecksOptions{RepoDir: o.RepoDir, Base: o.Base, PolicyFile: o.PolicyFile,
		StateDir: stateDir, ContainerdAddress: o.ContainerdAddress})
	if err != nil {
		if rmerr.CodeOf(err) == "" {
			err = rmerr.Wrap(rmerr.InitChecks, err, "running the base's checks").WithHint("fix what the error names (--out must be a writable directory), then run the doctor again")
		}
		return failed(BaseChecks, err)
	}
	var failedN, unprovenN int
	for _, c := range bc.Checks {
		if c.Status != record.Passed {
			failedN++
		} else if c.Coverage != record.Proven {
			unprovenN++
		}
	}
	r := Result{Name: BaseChecks, Checks: bc.Checks, Overrides: bc.Overrides,
		Detail: fmt.Sprintf("%s run once at the base %s: %d passed, %d failed, %d unproven", printable.Plural(len(bc.Checks), "check", "checks"), objectid.Short(bc.Base),
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

// checkState reports what the state directory holds, part by part, and
// the bounds each verify prunes it to (issue #13 S3, issue 23): a number to
// watch, not a failure — unless it cannot be measured.
func checkState(stateDir, source string) Result {
	u, err := engine.MeasureState(stateDir)
	if err != nil {
		return failed(State, rmerr.Wrap(rmerr.SandboxCleanup, err, "reading the state directory").
			WithHint("make %s readable by runmill, or pass --out", stateDir))
	}
	rest := u.Bytes - u.RunsBytes - u.DepsBytes - u.ToolCacheBytes - u.SandboxBytes
	return Result{Name: State, OK: true, Detail: fmt.Sprintf(
		"the state directory %s (%s) uses %s: %s (%s), prepared dependencies %s, Go toolchain caches %s, the sandbox's directory (a private containerd's image store) %s, the rest %s; "+
			"each verify keeps %s (verify --keep-runs, --keep-days); of the dependency and toolchain caches %s; images unused for %s go",
		stateDir, source, printable.Bytes(u.Bytes), printable.Plural(u.Runs, "run", "runs"), printable.Bytes(u.RunsBytes), printable.Bytes(u.DepsBytes),
		printable.Bytes(u.ToolCacheBytes), printable.Bytes(u.SandboxBytes), printable.Bytes(rest),
		engine.DefaultRetention, engine.CacheLimitsText(engine.DefaultCacheLimits), printable.Days(engine.DefaultCacheLimits.UnusedFor))}
}
