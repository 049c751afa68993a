package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/policy"
)

// describe is the policy check's detail: what both documents say.
func describe(p *engine.Policies) string {
	ids := make([]string, len(p.Repository.Doc.Checks))
	for i, c := range p.Repository.Doc.Checks {
		ids[i] = c.ID
	}
	s := fmt.Sprintf("%s@%s: %d checks (%s)", policy.RepoPolicyPath, objectid.Short(p.Base), len(ids), strings.Join(ids, ", "))
	if p.Operator == nil {
		return s + "; no operator policy given (--policy)"
	}
	op := p.Operator.Doc
	return s + fmt.Sprintf("; operator policy %s: autonomy %s, fail_on_skipped_check %v, %d commands", p.OperatorFile, op.Autonomy,
		op.Verification.FailOnSkipped(), len(op.Verification.Commands))
}

// DependencyRequest asks whether the prepared dependencies for one
// strategy match the trusted base (spec § 3, step 2): the source checkout's
// install against the base's lockfiles — ahead, behind, missing, stale —
// without fetching, copying, warming a cache or running a package manager.
type DependencyRequest struct {
	RepoDir  string
	Base     string   // resolved base commit whose policy declared the checks
	Strategy string   // npm | go-modules | cargo | pnpm | yarn
	Checks   []string // ids of the checks that declare it
	// GoModules is the operator policy's go-modules settings.
	GoModules policy.GoModules
	// Cargo is the operator policy's cargo settings.
	Cargo policy.Cargo
}

// DependencyChecker is what the verification:dependencies check (and
// init) need of prepared dependencies. A nil error means ready; an error
// says what is wrong and carries RM-VERIFY-005.
type DependencyChecker interface {
	CheckDependencies(ctx context.Context, req DependencyRequest) (detail string, err error)
}

// Deps is the DependencyChecker of internal/deps (deps.CheckSource): the
// source checkout against the base, reading only — no fetch, no copy, no
// package manager, no registry.
type Deps struct{}

var _ DependencyChecker = Deps{}

func (Deps) CheckDependencies(ctx context.Context, req DependencyRequest) (string, error) {
	repo, err := git.Open(ctx, req.RepoDir)
	if err != nil {
		return "", err
	}
	g := req.GoModules
	o := deps.Options{SourceDir: repo.Dir, Base: req.Base,
		Go:    deps.GoOptions{ModuleCache: g.ModuleCache, BuildCache: g.BuildCache, AllowAdditions: g.AllowAdditions},
		Cargo: deps.CargoOptions{Registry: req.Cargo.Registry}}
	if err := deps.CheckSource(ctx, repo, o, []string{req.Strategy}); err != nil {
		return "", err
	}
	return "the source checkout is at the base and its install matches the base's lockfiles", nil
}

// checkDependencies groups the checks that declare dependencies by
// strategy (the operator's definition wins, as in Discovery) and asks the
// dependency checker about each.
func checkDependencies(ctx context.Context, dc DependencyChecker, pol *engine.Policies, polErr error) Result {
	if polErr != nil {
		r := failed(Dependencies, polErr)
		r.Detail = "cannot read which checks declare dependencies: " + r.Detail
		return r
	}
	byStrategy := map[string][]string{}
	for id, c := range pol.Definitions() {
		if c.Dependencies != "" {
			byStrategy[c.Dependencies] = append(byStrategy[c.Dependencies], id)
		}
	}
	if len(byStrategy) == 0 {
		return Result{Name: Dependencies, OK: true, Detail: "no check declares dependencies"}
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
		req := DependencyRequest{RepoDir: pol.RepoDir, Base: pol.Base, Strategy: s, Checks: ids}
		if pol.Operator != nil {
			req.GoModules = pol.Operator.Doc.Dependencies.GoModules
			req.Cargo = pol.Operator.Doc.Dependencies.Cargo
		}
		d, err := dc.CheckDependencies(ctx, req)
		if err != nil {
			return failed(Dependencies, err)
		}
		details = append(details, fmt.Sprintf("%s (%s): %s", s, strings.Join(ids, ", "), d))
	}
	return Result{Name: Dependencies, OK: true, Detail: strings.Join(details, "; ")}
}
