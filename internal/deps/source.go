package deps

import (
	"context"
	"errors"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// CheckSource is `runmill doctor --check verification:dependencies` and
// runmill init's proof (spec § 3 step 2): the source checkout o.SourceDir
// against the base o.Base, which the caller has freshly fetched, for the
// strategies the repository policy at that base declares. It fails when
// the checkout is ahead of, behind or diverged from the base, when the
// install is missing or stale, and (go-modules) when the module cache
// lacks a go.sum module or holds a different one. It reads only: it copies
// no package, warms no cache, runs no package manager and contacts no
// registry. o.StateDir and o.Candidate are not used.
//
// The error joins one RM-VERIFY-005 per problem, each with its fix; nil
// means every strategy is ready.
func CheckSource(ctx context.Context, repo *git.Repo, o Options, strategies []string) error {
	var errs []error
	head, err := repo.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return err
	}
	if head != o.Base {
		mb, err := repo.MergeBase(ctx, head, o.Base)
		if err != nil {
			return err
		}
		how := "diverged from"
		switch mb {
		case o.Base:
			how = "ahead of"
		case head:
			how = "behind"
		}
		errs = append(errs, rmerr.New(rmerr.VerifyDependencies, "the source checkout %s is at %s, %s the base %s", o.SourceDir, objectid.Short(head), how, objectid.Short(o.Base)).
			WithHint("check out the base in the source checkout (git checkout --detach %s), run the declared preparation there (npm ci), and start a fresh run", objectid.Short(o.Base)))
	}
	o.Candidate = o.Base
	for _, s := range uniq(strategies) {
		var err error
		switch s {
		case NPM:
			_, err = validateNPM(ctx, repo, o)
		case GoModules:
			err = checkGo(ctx, repo, o)
		case Cargo:
			err = checkCargo(ctx, repo, o)
		case Pnpm:
			_, _, err = validatePnpmAt(ctx, repo, o.Base, o.SourceDir)
		case Yarn:
			err = checkYarn(ctx, repo, o)
		default:
			err = unknown(s)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkGo verifies the base's go.sum modules in the module cache in place.
func checkGo(ctx context.Context, repo *git.Repo, o Options) error {
	lines, err := readGoSum(ctx, repo, o.Base)
	if err != nil {
		return err
	}
	modcache, err := moduleCache(ctx, o.Go)
	if err != nil {
		return err
	}
	return importModules(ctx, modcache, "", lines, nil)
}

// checkCargo verifies the base's Cargo.lock crates in the declared
// directory source in place.
func checkCargo(ctx context.Context, repo *git.Repo, o Options) error {
	if o.Cargo.Registry == "" {
		return refuse(Cargo, "no directory source declared; the base's crates must be imported (runmill deps import --strategy cargo)")
	}
	_, l, err := cargoLockAt(ctx, repo, o.Base)
	if err != nil {
		return err
	}
	crates, err := registryCrates(l)
	if err != nil {
		return err
	}
	return importCrates(ctx, o.Cargo.Registry, "", crates, nil)
}

// checkYarn checks that the base's package.json and yarn.lock are ones the
// yarn strategy can prepare (the strict reader, no workspaces) and, with a
// state directory, that an install was imported for the base and still
// verifies. Yarn has no source checkout: every commit's install is
// imported.
func checkYarn(ctx context.Context, repo *git.Repo, o Options) error {
	y := &yarnPrepared{errs: map[string]error{}, roles: roles{base: o.Base, candidate: o.Base, repoDir: repo.Dir, stateDir: o.StateDir}}
	pkg, lock, _, deps, err := yarnFilesAt(ctx, repo, o.Base)
	if err != nil {
		return y.atCommit(o.Base, err)
	}
	if o.StateDir == "" {
		return nil
	}
	objs := newObjects(o.StateDir)
	defer objs.uses.Close()
	side, err := loadYarn(ctx, repo, o.StateDir, o.Base, pkg, lock, deps, objs)
	if err == nil && side == nil {
		err = refuse(Yarn, "no install was imported for its yarn.lock")
	}
	if err != nil {
		return y.atCommit(o.Base, err)
	}
	return nil
}
