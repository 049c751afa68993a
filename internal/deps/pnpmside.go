package deps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// A pnpm install is imported (runmill deps import --strategy pnpm): pnpm
// ran outside verification on the commit's package.json and
// pnpm-lock.yaml alone, in an empty directory, so the pull request's
// .npmrc and pnpm-workspace.yaml were never read. The base's may also be
// the operator's install in the source checkout, as for npm.

// pnpmSide is one commit's install, verified and cached: a checkout whose
// pnpm-lock.yaml and package.json equal its commit's
// uses it.
type pnpmSide struct {
	commit  string
	inputs  map[string]string
	receipt Receipt
	tree    string // the cached node_modules
}

type pnpmPrepared struct {
	sides []*pnpmSide
	errs  map[string]error // by commit
	roles
}

// pnpmInputs are the content key's inputs: the bytes of the lockfile and
// of package.json (pnpm reads its "pnpm" settings too), which evidence
// verify recomputes from the bound commit.
func pnpmInputs(pkg, lock []byte) map[string]string {
	return map[string]string{pnpmLockFile: digest.Of(lock), packageJSON: digest.Of(pkg)}
}

// pnpmFilesAt reads package.json and pnpm-lock.yaml at commit and parses
// the lockfile.
func pnpmFilesAt(ctx context.Context, repo *git.Repo, commit string) (pkg, lock []byte, l *pnpmLock, err error) {
	if pkg, err = readAt(ctx, repo, commit, packageJSON); err != nil {
		return nil, nil, nil, refuse(Pnpm, "%s has no package.json at the repository root: %v", objectid.Short(commit), err)
	}
	if lock, err = readAt(ctx, repo, commit, pnpmLockFile); err != nil {
		return nil, nil, nil, refuse(Pnpm, "%s has no pnpm-lock.yaml at the repository root (commit it: pnpm install --lockfile-only): %v", objectid.Short(commit), err)
	}
	if l, err = parsePnpmLock(lock); err != nil {
		return nil, nil, nil, refuse(Pnpm, "pnpm-lock.yaml at %s: %v", objectid.Short(commit), err)
	}
	return pkg, lock, l, nil
}

