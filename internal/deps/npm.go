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
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// The files of an npm install (spec § 3 step 3).
const (
	packageJSON    = "package.json"
	packageLock    = "package-lock.json"
	nodeModules    = "node_modules"
	hiddenLockfile = "node_modules/.package-lock.json"
)

// maxManifest bounds package.json and lockfiles read from a commit or disk.
const maxManifest = 64 << 20

// lockfile is the part of package-lock.json (v2, v3) and of npm's hidden
// lockfile node_modules/.package-lock.json that runmill compares.
type lockfile struct {
	LockfileVersion int                    `json:"lockfileVersion"`
	Packages        map[string]lockPackage `json:"packages"`
}

type lockPackage struct {
	Version   string          `json:"version"`
	Resolved  string          `json:"resolved"`
	Integrity string          `json:"integrity"`
	Link      bool            `json:"link"`
	Optional  bool            `json:"optional"`
	OS        json.RawMessage `json:"os"`
	CPU       json.RawMessage `json:"cpu"`
}

// dependencyFields are the package.json fields that decide what npm
// installs; a candidate may change anything else (scripts, say) but not
// these without a new install at the base.
var dependencyFields = []string{"dependencies", "devDependencies", "optionalDependencies", "peerDependencies",
	"peerDependenciesMeta", "bundleDependencies", "bundledDependencies", "overrides", "workspaces"}

// npmSide is one validated, cached install: what it serves is decided by
// content (a checkout whose package-lock.json and package.json dependency
// fields equal its commit's), not by commit.
type npmSide struct {
	commit  string // the commit it was validated against
	receipt Receipt
	tree    string // the cached node_modules
	lock    []byte // package-lock.json at that commit
	deps    string // the dependency fields of package.json there, canonical
}

type npmPrepared struct {
	sides []*npmSide
	// errs are why a commit has no side (a stale or mutated import, an
	// unusable source checkout), repeated by Attach for its checkouts.
	errs map[string]error
	roles
}

// nodeRuntime is what the installed bytes were built for.
type nodeRuntime struct {
	Platform string `json:"platform"`
	Arch     string `json:"arch"`
	ABI      string `json:"abi"`
	Version  string `json:"version"`
}

// hostNode asks the host's node (the one the sandbox binds) for its
// platform, architecture and ABI. It runs no package manager and no
// repository code.
var hostNode = func(ctx context.Context) (nodeRuntime, error) {
	cmd := exec.CommandContext(ctx, "node", "-e",
		`process.stdout.write(JSON.stringify({platform:process.platform,arch:process.arch,abi:process.versions.modules,version:process.version}))`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/" // never a candidate's directory (no .noderc, no package.json "type")
	// A child holding the pipe must not outlast ctx.
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return nodeRuntime{}, fmt.Errorf("running node: %w", err)
	}
	var r nodeRuntime
	if err := json.Unmarshal(out, &r); err != nil || r.Platform == "" || r.Arch == "" || r.ABI == "" {
		return nodeRuntime{}, fmt.Errorf("node reported %q", out)
	}
	return r, nil
}

// npmInstall is a validated install in the source checkout.
type npmInstall struct {
	nodeModules string            // its node_modules
	inputs      map[string]string // the content key's inputs
	lock        []byte            // package-lock.json at the base
	deps        string            // package.json's dependency fields at the base
}

// importNPM is spec § 3 steps 3 and 4 for an install in srcDir made for
// commit: validated against that commit's lockfile, imported into the
// content-keyed cache (its files into the shared object store), and
// recorded as that commit's install.
func importNPM(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, srcDir string, objs *objects) (*npmSide, error) {
	in, err := validateNPMAt(ctx, repo, commit, srcDir)
	if err != nil {
		return nil, err
	}
	nm := in.nodeModules
	tree, r, err := entry(ctx, stateDir, scratch, NPM, in.inputs, objs, func(dst string) error {
		return importTree(ctx, NPM, nm, nm, dst, objs.file)
	})
	if err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, NPM, commit, r.Key); err != nil {
		return nil, err
	}
	return &npmSide{commit: commit, receipt: r, tree: tree, lock: in.lock, deps: in.deps}, nil
}

// validateNPM is spec § 3 step 3: the source checkout's package.json,
// package-lock.json, installed inventory, platform, architecture and Node
// ABI against the base. It reads; it copies nothing and runs no npm.
func validateNPM(ctx context.Context, repo *git.Repo, o Options) (*npmInstall, error) {
	return validateNPMAt(ctx, repo, o.Base, o.SourceDir)
}

