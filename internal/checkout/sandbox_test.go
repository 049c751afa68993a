package checkout_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/checkout"
)

// TestGitWorksReadOnly runs git in a checkout the way the sandbox will: the
// paths of ReadOnlyPaths bound read-only (a private mount namespace made
// with unshare -m, so the host's view is untouched), as a user that owns
// none of the files (setpriv to nobody: root would ignore permissions and
// ownership, and git's ownership check is exactly what must be passed).
//
// The read-only bind is the real guarantee (EROFS holds even for root);
// running as nobody adds the ownership mismatch and the missing write
// permission the sandbox user has. The test needs root for both.
func TestGitWorksReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private mount namespace and a switch to another uid")
	}
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	t.Run("full", func(t *testing.T) { testGitWorksReadOnly(t, false) })
	t.Run("layered", func(t *testing.T) { testGitWorksReadOnly(t, true) })
}

func testGitWorksReadOnly(t *testing.T, layered bool) {
	r := newRepo(t)
	state := filepath.Join(t.TempDir(), "state")
	m, err := checkout.NewManager(context.Background(), r.dir, state)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if layered {
		if err := m.EnableLayers(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := m.Create(context.Background(), r.candidate)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	// nobody must be able to reach the paths: t.TempDir makes 0700 parents.
	for _, p := range append(c.ReadOnlyPaths(), r.dir, state) {
		for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
			if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o005 != 0o005 {
				os.Chmod(d, st.Mode().Perm()|0o005)
			}
		}
	}
	before := digest(t, c.Dir)

	const inner = `
if touch probe 2>/dev/null || touch .git/probe 2>/dev/null; then echo WRITABLE; exit 1; fi
git rev-parse HEAD
git status --porcelain=v1 --untracked-files=all
git log -1 --format=%H
git describe --tags --always HEAD~1
git diff --stat HEAD
git show --format=%s -s HEAD
`
	run := func(env []string) (string, error) {
		args := []string{"-m", "sh", "-c", `set -e
dir=$1; shift
for p in "$@"; do mount --bind -o ro "$p" "$p"; done
cd "$dir"
exec setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -ec "$INNER"`, "sh", c.Dir}
		args = append(args, c.ReadOnlyPaths()...)
		cmd := exec.Command("unshare", args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "INNER=" + inner}, env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	out, err := run(checkout.GitEnv())
	if err != nil {
		t.Fatalf("git in the read-only checkout failed: %v\n%s", err, out)
	}
	want := strings.Join([]string{r.candidate, r.candidate, "v1.0.0", "candidate"}, "\n") + "\n"
	if out != want {
		t.Errorf("read-only git printed\n%s\nwant\n%s", out, want)
	}
	if after := digest(t, c.Dir); after != before {
		t.Errorf("the tree moved while git ran read-only: %s → %s", before, after)
	}
	if _, err := os.Stat(filepath.Join(c.GitDir, "index.lock")); err == nil {
		t.Error("git left an index.lock")
	}

	// Control: without GitEnv git refuses the checkout it does not own, so
	// the environment is what makes the difference.
	if out, err := run(nil); err == nil || !strings.Contains(out, "dubious ownership") {
		t.Errorf("without GitEnv: err=%v, output:\n%s\nwant git's dubious-ownership refusal", err, out)
	}
}
