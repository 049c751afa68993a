package deps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// The cargo strategy offers each commit exactly the registry crates its
// Cargo.lock pins, as a cargo "directory source": one <name>-<version>
// directory per crate with its .cargo-checksum.json, the layout
// `cargo vendor --versioned-dirs` writes and Debian's librust-*-dev
// packages install under /usr/share/cargo/registry. The check's CARGO_HOME
// is a directory runmill writes per check run whose config.toml replaces
// crates.io with that source and turns the network off, so cargo can
// build nothing but the verified crates.

const (
	cargoLockFile = "Cargo.lock"
	cargoChecksum = ".cargo-checksum.json"
	// cargoTargetDir is in the sandbox's private TMPDIR (sandbox.TmpPath):
	// the checkout is read-only, and a build's output must not outlive
	// the check run.
	cargoTargetDir = "/tmp/cargo-target"
	maxCrateSums   = 4 << 20
)

// CargoOptions are the operator's cargo settings.
type CargoOptions struct {
	// Registry is a directory source prepared outside verification (a
	// directory of <name>-<version> crate directories): every commit of
	// the run that has no imported crates takes its Cargo.lock's crates
	// from there. Empty: only imports (runmill deps import) serve.
	Registry string
}

// cargoSide is one commit's Cargo.lock crates, verified and cached: a
// checkout whose Cargo.lock has the same bytes uses it.
type cargoSide struct {
	commit  string
	lock    string // digest of the Cargo.lock bytes
	receipt Receipt
	tree    string // the cached directory source
}

type cargoPrepared struct {
	sides    []*cargoSide
	errs     map[string]error // by commit, as npmPrepared.errs
	registry string           // the declared directory source, for hints
	roles
}

// cargoInputs are the content key's inputs of one Cargo.lock: its exact
// bytes, which evidence verify recomputes from the bound commit.
func cargoInputs(lock []byte) map[string]string {
	return map[string]string{cargoLockFile: digest.Of(lock)}
}

// cargoLockAt reads and parses Cargo.lock at the root of commit.
func cargoLockAt(ctx context.Context, repo *git.Repo, commit string) ([]byte, *cargoLock, error) {
	e, err := repo.Stat(ctx, commit, cargoLockFile)
	if err != nil {
		return nil, nil, err
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return nil, nil, refuse(Cargo, "%s has no Cargo.lock at the repository root (commit it: cargo generate-lockfile)", objectid.Short(commit))
	}
	b, err := repo.ReadBlob(ctx, e, maxManifest)
	if err != nil {
		return nil, nil, err
	}
	l, err := parseCargoLock(b)
	if err != nil {
		return nil, nil, refuse(Cargo, "Cargo.lock at %s: %v", objectid.Short(commit), err)
	}
	return b, l, nil
}

// registryCrates are the packages of l that come from a registry, the
// ones a directory source must hold; a source runmill cannot offer (git,
// another registry) is refused rather than left to fail in the sandbox.
func registryCrates(l *cargoLock) ([]cargoPackage, error) {
	var out, other []cargoPackage
	for _, p := range l.Packages {
		switch {
		case p.Source == "":
			// A member of the workspace: it is in the checkout.
		case p.Source == cratesIO:
			out = append(out, p)
		default:
			other = append(other, p)
		}
	}
	if len(other) > 0 {
		var names []string
		for _, p := range other {
			names = append(names, fmt.Sprintf("%s %s from %s", p.Name, p.Version, p.Source))
		}
		return nil, refuse(Cargo, "only crates.io crates can be prepared; Cargo.lock also pins %s", strings.Join(names, ", "))
	}
	return out, nil
}

