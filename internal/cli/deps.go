package cli

import (
	"context"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
)

// depsChecker answers `doctor --check verification:dependencies` with
// deps.CheckSource: the source checkout (--repo) against the base, reading
// only — no fetch, no copy, no package manager, no registry.
type depsChecker struct{}

func (depsChecker) CheckDependencies(ctx context.Context, req DependencyRequest) (string, error) {
	repo, err := git.Open(ctx, req.RepoDir)
	if err != nil {
		return "", err
	}
	g := req.GoModules
	o := deps.Options{SourceDir: repo.Dir, Base: req.Base,
		Go: deps.GoOptions{ModuleCache: g.ModuleCache, BuildCache: g.BuildCache, AllowAdditions: g.AllowAdditions}}
	if err := deps.CheckSource(ctx, repo, o, []string{req.Strategy}); err != nil {
		return "", err
	}
	return "the source checkout is at the base and its install matches the base's lockfiles", nil
}