// validateNPMAt is validateNPM for an install in srcDir made for commit.
func validateNPMAt(ctx context.Context, repo *git.Repo, commit, srcDir string) (*npmInstall, error) {
	o := struct{ Base, SourceDir string }{commit, srcDir}
	basePkg, err := readAt(ctx, repo, o.Base, packageJSON)
	if err != nil {
		return nil, err
	}
	baseLock, err := readAt(ctx, repo, o.Base, packageLock)
	if err != nil {
		return nil, err
	}
	// The source checkout must hold exactly the base's manifests.
	for _, f := range []struct {
		name string
		base []byte
	}{{packageJSON, basePkg}, {packageLock, baseLock}} {
		b, err := readFileCapped(filepath.Join(o.SourceDir, f.name))
		if err != nil {
			return nil, refuse(NPM, "reading %s in the source checkout %s: %v", f.name, o.SourceDir, err)
		}
		if !bytes.Equal(b, f.base) {
			return nil, refuse(NPM, "%s in the source checkout %s differs from the base %s (stale local lockfile or an unsynced checkout)", f.name, o.SourceDir, objectid.Short(o.Base))
		}
	}
	deps, err := dependencyDigest(basePkg)
	if err != nil {
		return nil, refuse(NPM, "package.json at the base: %v", err)
	}
	if hasField(basePkg, "workspaces") {
		return nil, refuse(NPM, "package.json at the base declares workspaces; npm workspace links are not supported")
	}
	lock, err := parseLockfile(baseLock)
	if errors.Is(err, errOldLockfile) {
		return nil, oldLockfile(objectid.Short(o.Base), err)
	}
	if err != nil {
		return nil, refuse(NPM, "package-lock.json at the base: %v", err)
	}
	for key, p := range lock.Packages {
		if key != "" && (p.Link || !isInstallPath(key)) {
			return nil, refuse(NPM, "package-lock.json at the base has the workspace link %q; npm workspace links are not supported", key)
		}
	}

	nm := filepath.Join(o.SourceDir, nodeModules)
	st, err := os.Lstat(nm)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, refuse(NPM, "no install: %s is missing", nm)
	case err != nil:
		return nil, refuse(NPM, "reading %s: %v", nm, err)
	case !st.IsDir():
		return nil, refuse(NPM, "%s is a %s, not the directory npm ci makes", nm, st.Mode().Type())
	}
	// Before anything is read through node_modules: a link that leaves it
	// would have this (root) process read a host file as a package's.
	if err := checkLinks(NPM, nm, nm); err != nil {
		return nil, err
	}
	hiddenBytes, err := readFileCapped(filepath.Join(o.SourceDir, hiddenLockfile))
	if err != nil {
		return nil, refuse(NPM, "no installed package inventory (%s): %v", hiddenLockfile, err)
	}
	hidden, err := parseLockfile(hiddenBytes)
	if err != nil {
		return nil, refuse(NPM, "%s: %v", hiddenLockfile, err)
	}
	rt, err := hostNode(ctx)
	if err != nil {
		return nil, refuse(NPM, "cannot learn the platform and Node ABI the sandbox runs: %v", err)
	}
	if err := compareInstall(o.SourceDir, lock, hidden, rt); err != nil {
		return nil, err
	}

	inputs := map[string]string{
		packageJSON: digest.Of(basePkg), packageLock: digest.Of(baseLock), hiddenLockfile: digest.Of(hiddenBytes),
		"platform": rt.Platform, "arch": rt.Arch, "node_abi": rt.ABI,
	}
	return &npmInstall{nodeModules: nm, inputs: inputs, lock: baseLock, deps: deps}, nil
}

