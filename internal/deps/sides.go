package deps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Each commit a run checks out (the base tip, where baselines run, and the
// candidate's landing commit, where candidate runs run) runs on an install validated against that commit's
// own lockfile (issue 15). An install serves every checkout whose lockfile
// equals the one it was validated against, so a change that leaves the
// lockfile alone needs only the base's; a change that bumps a dependency
// needs the candidate's too, prepared outside verification with
// `runmill deps import` (npm) or `go mod download` into the declared
// module cache (go-modules).

// roles names the commits of a run in refusals.
type roles struct {
	base, candidate string
	repoDir         string
	// stateDir is the run's state directory: the import the hint gives
	// must land where this run looks (the --out it was given).
	stateDir string
}

// commits are the distinct commits of the run, base first.
func (r roles) commits() []string {
	var out []string
	for _, c := range []string{r.base, r.candidate} {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// name is "the candidate <id>", "the base <id>"…, the full id so the
// command in the hint can be pasted.
func (r roles) name(commit string) string {
	var as []string
	if commit == r.candidate {
		as = append(as, "candidate")
	}
	if commit == r.base {
		as = append(as, "base")
	}
	if len(as) == 0 {
		return "commit " + commit
	}
	return "the " + strings.Join(as, " and ") + " " + commit
}

// ImportCommand is the command that prepares an npm install for commit in
// a new directory DIR, as docs/dependencies.md says: npm runs on the
// commit's package.json and package-lock.json alone, copied from git into
// DIR (so there is no project .npmrc), with its user and global configs
// empty files, git fixed and scripts off. Never in a checkout of the commit: its .npmrc (git=…) would
// run the pull request's code, which --ignore-scripts does not stop. The
// import goes into stateDir, the state directory of the run that needs it:
// without --out it would land in the default one, where that run never
// looks.
func ImportCommand(repoDir, commit, stateDir string) string {
	return fmt.Sprintf("mkdir DIR && for f in package.json package-lock.json; do git -C %s show %s:$f >DIR/$f; done && "+
		"(cd DIR && : >DIR/.user-npmrc && : >DIR/.global-npmrc && npm_config_userconfig=DIR/.user-npmrc npm_config_globalconfig=DIR/.global-npmrc "+
		`npm_config_git="$(command -v git)" npm_config_ignore_scripts=true npm ci) && `+
		"runmill deps import --repo %s --commit %s --out %s --from DIR", repoDir, commit, repoDir, commit, absDir(stateDir))
}

// absDir is dir made absolute, so a pasted command means the same
// directory from anywhere.
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// missing is the refusal of a checkout at commit no npm install serves.
func (n *npmPrepared) missing(commit string) error {
	if e := n.errs[commit]; e != nil {
		return e
	}
	return n.atCommit(commit, refuse(NPM, "%s", n.unprepared(commit)))
}

// unprepared says why commit needs an install of its own.
func (n *npmPrepared) unprepared(commit string) string {
	switch commit {
	case n.base:
		return "no install was prepared for its package-lock.json"
	case n.candidate:
		return "package-lock.json changed in the candidate and no install was prepared for it"
	}
	return "package-lock.json differs from the base's and no install was prepared for it"
}

// atCommit names the commit in an npm refusal and the command that
// prepares its install.
func (n *npmPrepared) atCommit(commit string, err error) error {
	var re *rmerr.Error
	if !errors.As(err, &re) || re.Code != rmerr.VerifyDependencies {
		return err
	}
	msg := strings.TrimPrefix(re.Msg, NPM+": ")
	e := rmerr.New(rmerr.VerifyDependencies, "%s: %s: %s", NPM, n.name(commit), msg)
	e.Err = re.Err
	if errors.Is(err, errOldLockfile) { // no install can serve it: the lockfile must change
		return e.WithHint("%s", re.Hint)
	}
	return e.WithHint("prepare it outside verification, scripts off: %s; then start a fresh run", ImportCommand(n.repoDir, commit, n.stateDir))
}

// prepareNPM finds an install for each commit of the run: one imported for
// that commit (runmill deps import), else — for the base — the source
// checkout (spec § 3 steps 3 and 4), else the install of another commit
// with the same lockfile and dependency fields.
func prepareNPM(ctx context.Context, repo *git.Repo, o Options, rl roles, objs *objects) (*npmPrepared, error) {
	n := &npmPrepared{errs: map[string]error{}, roles: rl}
	type content struct {
		lock []byte
		deps string
		err  error
	}
	var failed []content
	for _, c := range rl.commits() {
		lock, deps, err := npmFilesAt(ctx, repo, c)
		if err != nil {
			if rmerr.CodeOf(err) == "" {
				return nil, err
			}
			n.errs[c] = err
			continue
		}
		if n.serves(lock, deps) {
			continue
		}
		side, err := loadNPM(ctx, repo, o.StateDir, c, objs)
		if err == nil && side == nil && c == o.Base {
			side, err = importNPM(ctx, repo, o.StateDir, o.ScratchDir, c, o.SourceDir, objs)
		}
		if err == nil && side == nil {
			err = n.atCommit(c, refuse(NPM, "%s", n.unprepared(c)))
		} else if err != nil && c != o.Base {
			err = n.atCommit(c, err)
		}
		if err != nil {
			// A commit with the lockfile of one that already failed
			// fails for the same reason (the base's source checkout).
			for _, f := range failed {
				if bytes.Equal(f.lock, lock) && f.deps == deps && c != o.Base {
					err = f.err
				}
			}
			failed = append(failed, content{lock, deps, err})
			n.errs[c] = err
			continue
		}
		n.sides = append(n.sides, side)
	}
	return n, nil
}

func (n *npmPrepared) serves(lock []byte, deps string) bool {
	for _, s := range n.sides {
		if bytes.Equal(s.lock, lock) && s.deps == deps {
			return true
		}
	}
	return false
}

// npmFilesAt reads commit's package-lock.json and the dependency fields of
// its package.json.
func npmFilesAt(ctx context.Context, repo *git.Repo, commit string) ([]byte, string, error) {
	pkg, err := readAt(ctx, repo, commit, packageJSON)
	if err != nil {
		return nil, "", err
	}
	lock, err := readAt(ctx, repo, commit, packageLock)
	if err != nil {
		return nil, "", err
	}
	if _, err := parseLockfile(lock); errors.Is(err, errOldLockfile) {
		return nil, "", oldLockfile(objectid.Short(commit), err)
	}
	deps, err := dependencyDigest(pkg)
	if err != nil {
		return nil, "", refuse(NPM, "package.json at %s: %v", objectid.Short(commit), err)
	}
	return lock, deps, nil
}

// indexPath is where the key of the install imported for commit is kept.
func indexPath(stateDir, strategy, commit string) string {
	return filepath.Join(stateDir, "deps", "index", strategy, commit)
}

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// writeIndex records key as commit's install, atomically.
func writeIndex(stateDir, strategy, commit, key string) error {
	if !fullCommit.MatchString(commit) {
		return fmt.Errorf("deps: %q is not a full commit id", commit)
	}
	p := indexPath(stateDir, strategy, commit)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp-" + fsname.Random(8)
	if err := os.WriteFile(tmp, []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// indexed returns the entry directory and receipt inputs recorded for
// commit, or "" when none is. The entry is held in objs' Set, and the
// record's use is stamped (prune.go).
func indexed(stateDir, strategy, commit string, objs *objects) (dir, key string, inputs map[string]string, err error) {
	b, err := bounded.ReadFile(indexPath(stateDir, strategy, commit), 1<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, err
	}
	key = strings.TrimSpace(string(b))
	hexKey, ok := strings.CutPrefix(key, "sha256:")
	if !ok || len(hexKey) != 64 || strings.ContainsAny(hexKey, "/.") {
		return "", "", nil, refuse(strategy, "the install index %s is malformed; delete it and import again", indexPath(stateDir, strategy, commit))
	}
	dir = filepath.Join(cacheDir(stateDir, strategy), hexKey)
	now := time.Now()
	_ = os.Chtimes(indexPath(stateDir, strategy, commit), now, now)
	if err := objs.uses.Use(dir); errors.Is(err, fs.ErrNotExist) {
		// Pruned (or found mutated) since the record was written.
		os.Remove(indexPath(stateDir, strategy, commit))
		return "", "", nil, nil
	}
	f, _, err := bounded.OpenRegular(filepath.Join(dir, "receipt.json"))
	if errors.Is(err, fs.ErrNotExist) {
		// The entry was removed (found mutated, or pruned): the commit
		// has no install until it is imported again.
		os.Remove(indexPath(stateDir, strategy, commit))
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, refuse(strategy, "the install imported for %s is unreadable (%v)", objectid.Short(commit), err)
	}
	defer f.Close()
	var r Receipt
	if err := json.NewDecoder(io.LimitReader(f, maxReceipt)).Decode(&r); err != nil {
		return "", "", nil, refuse(strategy, "the receipt of the install imported for %s is malformed: %v", objectid.Short(commit), err)
	}
	return dir, key, r.Inputs, nil
}

// loadNPM is the install imported for commit, its receipt checked against
// the commit's files and this host's node and every cached byte re-hashed;
// nil when none was imported.
func loadNPM(ctx context.Context, repo *git.Repo, stateDir, commit string, objs *objects) (*npmSide, error) {
	dir, key, inputs, err := indexed(stateDir, NPM, commit, objs)
	if err != nil || dir == "" {
		return nil, err
	}
	pkg, err := readAt(ctx, repo, commit, packageJSON)
	if err != nil {
		return nil, err
	}
	lock, err := readAt(ctx, repo, commit, packageLock)
	if err != nil {
		return nil, err
	}
	rt, err := hostNode(ctx)
	if err != nil {
		return nil, refuse(NPM, "cannot learn the platform and Node ABI the sandbox runs: %v", err)
	}
	want := map[string]string{packageJSON: digest.Of(pkg), packageLock: digest.Of(lock), "platform": rt.Platform, "arch": rt.Arch, "node_abi": rt.ABI}
	for k, v := range want {
		if inputs[k] != v {
			return nil, refuse(NPM, "the install imported for %s is stale: its %s is %s, the commit's (or this host's) %s", objectid.Short(commit), k, inputs[k], v)
		}
	}
	r, err := reuse(ctx, dir, NPM, key, inputs)
	if err != nil {
		return nil, err
	}
	deps, err := dependencyDigest(pkg)
	if err != nil {
		return nil, refuse(NPM, "package.json at %s: %v", objectid.Short(commit), err)
	}
	return &npmSide{commit: commit, receipt: r, tree: filepath.Join(dir, "tree"), lock: lock, deps: deps}, nil
}

// loadGo is the module cache imported for commit (runmill deps import),
// nil when none was.
func loadGo(ctx context.Context, stateDir, commit, sum string, objs *objects) (*goSide, error) {
	dir, key, inputs, err := indexed(stateDir, GoModules, commit, objs)
	if err != nil || dir == "" {
		return nil, err
	}
	if inputs["go.sum"] != sum {
		return nil, refuse(GoModules, "the module cache imported for %s is stale: it was made for go.sum %s, the commit's is %s", objectid.Short(commit), inputs["go.sum"], sum)
	}
	r, err := reuse(ctx, dir, GoModules, key, inputs)
	if err != nil {
		return nil, err
	}
	return &goSide{commit: commit, sum: sum, receipt: r, tree: filepath.Join(dir, "tree")}, nil
}

// ImportOptions say what `runmill deps import` imports.
type ImportOptions struct {
	// Strategy is NPM or GoModules.
	Strategy string
	// Commit is the full id of the commit the install was made for.
	Commit string
	// From is the install: for npm a checkout of Commit where npm ci ran
	// (its package.json, package-lock.json and node_modules); for
	// go-modules a module cache holding Commit's go.sum modules; for cargo
	// a directory source holding Commit's Cargo.lock crates; for pnpm a
	// directory where pnpm installed Commit's package.json and
	// pnpm-lock.yaml; for yarn the directory where yarn installed Commit's
	// package.json and yarn.lock.
	From string
	// StateDir is runmill's machine-local state (the cache's home).
	StateDir string
}

// Imported is what Import did.
type Imported struct {
	Receipt Receipt
	Copy    CopyStats
}

// Import validates an install an operator made for one commit against that
// commit's lockfile (spec § 3 steps 3 and 4, applied to that commit) and
// imports it into the content-keyed cache, recording it as that commit's
// install for later runs. Files already in the cache — the same package at
// the same version in another install — are linked, not copied again. It
// runs no package manager and contacts no registry.
func Import(ctx context.Context, repo *git.Repo, o ImportOptions) (Imported, error) {
	if !filepath.IsAbs(o.From) {
		return Imported{}, fmt.Errorf("deps: --from %q is not absolute", o.From)
	}
	objs := newObjects(o.StateDir)
	defer objs.uses.Close()
	switch o.Strategy {
	case NPM:
		s, err := importNPM(ctx, repo, o.StateDir, "", o.Commit, o.From, objs)
		if err != nil {
			return Imported{}, err
		}
		return Imported{Receipt: s.receipt, Copy: objs.stats()}, nil
	case GoModules:
		s, err := importGo(ctx, repo, o.StateDir, "", o.Commit, o.From, objs)
		if err != nil {
			return Imported{}, err
		}
		return Imported{Receipt: s.receipt, Copy: objs.stats()}, nil
	case Cargo:
		s, err := importCargo(ctx, repo, o.StateDir, "", o.Commit, o.From, objs)
		if err != nil {
			return Imported{}, err
		}
		return Imported{Receipt: s.receipt, Copy: objs.stats()}, nil
	case Pnpm:
		s, err := importPnpm(ctx, repo, o.StateDir, "", o.Commit, o.From, objs)
		if err != nil {
			return Imported{}, err
		}
		return Imported{Receipt: s.receipt, Copy: objs.stats()}, nil
	case Yarn:
		s, err := importYarn(ctx, repo, o.StateDir, "", o.Commit, o.From, objs)
		if err != nil {
			return Imported{}, err
		}
		return Imported{Receipt: s.receipt, Copy: objs.stats()}, nil
	}
	return Imported{}, unknown(o.Strategy)
}

// use is the evidence record of a check run's install.
func (r Receipt) use(commit string) *record.DependencyUse {
	return &record.DependencyUse{Strategy: r.Strategy, PreparedFor: commit, Key: r.Key, Fingerprint: r.Fingerprint, Inputs: r.Inputs}
}