// importCargo verifies commit's Cargo.lock crates in the directory source
// from and imports exactly those into the content-keyed cache (files into
// the shared object store, so a crate both sides pin is stored once).
func importCargo(ctx context.Context, repo *git.Repo, stateDir, scratch, commit, from string, objs *objects) (*cargoSide, error) {
	raw, l, err := cargoLockAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	crates, err := registryCrates(l)
	if err != nil {
		return nil, err
	}
	inputs := cargoInputs(raw)
	tree, r, err := entry(ctx, stateDir, scratch, Cargo, inputs, objs, func(dst string) error {
		return importCrates(ctx, from, dst, crates, objs.file)
	})
	if err != nil {
		return nil, err
	}
	if err := writeIndex(stateDir, Cargo, commit, r.Key); err != nil {
		return nil, err
	}
	return &cargoSide{commit: commit, lock: inputs[cargoLockFile], receipt: r, tree: tree}, nil
}

// importCrates copies each crate's directory from the directory source
// from into dst and checks the copy (which only runmill writes, so a
// crate swapped in the source after a check cannot pass) against the
// lockfile entry. With dst "" nothing is copied and from is checked in
// place. Every finding is collected.
func importCrates(ctx context.Context, from, dst string, crates []cargoPackage, file func(src, dst string, mode fs.FileMode) error) error {
	if !filepath.IsAbs(from) {
		return refuse(Cargo, "the directory source %q is not absolute", from)
	}
	if dst != "" {
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
	}
	var findings []string
	for _, p := range crates {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		src := filepath.Join(from, p.dir())
		st, err := os.Lstat(src)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			findings = append(findings, fmt.Sprintf("%s %s is not in it", p.Name, p.Version))
			continue
		case err != nil:
			findings = append(findings, fmt.Sprintf("%s %s: %v", p.Name, p.Version, err))
			continue
		case !st.IsDir():
			findings = append(findings, fmt.Sprintf("%s is not a directory", src))
			continue
		}
		at := src
		if dst != "" {
			at = filepath.Join(dst, p.dir())
			if err := importTree(ctx, Cargo, src, src, at, file); err != nil {
				return err
			}
		}
		if err := checkCrate(at, p); err != nil {
			findings = append(findings, fmt.Sprintf("%s %s: %v", p.Name, p.Version, err))
		}
	}
	if len(findings) > 0 {
		return refuse(Cargo, "the directory source %s does not hold Cargo.lock's crates: %s", from, listFindings(findings))
	}
	return nil
}

// crateSums is a directory source's .cargo-checksum.json.
type crateSums struct {
	// Package is the SHA-256 of the .crate the directory was unpacked
	// from; cargo compares it with Cargo.lock's checksum.
	Package *string `json:"package"`
	// Files are the SHA-256 of each file, by slash path in the crate.
	Files map[string]string `json:"files"`
}

// checkCrate checks one crate directory against its lockfile entry the
// way cargo's directory source does and more: .cargo-checksum.json's
// package checksum equals Cargo.lock's (else the directory is not the
// crate the lockfile pins), its Cargo.toml names the same package and
// version, and when it lists per-file hashes (cargo vendor does; Debian
// lists none) every file is listed and hashes to its entry.
func checkCrate(dir string, p cargoPackage) error {
	b, err := bounded.ReadFile(filepath.Join(dir, cargoChecksum), maxCrateSums)
	if err != nil {
		return fmt.Errorf("reading %s: %w", cargoChecksum, err)
	}
	var sums crateSums
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sums); err != nil {
		return fmt.Errorf("%s: %w", cargoChecksum, err)
	}
	switch {
	case sums.Package == nil:
		return fmt.Errorf("%s has no package checksum, Cargo.lock says %s: not the crate Cargo.lock pins", cargoChecksum, p.Checksum)
	case *sums.Package != p.Checksum:
		return fmt.Errorf("%s says package %q, Cargo.lock says %s: not the crate Cargo.lock pins", cargoChecksum, *sums.Package, p.Checksum)
	}
	if err := checkCargoToml(filepath.Join(dir, "Cargo.toml"), p); err != nil {
		return err
	}
	if len(sums.Files) == 0 {
		return nil
	}
	listed := map[string]bool{}
	for name, want := range sums.Files {
		if !filepath.IsLocal(name) || path.Clean(name) != name {
			return fmt.Errorf("%s lists %q, not a path inside the crate", cargoChecksum, name)
		}
		listed[name] = true
		got, _, err := hashFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if got != want {
			return fmt.Errorf("%s hashes to %s, %s says %s", name, got, cargoChecksum, want)
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel = filepath.ToSlash(rel); rel != cargoChecksum && !listed[rel] {
			return fmt.Errorf("%s is not in %s", rel, cargoChecksum)
		}
		return nil
	})
}

