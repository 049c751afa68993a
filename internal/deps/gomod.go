package deps

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// goSumLine is one line of go.sum: "<module> <version>[/go.mod] h1:<base64>".
type goSumLine struct {
	Module, Version string
	GoMod           bool // the line hashes the module's go.mod only
	Hash            string
}

func (l goSumLine) String() string {
	v := l.Version
	if l.GoMod {
		v += "/go.mod"
	}
	return l.Module + " " + v + " " + l.Hash
}

// parseGoSum parses go.sum strictly: every non-empty line has three
// fields, a module path and version without spaces, and an h1 hash (the
// only algorithm the go command writes).
func parseGoSum(b []byte) ([]goSumLine, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("go.sum is not UTF-8")
	}
	var out []goSumLine
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("go.sum line %d: want \"module version hash\", got %q", i+1, line)
		}
		l := goSumLine{Module: f[0], Version: f[1], Hash: f[2]}
		if v, ok := strings.CutSuffix(l.Version, "/go.mod"); ok {
			l.Version, l.GoMod = v, true
		}
		if !validModulePart(l.Module) || !validModulePart(l.Version) || !strings.HasPrefix(l.Version, "v") {
			return nil, fmt.Errorf("go.sum line %d: invalid module or version in %q", i+1, line)
		}
		sum, ok := strings.CutPrefix(l.Hash, "h1:")
		if d, err := base64.StdEncoding.DecodeString(sum); !ok || err != nil || len(d) != sha256.Size {
			return nil, fmt.Errorf("go.sum line %d: %q is not an h1 hash", i+1, l.Hash)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return slices.CompactFunc(out, func(a, b goSumLine) bool { return a == b }), nil
}

// validModulePart refuses what could escape the module cache when joined
// into a path.
func validModulePart(s string) bool {
	if s == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "-") || strings.Contains(s, "\\") {
		return false
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '!' {
			return false
		}
	}
	return true
}

// escapePath is the module cache's case encoding: an upper-case letter
// becomes '!' and its lower case. It is golang.org/x/mod/module's
// escapeString, which the library exports only behind EscapePath's and
// EscapeVersion's import-path grammar (a dot in the first element, no '~'
// in some places, …): parseGoSum admits a wider, path-safe grammar
// (validModulePart) so that a go.sum the go command accepts is never
// refused here, and escaping must then not fail. TestEscapePathAgreesWithModule
// holds it to the library on every path both accept.
func escapePath(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hashDir is dirhash.HashDir(dir, prefix, dirhash.Hash1) with one check
// more: every file must be regular. HashDir would hash a symlink's target,
// so a planted link could make a tree hash to its go.sum line while the
// build reads other bytes.
func hashDir(dir, prefix string) (string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, _ := filepath.Rel(dir, p)
		files[prefix+"/"+filepath.ToSlash(rel)] = p
		return nil
	})
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	return dirhash.Hash1(names, func(n string) (io.ReadCloser, error) { return os.Open(files[n]) })
}

// hashGoMod is the "/go.mod" line's hash of one file.
func hashGoMod(file string) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) { return os.Open(file) })
}

// goSide is one commit's go.sum modules, verified and cached: a checkout
// whose go.sum has the same bytes uses it.
type goSide struct {
	commit  string
	sum     string // sha256 of the go.sum bytes ("" file: of no bytes)
	receipt Receipt
	tree    string // the cached module cache (GOMODCACHE)
}

type goPrepared struct {
	sides    []*goSide
	errs     map[string]error // by commit, as npmPrepared.errs
	build    *Receipt         // the prepared build cache, when declared
	gocache  string           // its cached tree
	modcache string           // the declared (or host) module cache, for hints
	roles
}

// hostGoModCache is `go env GOMODCACHE` of the host (no network, no module
// download: go env only reads configuration).
//
// It runs in "/" with hostGoEnv, never in the candidate's directory and
// never with runmill's whole environment (issue 13, S6): a candidate go.mod
// saying `toolchain go1.99.1` must not make the host download and run a
// toolchain, and the go command has no business seeing the signing key or
// the GitHub token.
var hostGoModCache = func(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMODCACHE")
	cmd.Dir = "/"
	cmd.Env = hostGoEnv(os.LookupEnv)
	cmd.WaitDelay = time.Second // a child holding the pipe must not outlast ctx
	out, err := cmd.Output()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// hostGoPassed are the variables from which the go command derives
// GOMODCACHE — the variable itself, GOPATH (whose first entry's pkg/mod is
// the default), the go env file (GOENV, else $XDG_CONFIG_HOME/go/env, else
// $HOME/.config/go/env) — and what it needs to find itself (PATH, GOROOT).
// Passing exactly these keeps the operator's answer what it was with the
// whole environment.
var hostGoPassed = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "GOENV", "GOPATH", "GOMODCACHE", "GOROOT"}

