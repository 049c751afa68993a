package deps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// The yarn strategy offers each commit a node_modules installed by Yarn —
// classic (yarn 1) or Berry with `nodeLinker: node-modules` — outside
// verification, on the commit's package.json and yarn.lock alone, and
// imported with `runmill deps import --strategy yarn`. The check sees it
// exactly as an npm install: a hard-linked, read-only view at
// <checkout>/node_modules. Yarn itself never runs in verification.

const (
	yarnLockFile = "yarn.lock"
	// The install state each linker writes into node_modules: classic's
	// record of what it linked, Berry's map of locators to locations.
	yarnIntegrity = ".yarn-integrity"
	yarnState     = ".yarn-state.yml"
)

// yarnSide is one commit's install, verified and cached: a checkout whose
// yarn.lock bytes and package.json dependency fields equal its commit's
// uses it.
type yarnSide struct {
	commit  string
	lock    []byte
	deps    string
	receipt Receipt
	tree    string // the cached node_modules; with pnp, .pnp.cjs and .yarn/cache
	pnp     bool
}

type yarnPrepared struct {
	sides []*yarnSide
	errs  map[string]error // by commit, as npmPrepared.errs
	roles
}

// yarnFilesAt reads commit's yarn.lock, parsed, and the dependency fields
// of its package.json.
func yarnFilesAt(ctx context.Context, repo *git.Repo, commit string) (pkg, lock []byte, l *yarnLock, deps string, err error) {
	for _, f := range []string{packageJSON, yarnLockFile} {
		e, err := repo.Stat(ctx, commit, f)
		if err != nil {
			return nil, nil, nil, "", err
		}
		if e.Kind != git.Blob && e.Kind != git.Executable {
			return nil, nil, nil, "", refuse(Yarn, "%s has no %s at the repository root (%s); dependencies: yarn needs a committed package.json and yarn.lock", objectid.Short(commit), f, e.Kind)
		}
	}
	pkg, err = readAt(ctx, repo, commit, packageJSON)
	if err != nil {
		return nil, nil, nil, "", err
	}
	lock, err = readAt(ctx, repo, commit, yarnLockFile)
	if err != nil {
		return nil, nil, nil, "", err
	}
	if l, err = parseYarnLock(lock); err != nil {
		return nil, nil, nil, "", refuse(Yarn, "yarn.lock at %s: %v", objectid.Short(commit), err)
	}
	if hasField(pkg, "workspaces") {
		return nil, nil, nil, "", refuse(Yarn, "package.json at %s declares workspaces; Yarn workspaces are not supported yet", objectid.Short(commit))
	}
	if deps, err = dependencyDigest(pkg); err != nil {
		return nil, nil, nil, "", refuse(Yarn, "package.json at %s: %v", objectid.Short(commit), err)
	}
	return pkg, lock, l, deps, nil
}

// yarnInputs are the content key's inputs: the manifests' bytes and what
// the sandbox's node runs (a native addon is built for one ABI).
func yarnInputs(pkg, lock []byte, rt nodeRuntime) map[string]string {
	return map[string]string{packageJSON: digest.Of(pkg), yarnLockFile: digest.Of(lock),
		"platform": rt.Platform, "arch": rt.Arch, "node_abi": rt.ABI}
}

// importYarn verifies the install in from (where yarn ran on commit's
// package.json and yarn.lock) against that commit's yarn.lock and imports
// its node_modules into the content-keyed cache.
func importYarn(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, from string, objs *objects) (*yarnSide, error) {
	pkg, lock, l, deps, err := yarnFilesAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		want []byte
	}{{packageJSON, pkg}, {yarnLockFile, lock}} {
		b, err := readFileCapped(filepath.Join(from, f.name))
		if err != nil {
			return nil, refuse(Yarn, "reading %s in %s: %v", f.name, from, err)
		}
		if !bytes.Equal(b, f.want) {
			return nil, refuse(Yarn, "%s in %s differs from %s's (yarn changed the lockfile, or the directory holds another commit's install); run yarn with --frozen-lockfile (classic) or --immutable (Berry)", f.name, from, objectid.Short(commit))
		}
	}
	if l.Berry && isPnP(from) {
		return importYarnPnP(ctx, repo, stateDir, scratch, commit, from, pkg, lock, deps, l, objs)
	}
	nm := filepath.Join(from, nodeModules)
	st, err := os.Lstat(nm)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if l.Berry {
			return nil, refuse(Yarn, "no install: neither %s nor %s (Plug'n'Play) is there", nm, filepath.Join(from, pnpFile))
		}
		return nil, refuse(Yarn, "no install: %s is missing", nm)
	case err != nil:
		return nil, refuse(Yarn, "reading %s: %v", nm, err)
	case !st.IsDir():
		return nil, refuse(Yarn, "%s is a %s, not the directory yarn makes", nm, st.Mode().Type())
	}
	if err := checkLinks(Yarn, nm, nm); err != nil {
		return nil, err
	}
	rt, err := hostNode(ctx)
	if err != nil {
		return nil, refuse(Yarn, "cannot learn the platform and Node ABI the sandbox runs: %v", err)
	}
	if err := compareYarn(nm, l); err != nil {
		return nil, err
	}
	inputs := yarnInputs(pkg, lock, rt)
	tree, r, err := entry(ctx, stateDir, scratch, Yarn, inputs, objs, func(dst string) error {
		return importTree(ctx, Yarn, nm, nm, dst, objs.file)
	})
	if err != nil {
		return nil, err
	}
	// The copy, which only runmill writes, is checked again: a package
	// swapped in from after the first look cannot pass.
	if err := compareYarn(tree, l); err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, Yarn, commit, r.Key); err != nil {
		return nil, err
	}
	return &yarnSide{commit: commit, lock: lock, deps: deps, receipt: r, tree: tree}, nil
}

