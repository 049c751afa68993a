package deps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/pkg/rmerr"
)

// TestCheckPnpmInstall installs the pnpm sample from the npm registry with
// pnpm 9 and checks it against its lockfile as pnpm left it, then after
// each way an install can differ from the lockfile.
func TestCheckPnpmInstall(t *testing.T) {
	src := t.TempDir()
	depstest.WritePnpm(t, src, "pnpm-basic")
	store := depstest.PnpmInstall(t, src)
	lock, err := os.ReadFile(filepath.Join(src, pnpmLockFile))
	if err != nil {
		t.Fatal(err)
	}
	l, err := parsePnpmLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPnpmInstall(src, l, lock, store); err != nil {
		t.Fatalf("pnpm's own install: %v", err)
	}
	msDir := filepath.Join(src, "node_modules", ".pnpm", "ms@2.1.2", "node_modules", "ms")
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"edited installed file", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "node_modules/.pnpm/ms@2.1.2/node_modules/ms/index.js"), "module.exports = () => 0\n")
		}, "index.js was edited"},
		{"added file", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "node_modules/.pnpm/ms@2.1.2/node_modules/ms/extra.js"), "x\n")
		}, "extra.js is not in the package's tarball"},
		{"removed file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "node_modules/.pnpm/ms@2.1.2/node_modules/ms/readme.md")); err != nil {
				t.Fatal(err)
			}
		}, "files are installed"},
		{"edited version", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "node_modules/.pnpm/ms@2.1.2/node_modules/ms/package.json"), `{"name":"ms","version":"2.1.3"}`)
		}, "its package.json is ms@2.1.3"},
		{"missing package", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "node_modules/.pnpm/is-number@7.0.0")); err != nil {
				t.Fatal(err)
			}
		}, "is-number@7.0.0 is not installed"},
		{"extra package", func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "node_modules/.pnpm/left-pad@1.3.0/node_modules/left-pad"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "left-pad@1.3.0 is not in pnpm-lock.yaml"},
		{"relinked", func(t *testing.T, dir string) {
			relink(t, filepath.Join(dir, "node_modules/ms"), ".pnpm/is-number@7.0.0/node_modules/is-number")
		}, "node_modules/ms links to"},
		{"link outside", func(t *testing.T, dir string) {
			relink(t, filepath.Join(dir, "node_modules/ms"), "../../../../etc")
		}, "every link must stay inside it"},
		{"another lockfile", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "node_modules/.pnpm/lock.yaml"), "lockfileVersion: '9.0'\n")
		}, "made from another lockfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "install")
			depstest.Run(t, "/", nil, "cp", "-a", src, dir)
			tc.change(t, dir)
			err := checkPnpmInstall(dir, l, lock, store)
			if rmerr.CodeOf(err) != rmerr.VerifyDependencies || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(msDir); err != nil {
		t.Fatalf("the source install was changed: %v", err)
	}
}

func edit(t *testing.T, p, s string) {
	t.Helper()
	os.Remove(p) // the install's files are hard links into pnpm's store
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func relink(t *testing.T, p, target string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