// checkCargoToml checks that the crate's manifest names the package and
// version Cargo.lock pins. cargo writes a normalised manifest into every
// .crate: [package] with one `key = "value"` a line.
func checkCargoToml(file string, p cargoPackage) error {
	b, err := bounded.ReadFile(file, maxManifest)
	if err != nil {
		return fmt.Errorf("reading Cargo.toml: %w", err)
	}
	got := map[string]string{}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = line == "[package]"
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !in || !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if k == "name" || k == "version" {
			if s, err := cargoString(strings.TrimSpace(v)); err == nil {
				got[k] = s
			}
		}
	}
	if got["name"] != p.Name || got["version"] != p.Version {
		return fmt.Errorf("its Cargo.toml is package %q version %q", got["name"], got["version"])
	}
	return nil
}

// prepareCargo gives each commit of the run (base, landing commit) the
// crates of its own Cargo.lock: an import recorded for that commit
// (runmill deps import), else the declared directory source.
func prepareCargo(ctx context.Context, repo *git.Repo, o Options, rl roles, objs *objects) (*cargoPrepared, error) {
	c := &cargoPrepared{errs: map[string]error{}, registry: o.Cargo.Registry, roles: rl}
	failed := map[string]error{} // by Cargo.lock digest
	for _, commit := range rl.commits() {
		raw, _, err := cargoLockAt(ctx, repo, commit)
		if err != nil {
			if rmerr.CodeOf(err) == "" {
				return nil, err
			}
			c.errs[commit] = c.atCommit(commit, err)
			continue
		}
		lock := cargoInputs(raw)[cargoLockFile]
		if slices.ContainsFunc(c.sides, func(s *cargoSide) bool { return s.lock == lock }) {
			continue
		}
		side, err := loadCargo(ctx, o.StateDir, commit, lock, objs)
		if err == nil && side == nil {
			if o.Cargo.Registry == "" {
				err = refuse(Cargo, "no crates were prepared for its Cargo.lock")
			} else {
				side, err = importCargo(ctx, repo, o.StateDir, o.ScratchDir, commit, o.Cargo.Registry, objs)
			}
		}
		if err != nil {
			if prev, ok := failed[lock]; ok {
				err = prev
			}
			failed[lock] = err
			c.errs[commit] = c.atCommit(commit, err)
			continue
		}
		c.sides = append(c.sides, side)
	}
	return c, nil
}

// loadCargo is the directory source imported for commit (runmill deps
// import), every cached byte re-hashed; nil when none was.
func loadCargo(ctx context.Context, stateDir, commit, lock string, objs *objects) (*cargoSide, error) {
	dir, key, inputs, err := indexed(stateDir, Cargo, commit, objs)
	if err != nil || dir == "" {
		return nil, err
	}
	if inputs[cargoLockFile] != lock {
		return nil, refuse(Cargo, "the crates imported for %s are stale: they were verified against Cargo.lock %s, the commit's is %s", objectid.Short(commit), inputs[cargoLockFile], lock)
	}
	r, err := reuse(ctx, dir, Cargo, key, inputs)
	if err != nil {
		return nil, err
	}
	return &cargoSide{commit: commit, lock: lock, receipt: r, tree: filepath.Join(dir, "tree")}, nil
}

// atCommit names the commit in a refusal and the command that prepares
// its crates. The fetch runs from / with a CARGO_HOME of the operator's
// own: cargo reads .cargo/config.toml from every directory above where it
// runs, and the pull request's could name a build script, a registry or
// a credential process.
func (c *cargoPrepared) atCommit(commit string, err error) error {
	return commitRefusal(Cargo, c.name(commit)+" has no prepared crates", err, CargoImportCommand(c.repoDir, commit, c.stateDir)+"; then start a fresh run")
}