// compareInstall checks the installed inventory against the lockfile (the
// same packages at the same versions and integrity; only optional ones may
// be absent), each installed package.json's version, the os/cpu each
// package allows, and the ABI of native addons.
func compareInstall(src string, lock, hidden *lockfile, rt nodeRuntime) error {
	var findings []string
	for _, key := range slices.Sorted(maps.Keys(lock.Packages)) {
		p := lock.Packages[key]
		if key == "" {
			continue
		}
		h, ok := hidden.Packages[key]
		if !ok {
			if !p.Optional {
				findings = append(findings, key+" is in package-lock.json but not installed")
			}
			continue
		}
		if h.Version != p.Version || (h.Integrity != "" && p.Integrity != "" && h.Integrity != p.Integrity) ||
			(h.Resolved != "" && p.Resolved != "" && h.Resolved != p.Resolved) {
			findings = append(findings, fmt.Sprintf("%s is installed at %s, package-lock.json says %s", key, h.Version, p.Version))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(hidden.Packages)) {
		h := hidden.Packages[key]
		if key == "" {
			continue
		}
		if _, ok := lock.Packages[key]; !ok {
			findings = append(findings, key+" is installed but not in package-lock.json")
			continue
		}
		if h.Link || !isInstallPath(key) {
			findings = append(findings, key+" is a workspace link")
			continue
		}
		if !allows(h.OS, rt.Platform) || !allows(h.CPU, rt.Arch) {
			findings = append(findings, fmt.Sprintf("%s is built for another platform (os %s, cpu %s; this is %s/%s)", key, h.OS, h.CPU, rt.Platform, rt.Arch))
		}
		b, err := readFileCapped(filepath.Join(src, filepath.FromSlash(key), packageJSON))
		var m struct {
			Version string `json:"version"`
		}
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		switch {
		case err != nil:
			findings = append(findings, fmt.Sprintf("%s: %v", key, err))
		case m.Version != h.Version:
			findings = append(findings, fmt.Sprintf("%s/package.json says %s, the inventory %s", key, m.Version, h.Version))
		}
		// node-gyp records the ABI it built an addon for.
		if gypi, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(key), "build", "config.gypi")); err == nil {
			if abi := gypABI(gypi); abi != "" && abi != rt.ABI {
				findings = append(findings, fmt.Sprintf("%s has a native addon built for Node ABI %s; the sandbox's node is ABI %s (%s)", key, abi, rt.ABI, rt.Version))
			}
		}
	}
	if len(findings) == 0 {
		return nil
	}
	return refuse(NPM, "the install in %s does not match the base's package-lock.json: %s", src, listFindings(findings))
}

// attach is spec § 3 step 5 for one fresh checkout: the install whose
// lockfile and dependency fields equal its commit's, hard-linked.
func (n *npmPrepared) attach(ctx context.Context, dir, views string, cow bool) (*View, error) {
	nm := filepath.Join(dir, nodeModules)
	if _, err := os.Lstat(nm); err == nil {
		return nil, refuse(NPM, "the commit tracks node_modules; remove it from the repository and ignore it")
	}
	r, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	commit, err := r.ResolveCommit(ctx, "HEAD", "HEAD")
	if err != nil {
		return nil, err
	}
	// The commit's own files, from git, not the checkout's: a run with the
	// base's harness has the base's package.json laid over the checkout
	// (its scripts decide how tests run, issue 25), while the install is
	// the commit's dependencies.
	lock, err := readAt(ctx, r, commit, packageLock)
	if err != nil {
		return nil, refuse(NPM, "package-lock.json is missing in the checked-out commit: %v", err)
	}
	pkg, err := readAt(ctx, r, commit, packageJSON)
	if err != nil {
		return nil, refuse(NPM, "package.json is missing in the checked-out commit: %v", err)
	}
	d, err := dependencyDigest(pkg)
	if err != nil {
		return nil, refuse(NPM, "package.json at %s: %v", objectid.Short(commit), err)
	}
	var side *npmSide
	for _, s := range n.sides {
		if bytes.Equal(lock, s.lock) && d == s.deps {
			side = s
			break
		}
	}
	if side == nil {
		if _, err := parseLockfile(lock); errors.Is(err, errOldLockfile) {
			return nil, oldLockfile(objectid.Short(commit), err)
		}
		return nil, n.missing(commit)
	}
	return nodeModulesView(ctx, NPM, r, dir, views, cow, side.tree, side.receipt, side.commit)
}

// nodeModulesView is a checkout's node_modules: the cached install tree,
// hard-linked into a view beside the cache and bound read-only (or
// copy-on-write) at <checkout>/node_modules, for a commit that ignores
// node_modules. npm, pnpm and yarn installs are offered the same way.
func nodeModulesView(ctx context.Context, strategy string, r *git.Repo, dir, views string, cow bool, tree string, receipt Receipt, commit string) (*View, error) {
	nm := filepath.Join(dir, nodeModules)
	if _, err := os.Lstat(nm); err == nil {
		return nil, refuse(strategy, "the commit tracks node_modules; remove it from the repository and ignore it")
	}
	ignored, err := r.Ignored(ctx, nodeModules+"/")
	if err != nil {
		return nil, err
	}
	if !ignored {
		return nil, refuse(strategy, "node_modules/ is not ignored; add it to .gitignore so the verification-only install cannot enter the measured tree")
	}
	if err := os.MkdirAll(views, 0o755); err != nil {
		return nil, fmt.Errorf("making the views directory: %w", err)
	}
	made, err := os.MkdirTemp(views, strategy+"-")
	if err != nil {
		return nil, fmt.Errorf("making the node_modules view: %w", err)
	}
	v := &View{Mounts: []Mount{{Source: filepath.Join(made, nodeModules), Destination: nm}},
		Exclude: []string{nodeModules}, Notes: []string{receipt.Note()}, made: made,
		Use: receipt.use(commit)}
	err = os.Chmod(made, 0o755) // MkdirTemp's 0700 would hide it from the sandbox user
	if err == nil {
		err = mirror(ctx, tree, v.Mounts[0].Source, linkFile)
	}
	if err == nil && cow {
		err = v.copyOnWrite()
	}
	if err == nil {
		err = os.Mkdir(nm, 0o755)
	}
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("making the node_modules view for %s: %w", dir, err)
	}
	return v, nil
}

