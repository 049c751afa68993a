// Package depstest builds the real sample projects of the prepared
// dependency tests: an npm project (mocha with a JUnit reporter, installed
// with npm ci from the npm registry) and a Go module with a third-party
// dependency (downloaded from the module proxy).
package depstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/gittest"
)

// Need skips when tool is missing, and fails with CI=true.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	testreq.Tool(t, tools...)
}

// testdata is this package's sibling testdata directory.
func testdata(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// WriteNPM writes the npm sample (package.json, its committed lockfile, a
// mocha test and a .gitignore with node_modules/) into the repository.
func WriteNPM(t testing.TB, r *gittest.Repo) {
	t.Helper()
	writeNPM(t, r, "npm-mocha", "test/cart.test.js")
}

// WriteVitest writes the vitest sample: vitest 3 with its platform-specific
// optional packages (rollup and esbuild binaries for every platform in the
// lockfile, this platform's installed).
func WriteVitest(t testing.TB, r *gittest.Repo) {
	t.Helper()
	writeNPM(t, r, "npm-vitest", "test/cart.test.js")
}

func writeNPM(t testing.TB, r *gittest.Repo, sample string, files ...string) {
	t.Helper()
	src := filepath.Join(testdata(t), sample)
	for _, f := range append([]string{"package.json", "package-lock.json"}, files...) {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(f, string(b))
	}
	b, err := os.ReadFile(filepath.Join(testdata(t), "npm-mocha", "gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	r.Write(".gitignore", string(b))
}

// NPMCI runs npm ci in dir, as the operator does (spec § 3 step 1).
func NPMCI(t testing.TB, dir string) {
	t.Helper()
	testreq.Slow(t, "npm ci installs from the registry")
	Need(t, "node", "npm")
	Run(t, dir, nil, "npm", "ci", "--no-audit", "--no-fund")
}

// WriteGo writes the Go sample (go.mod requiring github.com/google/go-cmp,
// its go.sum and a test) into the repository.
func WriteGo(t testing.TB, r *gittest.Repo) {
	t.Helper()
	src := filepath.Join(testdata(t), "go-cmp")
	for _, f := range []string{"go.mod", "go.sum", "rmgo.go", "diff_test.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(f, string(b))
	}
}

// GoModDownload fills modcache with dir's modules from the module proxy,
// as the operator does outside verification. -modcacherw lets the test's
// temp dir be removed.
func GoModDownload(t testing.TB, dir, modcache string) {
	t.Helper()
	testreq.Slow(t, "go mod download fetches from the module proxy")
	Need(t, "go")
	Run(t, dir, []string{"GOMODCACHE=" + modcache, "GOFLAGS=-modcacherw"}, "go", "mod", "download")
}

// Run runs a command in dir with extra environment and fails the test on error.
func Run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WriteSemver writes package.json and package-lock.json of the semver
// sample at one semver version (7.5.3, 7.5.4 or 7.6.3; mocha 10.8.2
// beside it), lockfiles npm made from the npm registry: a change from one
// to another is a dependency bump as Dependabot makes it.
func WriteSemver(t testing.TB, r *gittest.Repo, version string) {
	t.Helper()
	src := filepath.Join(testdata(t), "npm-semver", version)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(f, string(b))
	}
}

// WriteGoCmp07 writes go.mod and go.sum bumping the Go sample's
// github.com/google/go-cmp from v0.6.0 to v0.7.0 (go get, then go mod tidy).
func WriteGoCmp07(t testing.TB, r *gittest.Repo) {
	t.Helper()
	src := filepath.Join(testdata(t), "go-cmp-0.7.0")
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(f, string(b))
	}
}

// Worktree is a detached checkout of commit beside the repository, as an
// operator makes one to prepare that commit's install.
func Worktree(t testing.TB, r *gittest.Repo, commit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wt")
	r.Git("worktree", "add", "--detach", dir, commit)
	t.Cleanup(func() { r.Git("worktree", "remove", "--force", dir) })
	return dir
}

// DebianRegistry is Debian's directory of crate sources, where the
// librust-*-dev packages (scripts/setup.sh) install them.
const DebianRegistry = "/usr/share/cargo/registry"

// WriteCargo writes the Cargo sample — a library whose tests use semver,
// src/lib.rs the same on every side — with the Cargo.toml and Cargo.lock
// of one semver line ("0.9": semver 0.9.0 and semver-parser 0.7.0; "1":
// semver 1.0.14; "both": 0.9 as semver and 1.0.14 beside it as semver1),
// lockfiles cargo wrote against Debian's crate directories. The bump from
// 0.9 to 1 breaks one test, tests::build_metadata_is_the_same_release:
// semver 1 compares build metadata. The bump to "both" breaks none.
func WriteCargo(t testing.TB, r *gittest.Repo, semver string) {
	t.Helper()
	src := filepath.Join(testdata(t), "cargo")
	for _, f := range []string{"semver-" + semver + "/Cargo.toml", "semver-" + semver + "/Cargo.lock", "src/lib.rs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(strings.TrimPrefix(f, "semver-"+semver+"/"), string(b))
	}
	r.Write(".gitignore", "target/\n")
}

// CargoCrates is a directory source holding copies of Debian's crate
// directories named (name-version), as an operator assembles one for a
// commit; it skips (fails with CI=true) when a librust-*-dev package is
// not installed.
func CargoCrates(t testing.TB, crates ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range crates {
		src := filepath.Join(DebianRegistry, c)
		_, err := os.Stat(src)
		testreq.Need(t, err == nil, "%s is not installed (scripts/setup.sh installs the librust-*-dev packages)", src)
		Run(t, "/", nil, "cp", "-a", src, filepath.Join(dir, c))
	}
	return dir
}

// Pnpm is the pnpm CLI scripts/setup.sh installs from the npm registry
// ($RUNMILL_PNPM, else pnpm under $RUNMILL_TOOLS_DIR or the user's cache's
// runmill-tools, as scripts/setup.sh puts it); it skips
// (fails with CI=true) when it is missing.
func Pnpm(t testing.TB) string {
	t.Helper()
	p := os.Getenv("RUNMILL_PNPM")
	if p == "" {
		tools := os.Getenv("RUNMILL_TOOLS_DIR")
		if tools == "" {
			cache, err := os.UserCacheDir()
			testreq.Need(t, err == nil, "no user cache directory to find pnpm in: %v", err)
			tools = filepath.Join(cache, "runmill-tools")
		}
		p = filepath.Join(tools, "pnpm", "node_modules", ".bin", "pnpm")
	}
	_, err := os.Stat(p)
	testreq.Need(t, err == nil, "pnpm is not installed at %s (scripts/setup.sh installs it; RUNMILL_PNPM names another)", p)
	return p
}

// PnpmInstall runs pnpm install --frozen-lockfile in dir with a store of
// its own and the user and global configs empty, as the operator does
// outside verification, and returns the store directory.
func PnpmInstall(t testing.TB, dir string) string {
	t.Helper()
	testreq.Slow(t, "pnpm install fetches from the npm registry")
	Need(t, "node")
	pnpm := Pnpm(t)
	store := filepath.Join(t.TempDir(), "store")
	empty := filepath.Join(t.TempDir(), "empty-rc")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	Run(t, dir, []string{"npm_config_userconfig=" + empty, "npm_config_globalconfig=" + empty},
		pnpm, "install", "--frozen-lockfile", "--ignore-scripts", "--store-dir", store)
	return store
}

// WritePnpm writes package.json and pnpm-lock.yaml of a pnpm sample
// ("pnpm-basic": is-number 7.0.0 and ms 2.1.2) into dir.
func WritePnpm(t testing.TB, dir, sample string) {
	t.Helper()
	for _, f := range []string{"package.json", "pnpm-lock.yaml"} {
		b, err := os.ReadFile(filepath.Join(testdata(t), sample, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// PnpmPrepare is what an operator does for one commit of r outside
// verification: its package.json and pnpm-lock.yaml alone, from git, in
// an empty directory, installed by pnpm. It returns the directory.
func PnpmPrepare(t testing.TB, r *gittest.Repo, commit string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"package.json", "pnpm-lock.yaml"} {
		b, err := exec.Command("git", "-C", r.Dir, "show", commit+":"+f).Output()
		if err != nil {
			t.Fatalf("git show %s:%s: %v", commit, f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	PnpmInstall(t, dir)
	return dir
}