// CargoImportCommand is what prepares the crates of commit's Cargo.lock
// outside verification: a directory source DIR holding its crates (from
// Debian's librust-*-dev packages, /usr/share/cargo/registry, or
// `cargo vendor --versioned-dirs` run from / on a copy of the commit's
// Cargo.toml and Cargo.lock with a CARGO_HOME of your own), imported
// into the state directory of the run that needs it.
func CargoImportCommand(repoDir, commit, stateDir string) string {
	return fmt.Sprintf("put the crates of %s:Cargo.lock into a directory source DIR (<name>-<version> directories with .cargo-checksum.json: "+
		"Debian's librust-*-dev packages in /usr/share/cargo/registry, or `cargo vendor --versioned-dirs` run from / with a CARGO_HOME of your own on a copy of the commit's Cargo.toml and Cargo.lock, never in a checkout of it) and run "+
		"runmill deps import --strategy cargo --repo %s --commit %s --out %s --from DIR", commit, repoDir, commit, absDir(stateDir))
}

// attach hands out the crates prepared for the checkout's Cargo.lock: a
// CARGO_HOME made for this check run (read-only in the sandbox) whose
// config replaces crates.io with the cached directory source and keeps
// cargo offline, and a private writable target directory.
func (c *cargoPrepared) attach(ctx context.Context, dir, views string) (*View, error) {
	b, err := readFileCapped(filepath.Join(dir, cargoLockFile))
	if err != nil {
		return nil, refuse(Cargo, "reading Cargo.lock: %v", err)
	}
	if _, err := parseCargoLock(b); err != nil {
		return nil, refuse(Cargo, "%v", err)
	}
	lock := cargoInputs(b)[cargoLockFile]
	i := slices.IndexFunc(c.sides, func(s *cargoSide) bool { return s.lock == lock })
	if i < 0 {
		commit, err := checkedOut(ctx, dir)
		if err != nil {
			return nil, err
		}
		if e := c.errs[commit]; e != nil {
			return nil, e
		}
		return nil, c.atCommit(commit, refuse(Cargo, "no crates were prepared for its Cargo.lock"))
	}
	side := c.sides[i]
	if err := os.MkdirAll(views, 0o755); err != nil {
		return nil, fmt.Errorf("making the views directory: %w", err)
	}
	made, err := os.MkdirTemp(views, "cargo-")
	if err != nil {
		return nil, err
	}
	v := &View{made: made}
	if err := os.Chmod(made, 0o755); err != nil { // MkdirTemp's 0700 would hide it from the sandbox user
		v.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(made, "config.toml"), cargoConfig(side.tree), 0o444); err != nil {
		v.Close()
		return nil, err
	}
	v.ReadOnly = []string{side.tree, made}
	v.Env = []string{"CARGO_HOME=" + made, "CARGO_NET_OFFLINE=true", "CARGO_TARGET_DIR=" + cargoTargetDir}
	v.Notes = []string{side.receipt.Note()}
	v.Use = side.receipt.use(side.commit)
	return v, nil
}

// cargoConfig is the check's CARGO_HOME/config.toml. The path is quoted
// as a TOML literal string; the cache's paths hold no quote.
func cargoConfig(source string) []byte {
	return []byte("[source.crates-io]\nreplace-with = \"runmill\"\n\n[source.runmill]\ndirectory = '" + source + "'\n\n[net]\noffline = true\n")
}

// cargoVersions is, per crates.io crate of commit's Cargo.lock, its
// versions (a crate may be pinned at two major versions at once).
func cargoVersions(ctx context.Context, repo *git.Repo, commit string) (map[string]string, error) {
	e, err := repo.Stat(ctx, commit, cargoLockFile)
	if err != nil {
		return nil, err
	}
	if e.Kind != git.Blob && e.Kind != git.Executable {
		return map[string]string{}, nil
	}
	_, l, err := cargoLockAt(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	vs := map[string][]string{}
	for _, p := range l.Packages {
		if p.Source != "" {
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
