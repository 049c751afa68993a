package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
		{"unknown strategy", []string{"--repo", r.Dir, "--commit", commit, "--from", wt, "--strategy", "yarn"}, 2, "not npm or go-modules"},
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
	t.Run("imported", func(t *testing.T) {
		depstest.Run(t, wt, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		code, stdout, stderr := run(t, "deps", "import", "--repo", r.Dir, "--commit", commit, "--from", wt, "--out", state)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		var got struct {
			Commit  string `json:"commit"`
			Receipt struct {
				Key   string `json:"key"`
				Files int    `json:"files"`
			} `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Commit != commit || got.Receipt.Files == 0 {
			t.Fatalf("stdout %s: %v", stdout, err)
		}
		idx := filepath.Join(state, "deps", "index", "npm", commit)
		if b := depstest.Run(t, "/", nil, "cat", idx); strings.TrimSpace(b) != got.Receipt.Key {
			t.Errorf("index %s holds %q, the receipt's key is %s", idx, b, got.Receipt.Key)
		}
	})
}