// importYarnPnP imports a Plug'n'Play install (yarnpnp.go).
func importYarnPnP(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, from string, pkg, lock []byte, deps string, l *yarnLock, objs *objects) (*yarnSide, error) {
	rt, err := hostNode(ctx)
	if err != nil {
		return nil, refuse(Yarn, "cannot learn the platform and Node ABI the sandbox runs: %v", err)
	}
	b, err := readFileCapped(filepath.Join(from, pnpFile))
	if err != nil {
		return nil, refuse(Yarn, "reading %s: %v", pnpFile, err)
	}
	_, runtime, err := pnpState(b)
	if err != nil {
		return nil, refuse(Yarn, "%s in %s: %v", pnpFile, from, err)
	}
	inputs := yarnInputs(pkg, lock, rt)
	inputs["linker"], inputs["pnp_runtime"] = "pnp", digest.Of(runtime)
	tree, r, err := entry(ctx, stateDir, scratch, Yarn, inputs, objs, func(dst string) error {
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		if err := importPnP(ctx, from, dst, objs.file); err != nil {
			return err
		}
		// The runtime that was checked is the one hashed into the key.
		got, err := checkPnP(dst, l)
		if err == nil && got != inputs["pnp_runtime"] {
			err = refuse(Yarn, "%s changed while it was imported", pnpFile)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, Yarn, commit, r.Key); err != nil {
		return nil, err
	}
	return &yarnSide{commit: commit, lock: lock, deps: deps, receipt: r, tree: tree, pnp: true}, nil
}

// yarnInstalled is one package directory found under node_modules.
type yarnInstalled struct {
	path, name, version string
}

// installedPackages lists every package directory of a node_modules
// tree, nested ones included, with the version its package.json says.
// An entry that is neither a package, a scope, .bin nor the linker's own
// state file is refused: nothing else belongs there.
func installedPackages(nm string) ([]yarnInstalled, []string, error) {
	var out []yarnInstalled
	var findings []string
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := e.Name()
			switch {
			case n == ".bin" || (rel == "" && (n == yarnIntegrity || n == yarnState)):
				continue
			case strings.HasPrefix(n, "@") && e.IsDir():
				scoped, err := os.ReadDir(filepath.Join(dir, n))
				if err != nil {
					return err
				}
				for _, s := range scoped {
					if err := pkgAt(filepath.Join(dir, n, s.Name()), rel, n+"/"+s.Name(), s, &out, &findings, walk); err != nil {
						return err
					}
				}
			default:
				if err := pkgAt(filepath.Join(dir, n), rel, n, e, &out, &findings, walk); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(nm, "")
	return out, findings, err
}

// pkgAt records the package in dir (node_modules/<name> under rel) and
// walks its own node_modules.
func pkgAt(dir, rel, name string, e fs.DirEntry, out *[]yarnInstalled, findings *[]string, walk func(string, string) error) error {
	at := rel + nodeModules + "/" + name
	if !e.IsDir() {
		*findings = append(*findings, at+" is not a package directory")
		return nil
	}
	b, err := readFileCapped(filepath.Join(dir, packageJSON))
	var m struct {
		Version string `json:"version"`
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		*findings = append(*findings, fmt.Sprintf("%s: %v", at, err))
		return nil
	}
	*out = append(*out, yarnInstalled{path: at, name: name, version: m.Version})
	sub := filepath.Join(dir, nodeModules)
	if st, err := os.Lstat(sub); err == nil && st.IsDir() {
		return walk(sub, at+"/")
	}
	return nil
}

// compareYarn checks a node_modules against the lockfile: every package
// installed is one the lockfile resolves (name and version, as its
// package.json says), and every package the lockfile fetches is installed
// somewhere. Classic's .yarn-integrity must record exactly the lockfile's
// resolutions (its URL carries the tarball's SHA-1).
func compareYarn(nm string, l *yarnLock) error {
	installed, findings, err := installedPackages(nm)
	if err != nil {
		return refuse(Yarn, "reading %s: %v", nm, err)
	}
	want := map[string]bool{} // name@version the lockfile installs
	for _, p := range l.Packages {
		if !l.Berry || p.LinkType == "hard" {
			want[p.Name+"@"+p.Version] = true
		}
	}
	seen := map[string]bool{}
	for _, in := range installed {
		k := in.name + "@" + in.version
		if !want[k] {
			findings = append(findings, fmt.Sprintf("%s is installed at %s, which yarn.lock does not resolve", in.path, in.version))
		}
		seen[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !seen[k] {
			findings = append(findings, k+" is in yarn.lock but not installed")
		}
	}
	if !l.Berry {
		if err := classicIntegrity(nm, l); err != nil {
			findings = append(findings, err.Error())
		}
	}
	if len(findings) == 0 {
		return nil
	}
	sort.Strings(findings)
	return refuse(Yarn, "the install in %s does not match yarn.lock: %s", nm, listFindings(findings))
}

// classicIntegrity compares yarn 1's record of the install with the
// lockfile: the same specifier → resolved URL for every entry.
func classicIntegrity(nm string, l *yarnLock) error {
	b, err := readFileCapped(filepath.Join(nm, yarnIntegrity))
	if err != nil {
		return fmt.Errorf("no %s (yarn 1 writes it on every install): %v", yarnIntegrity, err)
	}
	var rec struct {
		LockfileEntries map[string]string `json:"lockfileEntries"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %v", yarnIntegrity, err)
	}
	want := map[string]string{}
	for _, p := range l.Packages {
		for _, s := range p.Specs {
			want[s] = p.Resolved
		}
	}
	for s, r := range want {
		if rec.LockfileEntries[s] != r {
			return fmt.Errorf("%s resolves %s to %q, yarn.lock to %q", yarnIntegrity, s, rec.LockfileEntries[s], r)
		}
	}
	if len(rec.LockfileEntries) != len(want) {
		return fmt.Errorf("%s records %d resolutions, yarn.lock %d", yarnIntegrity, len(rec.LockfileEntries), len(want))
	}
	return nil
}

// prepareYarn gives each commit of the run the install imported for it,
// or the one of another commit with the same yarn.lock and dependency
// fields; there is no source checkout to fall back on, as Yarn must not
// run in one.
func prepareYarn(ctx context.Context, repo *git.Repo, o Options, rl roles, objs *objects) (*yarnPrepared, error) {
	y := &yarnPrepared{errs: map[string]error{}, roles: rl}
	for _, c := range rl.commits() {
		pkg, lock, _, deps, err := yarnFilesAt(ctx, repo, c)
		if err != nil {
			if rmerr.CodeOf(err) == "" {
				return nil, err
			}
			y.errs[c] = y.atCommit(c, err)
			continue
		}
		if y.serving(lock, deps) != nil {
			continue
		}
		side, err := loadYarn(ctx, repo, o.StateDir, c, pkg, lock, deps, objs)
		if err == nil && side == nil {
			err = refuse(Yarn, "no install was prepared for its yarn.lock")
		}
		if err != nil {
			y.errs[c] = y.atCommit(c, err)
			continue
		}
		y.sides = append(y.sides, side)
	}
	return y, nil
}

func (y *yarnPrepared) serving(lock []byte, deps string) *yarnSide {
	for _, s := range y.sides {
		if bytes.Equal(s.lock, lock) && s.deps == deps {
			return s
		}
	}
	return nil
}

// loadYarn is the install imported for commit, its receipt checked
// against the commit's files and this host's node and every cached byte
// re-hashed; nil when none was imported.
func loadYarn(ctx context.Context, repo *git.Repo, stateDir, commit string, pkg, lock []byte, deps string, objs *objects) (*yarnSide, error) {
	dir, key, inputs, err := indexed(stateDir, Yarn, commit, objs)
	if err != nil || dir == "" {
		return nil, err
	}
	rt, err := hostNode(ctx)
	if err != nil {
		return nil, refuse(Yarn, "cannot learn the platform and Node ABI the sandbox runs: %v", err)
	}
	for k, v := range yarnInputs(pkg, lock, rt) { // linker and pnp_runtime are the import's own
		if inputs[k] != v {
			return nil, refuse(Yarn, "the install imported for %s is stale: its %s is %s, the commit's (or this host's) %s", objectid.Short(commit), k, inputs[k], v)
		}
	}
	r, err := reuse(ctx, dir, Yarn, key, inputs)
	if err != nil {
		return nil, err
	}
	return &yarnSide{commit: commit, lock: lock, deps: deps, receipt: r, tree: filepath.Join(dir, "tree"), pnp: inputs["linker"] == "pnp"}, nil
}

// atCommit names the commit in a refusal and the command that prepares
// its install.
func (y *yarnPrepared) atCommit(commit string, err error) error {
	return commitRefusal(Yarn, y.name(commit), err, "prepare it outside verification, scripts off: "+YarnImportCommand(y.repoDir, commit, y.stateDir)+"; then start a fresh run")
}

// commitRefusal is a strategy's RM-VERIFY-005 restated for one commit:
// who names it ("the candidate <id>"), hint is the command that prepares
// it. Any other error is returned as it is.
func commitRefusal(strategy, who string, err error, hint string) error {
	var re *rmerr.Error
	if !errors.As(err, &re) || re.Code != rmerr.VerifyDependencies {
		return err
	}
	e := rmerr.New(rmerr.VerifyDependencies, "%s: %s: %s", strategy, who, strings.TrimPrefix(re.Msg, strategy+": "))
	e.Err = re.Err
	return e.WithHint("%s", hint)
}

// YarnImportCommand prepares commit's install in a new directory DIR:
// yarn (the operator's, never the repository's yarnPath or
// .yarn/releases) runs on the commit's package.json and yarn.lock alone,
// copied from git, with HOME and the configuration fixed — a .yarnrc(.yml)
// of the pull request's could name a yarnPath, which Berry runs, or a
// registry — and scripts off; then the import into the run's state
// directory. For Berry, DIR/.yarnrc.yml is the operator's own
// (nodeLinker: node-modules).
func YarnImportCommand(repoDir, commit, stateDir string) string {
	return fmt.Sprintf("mkdir DIR && for f in package.json yarn.lock; do git -C %s show %s:$f >DIR/$f; done && "+
		"(cd DIR && mkdir .home && export HOME=$PWD/.home YARN_IGNORE_PATH=1 YARN_ENABLE_SCRIPTS=0 && "+
		"if head -c 200 yarn.lock | grep -q 'yarn lockfile v1'; then yarn install --frozen-lockfile --ignore-scripts --no-default-rc; "+
		"else printf 'nodeLinker: node-modules\\nenableGlobalCache: false\\n' >.yarnrc.yml && yarn install --immutable; fi) && "+
		"runmill deps import --strategy yarn --repo %s --commit %s --out %s --from DIR", repoDir, commit, repoDir, commit, absDir(stateDir))
}

// attach gives the checkout the install whose yarn.lock and dependency
// fields equal its commit's, as an npm install is given (nodeModulesView).
func (y *yarnPrepared) attach(ctx context.Context, dir, views string, cow bool) (*View, error) {
	r, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	commit, err := r.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return nil, err
	}
	if e := y.errs[commit]; e != nil {
		return nil, e
	}
	_, lock, _, deps, err := yarnFilesAt(ctx, r, commit)
	if err != nil {
		return nil, y.atCommit(commit, err)
	}
	side := y.serving(lock, deps)
	if side == nil {
		return nil, y.atCommit(commit, refuse(Yarn, "yarn.lock differs from the base's and no install was prepared for it"))
	}
	if side.pnp {
		return pnpView(ctx, r, commit, dir, side)
	}
	return nodeModulesView(ctx, Yarn, r, dir, views, cow, side.tree, side.receipt, side.commit)
}

// yarnVersions is, per package name of commit's yarn.lock, its versions
// (one name may resolve to several).
func yarnVersions(ctx context.Context, repo *git.Repo, commit string) (map[string]string, error) {
	e, err := repo.Stat(ctx, commit, yarnLockFile)
	if err != nil {
		return nil, err
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return map[string]string{}, nil
	}
	_, _, l, _, err := yarnFilesAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	vs := map[string][]string{}
	for _, p := range l.Packages {
		if (!l.Berry || p.LinkType == "hard") && !slices.Contains(vs[p.Name], p.Version) {
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
