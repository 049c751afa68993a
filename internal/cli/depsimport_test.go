package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/gittest"
)

// runmill deps import: usage errors exit 2, a refused install exits 1 with
// RM-VERIFY-005 and the reason, an install that matches its commit's
// lockfile is imported (exit 0, the receipt on stdout) — a real npm ci from
// the npm registry.
func TestDepsImport(t *testing.T) {
	depstest.Need(t, "node", "npm", "git")
	r := gittest.New(t)
	depstest.WriteSemver(t, r, "7.5.4")
	r.Write(".gitignore", "node_modules/\n")
	commit := r.Commit("sample")
	state := t.TempDir()
	wt := depstest.Worktree(t, r, commit)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing flags", []string{"--repo", r.Dir}, 2, "--commit, --from"},
		{"unknown strategy", []string{"--repo", r.Dir, "--commit", commit, "--from", wt, "--strategy", "pip"}, 2, "is not one of npm, go-modules, cargo"},
		{"unknown commit", []string{"--repo", r.Dir, "--commit", "nope", "--from", wt, "--out", state}, 2, "nope"},
		{"no install", []string{"--repo", r.Dir, "--commit", commit, "--from", wt, "--out", state}, 1, "RM-VERIFY-005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"deps", "import"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
		})
	}
	// The install is made by the very command an RM-VERIFY-005 refusal
	// gives (deps.ImportCommand): the manifests copied from git, npm
	// confined; its runmill step is the in-process CLI here.
	t.Run("imported", func(t *testing.T) {
		from := filepath.Join(t.TempDir(), "cand")
		prepare, runmill, ok := strings.Cut(strings.ReplaceAll(deps.ImportCommand(r.Dir, commit, state), "DIR", from), " && runmill ")
		if !ok || runmill != "deps import --repo "+r.Dir+" --commit "+commit+" --out "+state+" --from "+from {
			t.Fatalf("ImportCommand = %q: want the install, then runmill deps import of it into %s", deps.ImportCommand(r.Dir, commit, state), state)
		}
		depstest.Run(t, "/", nil, "sh", "-c", prepare)
		// The command as given, word for word.
		code, stdout, stderr := run(t, strings.Fields(runmill)...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		// It says where it wrote, on both streams.
		if !strings.Contains(stderr, "into the state directory "+state+":") || !strings.Contains(stderr, "verify uses it with --out "+state) {
			t.Errorf("deps import does not name the state directory %s:\n%s", state, stderr)
		}
		var got struct {
			Commit   string `json:"commit"`
			StateDir string `json:"state_dir"`
			Receipt  struct {
				Key   string `json:"key"`
				Files int    `json:"files"`
			} `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Commit != commit || got.Receipt.Files == 0 || got.StateDir != state {
			t.Fatalf("stdout %s: %v", stdout, err)
		}
		idx := filepath.Join(state, "deps", "index", "npm", commit)
		if b := depstest.Run(t, "/", nil, "cat", idx); strings.TrimSpace(b) != got.Receipt.Key {
			t.Errorf("index %s holds %q, the receipt's key is %s", idx, b, got.Receipt.Key)
		}

		// The same install with something planted in node_modules (each
		// into a fresh state dir): links judged where the kernel resolves
		// them, b -> . with a -> b/b/…/../../etc climbing above node_modules,
		// and a hard link to a root-owned 0600 file, which is refused
		// rather than imported readable by all (the tests run as root).
		nm := filepath.Join(from, "node_modules")
		refused := func(want ...string) {
			t.Helper()
			code, stdout, stderr := run(t, "deps", "import", "--repo", r.Dir, "--commit", commit, "--from", from, "--out", t.TempDir())
			if code != 1 || stdout != "" || !strings.Contains(stderr, "RM-VERIFY-005") {
				t.Fatalf("exit %d, want 1 with RM-VERIFY-005; stdout %q, stderr:\n%s", code, stdout, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Fatalf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Symlink(".", filepath.Join(nm, "b")))
		must(os.Symlink(strings.Repeat("b/", 8)+strings.Repeat("../", 8)+"etc", filepath.Join(nm, "a")))
		refused(filepath.Join(nm, "a")+` links to "b/b/`, "climbs above "+nm)
		must(os.Remove(filepath.Join(nm, "a")))
		must(os.Remove(filepath.Join(nm, "b")))
		secret := filepath.Join(t.TempDir(), "secret")
		must(os.WriteFile(secret, []byte("token"), 0o600))
		planted := filepath.Join(nm, "semver", "secret.txt")
		must(os.Link(secret, planted))
		refused("the file " + planted + " is mode 0600 (owner uid 0, gid 0), not readable by every user")
	})
}

// runmill deps import --strategy cargo: a commit's Cargo.lock crates from a
// directory source of real Debian crate directories are imported (exit 0,
// the receipt on stdout), and a source lacking one of them is refused
// (exit 1, RM-VERIFY-005 naming the crate).
func TestDepsImportCargo(t *testing.T) {
	depstest.Need(t, "git")
	r := gittest.New(t)
	depstest.WriteCargo(t, r, "1")
	commit := r.Commit("sample")
	state := t.TempDir()
	code, stdout, stderr := run(t, "deps", "import", "--strategy", "cargo", "--repo", r.Dir, "--commit", commit, "--out", state, "--from", depstest.CargoCrates(t, "semver-1.0.14"))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var got struct {
		Commit  string `json:"commit"`
		Receipt struct {
			Strategy string `json:"strategy"`
			Key      string `json:"key"`
			Files    int    `json:"files"`
		} `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Commit != commit || got.Receipt.Strategy != "cargo" || got.Receipt.Files == 0 {
		t.Fatalf("stdout %s: %v", stdout, err)
	}
	if b := depstest.Run(t, "/", nil, "cat", filepath.Join(state, "deps", "index", "cargo", commit)); strings.TrimSpace(b) != got.Receipt.Key {
		t.Errorf("the index holds %q, the receipt's key is %s", b, got.Receipt.Key)
	}
	code, stdout, stderr = run(t, "deps", "import", "--strategy", "cargo", "--repo", r.Dir, "--commit", commit, "--out", t.TempDir(), "--from", depstest.CargoCrates(t, "semver-0.9.0"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, "RM-VERIFY-005") || !strings.Contains(stderr, "semver 1.0.14 is not in it") {
		t.Fatalf("exit %d, want 1 with RM-VERIFY-005; stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}