// hostGoEnv is the environment of runmill's own go command on the host:
// hostGoPassed from lookup, and settings no go env file and no go.mod can
// override — GOTOOLCHAIN=local (run the installed go, never switch to or
// download another), GOPROXY=off (nothing to download from, should anything
// try), GOFLAGS empty, GOWORK=off.
func hostGoEnv(lookup func(string) (string, bool)) []string {
	env := make([]string, 0, len(hostGoPassed)+4)
	for _, k := range hostGoPassed {
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=", "GOWORK=off")
}

// moduleCache is the declared module cache, or the host's.
func moduleCache(ctx context.Context, g GoOptions) (string, error) {
	modcache := g.ModuleCache
	if modcache == "" {
		var err error
		if modcache, err = hostGoModCache(ctx); err != nil {
			return "", refuse(GoModules, "no module cache declared (dependencies.go_modules.module_cache) and %v", err)
		}
	}
	if !filepath.IsAbs(modcache) {
		return "", refuse(GoModules, "module cache %q is not absolute", modcache)
	}
	return modcache, nil
}

func readGoSum(ctx context.Context, repo *git.Repo, commit string) ([]goSumLine, error) {
	if e, err := repo.Stat(ctx, commit, "go.mod"); err != nil {
		return nil, err
	} else if e.Kind != git.Blob && e.Kind != git.Executable {
		return nil, refuse(GoModules, "%s has no go.mod at the repository root", objectid.Short(commit))
	}
	e, err := repo.Stat(ctx, commit, "go.sum")
	if err != nil {
		return nil, err
	}
	if e.Kind == git.Missing {
		return nil, nil // a module without dependencies
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return nil, refuse(GoModules, "go.sum at %s is a %s", objectid.Short(commit), e.Kind)
	}
	b, err := repo.ReadBlob(ctx, e, maxManifest)
	if err != nil {
		return nil, err
	}
	lines, err := parseGoSum(b)
	if err != nil {
		return nil, refuse(GoModules, "go.sum at %s: %v", objectid.Short(commit), err)
	}
	return lines, nil
}

// goSumAt reads go.sum at commit: its bytes (nil when absent) and lines.
func goSumAt(ctx context.Context, repo *git.Repo, commit string) ([]byte, []goSumLine, error) {
	lines, err := readGoSum(ctx, repo, commit)
	if err != nil || lines == nil {
		return nil, lines, err
	}
	e, err := repo.Stat(ctx, commit, "go.sum")
	if err != nil {
		return nil, nil, err
	}
	b, err := repo.ReadBlob(ctx, e, maxManifest)
	return b, lines, err
}

// goInputs are the content key's inputs of one go.sum: its exact bytes,
// which evidence verify recomputes from the bound commit.
func goInputs(sum []byte) map[string]string {
	return map[string]string{"go.sum": digest.Of(sum)}
}

// importGo verifies commit's go.sum modules in modcache and imports them
// into the content-keyed cache (files into the shared object store, so a
// module at the same version on both sides is stored once).
func importGo(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, modcache string, objs *objects) (*goSide, error) {
	raw, lines, err := goSumAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	inputs := goInputs(raw)
	tree, r, err := entry(ctx, stateDir, scratch, GoModules, inputs, objs, func(dst string) error {
		return importModules(ctx, modcache, dst, lines, objs.file)
	})
	if err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, GoModules, commit, r.Key); err != nil {
		return nil, err
	}
	return &goSide{commit: commit, sum: inputs["go.sum"], receipt: r, tree: tree}, nil
}