// pnpmStore is the store pnpm installed from, as it recorded it in
// node_modules/.modules.yaml (storeDir, the store's v3 directory).
func pnpmStore(from string) (string, error) {
	b, err := bounded.ReadFile(filepath.Join(from, nodeModules, ".modules.yaml"), maxManifest)
	if err != nil {
		return "", fmt.Errorf("reading node_modules/.modules.yaml: %w", err)
	}
	var m struct {
		StoreDir   string `yaml:"storeDir"`
		NodeLinker string `yaml:"nodeLinker"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("node_modules/.modules.yaml: %w", err)
	}
	if m.NodeLinker != "isolated" {
		return "", fmt.Errorf("node_modules/.modules.yaml says nodeLinker %q; only pnpm's isolated layout is prepared", m.NodeLinker)
	}
	if !filepath.IsAbs(m.StoreDir) || filepath.Base(m.StoreDir) != "v3" {
		return "", fmt.Errorf("node_modules/.modules.yaml names store %q, not a pnpm 9 store's v3 directory", m.StoreDir)
	}
	return filepath.Dir(m.StoreDir), nil
}

// validatePnpmAt checks the install in from (a directory where pnpm
// installed commit's package.json and pnpm-lock.yaml: an operator's
// directory, or the source checkout at the base) against commit's
// lockfile: the manifests byte-equal to the commit's, then
// checkPnpmInstall with the store pnpm recorded. It reads; it copies
// nothing and runs no pnpm.
func validatePnpmAt(ctx context.Context, repo *git.Repo, commit, from string) (pkg, lock []byte, err error) {
	pkg, lock, l, err := pnpmFilesAt(ctx, repo, commit)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range []struct {
		name string
		want []byte
	}{{packageJSON, pkg}, {pnpmLockFile, lock}} {
		got, err := bounded.ReadFile(filepath.Join(from, f.name), maxManifest)
		if err != nil || !bytes.Equal(got, f.want) {
			return nil, nil, refuse(Pnpm, "%s in %s is not %s's (the install was made for another commit)", f.name, from, objectid.Short(commit))
		}
	}
	store, err := pnpmStore(from)
	if err != nil {
		return nil, nil, refuse(Pnpm, "%v", err)
	}
	if err := checkPnpmInstall(from, l, lock, store); err != nil {
		return nil, nil, err
	}
	return pkg, lock, nil
}

// importPnpm verifies the install in from against commit's lockfile
// (validatePnpmAt) and imports node_modules into the content-keyed cache
// (files into the shared object store).
func importPnpm(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, from string, objs *objects) (*pnpmSide, error) {
	pkg, lock, err := validatePnpmAt(ctx, repo, commit, from)
	if err != nil {
		return nil, err
	}
	inputs := pnpmInputs(pkg, lock)
	nm := filepath.Join(from, nodeModules)
	tree, r, err := entry(ctx, stateDir, scratch, Pnpm, inputs, objs, func(dst string) error {
		return importTree(ctx, Pnpm, nm, nm, dst, objs.file)
	})
	if err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, Pnpm, commit, r.Key); err != nil {
		return nil, err
	}
	return &pnpmSide{commit: commit, inputs: inputs, receipt: r, tree: tree}, nil
}

// preparePnpm finds the install imported for each commit of the run.
func preparePnpm(ctx context.Context, repo *git.Repo, o Options, rl roles, objs *objects) (*pnpmPrepared, error) {
	p := &pnpmPrepared{errs: map[string]error{}, roles: rl}
	for _, commit := range rl.commits() {
		pkg, lock, _, err := pnpmFilesAt(ctx, repo, commit)
		inputs := pnpmInputs(pkg, lock)
		if err == nil && p.serving(inputs) != nil {
			continue
		}
		var side *pnpmSide
		if err == nil {
			side, err = loadPnpm(ctx, o.StateDir, commit, inputs, objs)
		}
		if err == nil && side == nil && commit == rl.base && o.SourceDir != "" && hasPnpmInstall(o.SourceDir) {
			// The operator's pnpm install in the source checkout, at the base.
			side, err = importPnpm(ctx, repo, o.StateDir, o.ScratchDir, commit, o.SourceDir, objs)
		}
		if err == nil && side == nil {
			err = refuse(Pnpm, "%s", p.unprepared(commit))
		}
		if err != nil {
			if rmerr.CodeOf(err) == "" {
				return nil, err
			}
			p.errs[commit] = p.atCommit(commit, err)
			continue
		}
		p.sides = append(p.sides, side)
	}
	return p, nil
}

// hasPnpmInstall: dir holds a pnpm install (node_modules/.pnpm).
func hasPnpmInstall(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, nodeModules, ".pnpm"))
	return err == nil && st.IsDir()
}

func (p *pnpmPrepared) serving(inputs map[string]string) *pnpmSide {
	for _, s := range p.sides {
		if s.inputs[pnpmLockFile] == inputs[pnpmLockFile] && s.inputs[packageJSON] == inputs[packageJSON] {
			return s
		}
	}
	return nil
}

func (p *pnpmPrepared) unprepared(commit string) string {
	if commit == p.candidate && commit != p.base {
		return "pnpm-lock.yaml changed in the candidate and no install was imported for it"
	}
	return "no install was imported for its pnpm-lock.yaml"
}

// loadPnpm is the install imported for commit, every cached byte
// re-hashed; nil when none was.
func loadPnpm(ctx context.Context, stateDir, commit string, inputs map[string]string, objs *objects) (*pnpmSide, error) {
	dir, key, got, err := indexed(stateDir, Pnpm, commit, objs)
	if err != nil || dir == "" {
		return nil, err
	}
	if got[pnpmLockFile] != inputs[pnpmLockFile] || got[packageJSON] != inputs[packageJSON] {
		return nil, refuse(Pnpm, "the install imported for %s is stale: it was verified against other manifests", objectid.Short(commit))
	}
	r, err := reuse(ctx, dir, Pnpm, key, got)
	if err != nil {
		return nil, err
	}
	return &pnpmSide{commit: commit, inputs: got, receipt: r, tree: filepath.Join(dir, "tree")}, nil
}

// atCommit names the commit in a refusal and the command that prepares
// its install.
func (p *pnpmPrepared) atCommit(commit string, err error) error {
	var re *rmerr.Error
	if !errors.As(err, &re) || re.Code != rmerr.VerifyDependencies {
		return err
	}
	e := rmerr.New(rmerr.VerifyDependencies, "%s: %s: %s", Pnpm, p.name(commit), strings.TrimPrefix(re.Msg, Pnpm+": "))
	e.Err = re.Err
	if errors.Is(err, errPnpmLockVersion) {
		return e.WithHint("%s", errPnpmLockVersion.Error())
	}
	return e.WithHint("prepare it outside verification, scripts off: %s; then start a fresh run", PnpmImportCommand(p.repoDir, commit, p.stateDir))
}

// PnpmImportCommand prepares a pnpm install for commit in a new directory
// DIR: pnpm runs on the commit's package.json and pnpm-lock.yaml alone,
// copied from git (so no project .npmrc or pnpm-workspace.yaml is read),
// with its user and global configs empty files and scripts off; then the
// import into the state directory of the run that needs it.
func PnpmImportCommand(repoDir, commit, stateDir string) string {
	return fmt.Sprintf("mkdir DIR && for f in package.json pnpm-lock.yaml; do git -C %s show %s:$f >DIR/$f; done && "+
		"(cd DIR && : >DIR/.user-npmrc && : >DIR/.global-npmrc && npm_config_userconfig=DIR/.user-npmrc npm_config_globalconfig=DIR/.global-npmrc "+
		"pnpm install --frozen-lockfile --ignore-scripts --config.node-linker=isolated) && "+
		"runmill deps import --strategy pnpm --repo %s --commit %s --out %s --from DIR", repoDir, commit, repoDir, commit, absDir(stateDir))
}

// attach gives the checkout the install whose manifests equal its
// commit's, as a read-only node_modules view.
func (p *pnpmPrepared) attach(ctx context.Context, dir, views string, cow bool) (*View, error) {
	if _, err := os.Lstat(filepath.Join(dir, nodeModules)); err == nil {
		return nil, refuse(Pnpm, "the commit tracks node_modules; remove it from the repository and ignore it")
	}
	r, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	commit, err := r.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return nil, err
	}
	pkg, lock, _, err := pnpmFilesAt(ctx, r, commit)
	if err != nil {
		return nil, p.atCommit(commit, err)
	}
	side := p.serving(pnpmInputs(pkg, lock))
	if side == nil {
		if e := p.errs[commit]; e != nil {
			return nil, e
		}
		return nil, p.atCommit(commit, refuse(Pnpm, "%s", p.unprepared(commit)))
	}
	return nodeModulesView(ctx, Pnpm, r, dir, views, cow, side.tree, side.receipt, side.commit)
}

// pnpmVersions is, per package of commit's pnpm-lock.yaml, its versions
// (a package may be installed at two versions, or with two peer sets);
// none without a lockfile.
func pnpmVersions(ctx context.Context, repo *git.Repo, commit string) (map[string]string, error) {
	e, err := repo.Stat(ctx, commit, pnpmLockFile)
	if err != nil {
		return nil, err
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return map[string]string{}, nil
	}
	_, _, l, err := pnpmFilesAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	vs := map[string][]string{}
	for _, key := range l.sortedKeys() {
		p := l.Packages[key]
		if !slices.Contains(vs[p.Name], p.Version) {
			vs[p.Name] = append(vs[p.Name], p.Version)
		}
	}
	out := map[string]string{}
	for n, v := range vs {
		sort.Strings(v)
		out[n] = strings.Join(v, ", ")
	}
	return out, nil
}