// errOldLockfile is a lockfile npm 6 or older wrote (lockfileVersion 1):
// no install can be validated against it, so the fix is a new lockfile,
// not another npm ci (which keeps the lockfile as it is).
var errOldLockfile = errors.New("it was written by npm 6 or older")

// lockfileHint says how to replace a v1 lockfile.
const lockfileHint = "regenerate package-lock.json with npm 7 or later (npm install --package-lock-only --lockfile-version 3), " +
	"commit it, and start a fresh run; running npm ci again cannot help, it keeps the lockfile as it is"

// oldLockfile is the refusal of a v1 lockfile at commit: it keeps its own
// hint wherever it is reported (atCommit).
func oldLockfile(commit string, err error) *rmerr.Error {
	e := refuse(NPM, "package-lock.json at %s", commit).WithHint(lockfileHint)
	e.Err = err
	return e
}

func parseLockfile(b []byte) (*lockfile, error) {
	var l lockfile
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	if l.LockfileVersion < 2 || l.Packages == nil {
		return nil, fmt.Errorf("lockfileVersion %d has no packages map: %w", l.LockfileVersion, errOldLockfile)
	}
	return &l, nil
}

// isInstallPath reports whether a lockfile key names a folder under
// node_modules (not a workspace or a linked folder elsewhere).
func isInstallPath(key string) bool {
	return strings.HasPrefix(key, "node_modules/") && path.Clean(key) == key && !strings.Contains(key, "..")
}

// allows applies npm's os/cpu rule: a list of allowed values, or of
// "!value" exclusions; absent allows everything.
func allows(raw json.RawMessage, v string) bool {
	if len(raw) == 0 {
		return true
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return true
	}
	allowed, anyPositive := false, false
	for _, x := range list {
		if neg, ok := strings.CutPrefix(x, "!"); ok {
			if neg == v {
				return false
			}
			continue
		}
		anyPositive = true
		if x == v {
			allowed = true
		}
	}
	return allowed || !anyPositive
}

// gypABI reads node_module_version from a node-gyp config.gypi.
func gypABI(b []byte) string {
	i := bytes.Index(b, []byte(`"node_module_version":`))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(b[i+len(`"node_module_version":`):], " \t")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	return string(rest[:j])
}

// dependencyDigest is the canonical JSON of package.json's dependency fields.
func dependencyDigest(pkg []byte) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(pkg, &m); err != nil {
		return "", err
	}
	sel := map[string]any{}
	for _, f := range dependencyFields {
		if raw, ok := m[f]; ok {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", err
			}
			sel[f] = v
		}
	}
	b, err := json.Marshal(sel) // maps marshal with sorted keys
	return string(b), err
}

func hasField(pkg []byte, field string) bool {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(pkg, &m)
	_, ok := m[field]
	return ok
}

func readAt(ctx context.Context, repo *git.Repo, commit, name string) ([]byte, error) {
	e, err := repo.Stat(ctx, commit, name)
	if err != nil {
		return nil, err
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return nil, refuse(NPM, "%s has no %s (%s); dependencies: npm needs a committed package.json and package-lock.json", objectid.Short(commit), name, e.Kind)
	}
	return repo.ReadBlob(ctx, e, maxManifest)
}

// readFileCapped reads a regular file (not through a symlink) of bounded size.
func readFileCapped(p string) ([]byte, error) {
	if st, err := os.Lstat(p); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if st.Size() > maxManifest {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxManifest)
	}
	// Read through the bound too: a file that grows after its stat is
	// refused, never read whole.
	b, err := bounded.ReadAll(f, maxManifest)
	if err == nil && int64(len(b)) > maxManifest {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxManifest)
	}
	return b, err
}