// prepareGo gives each commit of the run (base, landing commit) a
// module cache verified against its own go.sum: an import recorded for
// that commit (runmill deps import), else the declared module cache.
func prepareGo(ctx context.Context, repo *git.Repo, o Options, rl roles, objs *objects) (*goPrepared, error) {
	g := &goPrepared{errs: map[string]error{}, roles: rl}
	modcache, mcErr := moduleCache(ctx, o.Go)
	g.modcache = modcache
	failed := map[string]error{} // by go.sum digest
	for _, c := range rl.commits() {
		raw, _, err := goSumAt(ctx, repo, c)
		if err != nil {
			if rmerr.CodeOf(err) == "" {
				return nil, err
			}
			g.errs[c] = err
			continue
		}
		sum := goInputs(raw)["go.sum"]
		if slices.ContainsFunc(g.sides, func(s *goSide) bool { return s.sum == sum }) {
			continue
		}
		side, err := loadGo(ctx, o.StateDir, c, sum, objs)
		if err == nil && side == nil {
			if mcErr != nil {
				err = mcErr
			} else {
				side, err = importGo(ctx, repo, o.StateDir, o.ScratchDir, c, modcache, objs)
			}
		}
		if err != nil {
			if prev, ok := failed[sum]; ok {
				err = prev
			}
			failed[sum] = err
			g.errs[c] = g.atCommit(c, err)
			continue
		}
		g.sides = append(g.sides, side)
	}
	if o.Go.BuildCache != "" {
		br, btree, err := prepareBuildCache(ctx, o.StateDir, o.ScratchDir, o.Go.BuildCache, objs)
		if err != nil {
			return nil, err
		}
		g.build, g.gocache = &br, btree
	}
	return g, nil
}

// atCommit names the commit in a refusal and the preparation it lacks.
func (g *goPrepared) atCommit(commit string, err error) error {
	var re *rmerr.Error
	if !errors.As(err, &re) || re.Code != rmerr.VerifyDependencies {
		return err
	}
	cache := g.modcache
	if cache == "" {
		cache = "<module cache>"
	}
	return rmerr.New(rmerr.VerifyDependencies, "%s: %s has no prepared module cache: %s", GoModules, g.name(commit), strings.TrimPrefix(re.Msg, GoModules+": ")).
		WithHint("outside verification, in a checkout of %s run `GOMODCACHE=%s GOFLAGS=-modcacherw go mod download` (or import a module cache made for it: `runmill deps import --strategy go-modules --repo %s --commit %s --out %s --from MODCACHE`), and start a fresh run", commit, cache, g.repoDir, commit, absDir(g.stateDir))
}

// importModules copies the modules of lines from modcache to dst after
// checking each against its go.sum hash: the go.mod files under
// cache/download, and the extracted module trees with their .ziphash
// (the go command treats a tree without one as a partial download).
// With dst "" it only checks.
func importModules(ctx context.Context, modcache, dst string, lines []goSumLine, file func(src, dst string, mode fs.FileMode) error) error {
	if dst != "" {
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
	}
	var findings []string
	importing := func(l goSumLine, err error) error {
		return refuse(GoModules, "importing %s@%s from %s: %v", l.Module, l.Version, modcache, err)
	}
	for _, l := range lines {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		mod, ver := escapePath(l.Module), escapePath(l.Version)
		dl := filepath.Join("cache", "download", filepath.FromSlash(mod), "@v")
		if l.GoMod {
			rel := filepath.Join(dl, ver+".mod")
			got, err := hashGoMod(filepath.Join(modcache, rel))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				findings = append(findings, fmt.Sprintf("%s@%s: go.mod is not in the module cache", l.Module, l.Version))
				continue
			case err != nil:
				findings = append(findings, fmt.Sprintf("%s@%s: %v", l.Module, l.Version, err))
				continue
			case got != l.Hash:
				findings = append(findings, fmt.Sprintf("%s@%s: go.mod hashes to %s, go.sum says %s", l.Module, l.Version, got, l.Hash))
				continue
			}
			if dst == "" {
				continue
			}
			if err := copyInto(modcache, dst, rel, file); err != nil {
				return importing(l, err)
			}
			// .info is metadata the go command reads for version queries.
			if err := copyInto(modcache, dst, filepath.Join(dl, ver+".info"), file); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return importing(l, err)
			}
			continue
		}
		rel := filepath.FromSlash(mod) + "@" + ver
		got, err := hashDir(filepath.Join(modcache, rel), l.Module+"@"+l.Version)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			findings = append(findings, fmt.Sprintf("%s@%s is not in the module cache", l.Module, l.Version))
			continue
		case err != nil:
			findings = append(findings, fmt.Sprintf("%s@%s: %v", l.Module, l.Version, err))
			continue
		case got != l.Hash:
			findings = append(findings, fmt.Sprintf("%s@%s hashes to %s, go.sum says %s", l.Module, l.Version, got, l.Hash))
			continue
		}
		zh := filepath.Join(dl, ver+".ziphash")
		if b, err := os.ReadFile(filepath.Join(modcache, zh)); err != nil || strings.TrimSpace(string(b)) != l.Hash {
			findings = append(findings, fmt.Sprintf("%s@%s: its .ziphash is missing or disagrees with go.sum (a partial download)", l.Module, l.Version))
			continue
		}
		if dst == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		if err := mirror(ctx, filepath.Join(modcache, rel), filepath.Join(dst, rel), file); err != nil {
			return importing(l, err)
		}
		if err := copyInto(modcache, dst, zh, file); err != nil {
			return importing(l, err)
		}
	}
	if len(findings) > 0 {
		return refuse(GoModules, "the module cache %s does not hold go.sum's modules: %s", modcache, listFindings(findings))
	}
	return nil
}

// copyInto copies the file rel from one root to the other, making parents.
func copyInto(from, to, rel string, file func(src, dst string, mode fs.FileMode) error) error {
	src := filepath.Join(from, rel)
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := readableByAll(src, st); err != nil {
		return err
	}
	dst := filepath.Join(to, rel)
	if _, err := os.Lstat(dst); err == nil {
		return nil // the same go.mod named by two lines
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return file(src, dst, st.Mode())
}

// prepareBuildCache imports the operator's GOCACHE. Its key is a listing
// of names, sizes and modification times — cheap to compute each run; any
// change makes a new entry — and reuse verifies every cached byte.
func prepareBuildCache(ctx context.Context, stateDir, scratch, src string, objs *objects) (Receipt, string, error) {
	if !filepath.IsAbs(src) {
		return Receipt{}, "", refuse(GoModules, "build cache %q is not absolute", src)
	}
	h := sha256.New()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		fmt.Fprintf(h, "%q %s %d %d\n", rel, info.Mode().Type(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return Receipt{}, "", refuse(GoModules, "reading the build cache %s: %v", src, err)
	}
	inputs := map[string]string{"listing": "sha256:" + hex.EncodeToString(h.Sum(nil))}
	tree, r, err := entry(ctx, stateDir, scratch, goBuild, inputs, objs, func(dst string) error {
		return importTree(ctx, GoModules, "the build cache "+src, src, dst, copyFile)
	})
	return r, tree, err
}

// attach hands out the read-only module cache prepared for the
// checkout's go.sum.
func (g *goPrepared) attach(ctx context.Context, dir string) (*View, error) {
	b, err := readFileCapped(filepath.Join(dir, "go.sum"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b = nil
	case err != nil:
		return nil, refuse(GoModules, "reading go.sum: %v", err)
	default:
		if _, err := parseGoSum(b); err != nil {
			return nil, refuse(GoModules, "%v", err)
		}
	}
	sum := goInputs(b)["go.sum"]
	i := slices.IndexFunc(g.sides, func(s *goSide) bool { return s.sum == sum })
	if i < 0 {
		commit, err := checkedOut(ctx, dir)
		if err != nil {
			return nil, err
		}
		if e := g.errs[commit]; e != nil {
			return nil, e
		}
		return nil, g.atCommit(commit, refuse(GoModules, "no module cache was prepared for its go.sum"))
	}
	side := g.sides[i]
	v := &View{
		ReadOnly: []string{side.tree},
		Env:      []string{"GOMODCACHE=" + side.tree, "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOSUMDB=off"},
		Notes:    []string{side.receipt.Note()},
		Use:      side.receipt.use(side.commit),
	}
	if g.build != nil {
		v.ReadOnly = append(v.ReadOnly, g.gocache)
		v.GoCache = g.gocache
		// The module index is the one build-cache write the go command
		// does not tolerate failing (a miss for a module at a new
		// GOMODCACHE path ends in "setup failed"); without it go reads
		// the module's files directly. Compile and link misses are
		// rebuilt and kept in the private work directory.
		v.Env = append(v.Env, "GODEBUG=goindex=0")
		v.Notes = append(v.Notes, g.build.Note())
	}
	return v, nil
}
