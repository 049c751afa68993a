package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runmill/verify/internal/sandbox"
)

// TestRunnerToolPaths on a runner image's layout: setup-go's Go first on
// PATH, the image's default Go reached through a symlink in a bound bin
// directory, a tool cache reached through a symlink of its own, and
// installs no PATH entry names. Only the installs PATH reaches are bound.
func TestRunnerToolPaths(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "mnt", "hostedtoolcache")
	tc := filepath.Join(dir, "hostedtoolcache") // → mnt/hostedtoolcache, as a runner may mount it
	for _, d := range []string{"go/1.26.8/x64/bin", "go/1.25.0/x64/bin", "node/22.1.0/x64/bin", "Python/3.12.4/x64/bin"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, d, "go"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, tc); err != nil {
		t.Fatal(err)
	}
	usrbin := filepath.Join(dir, "usr", "bin")
	if err := os.MkdirAll(usrbin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"go":      filepath.Join(tc, "go/1.25.0/x64/bin/go"),         // absolute, through the symlinked cache
		"python3": "../../mnt/hostedtoolcache/Python/3.12.4/x64/bin", // relative
		"sh":      "/bin/dash",                                       // not the cache
	} {
		if err := os.Symlink(target, filepath.Join(usrbin, name)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(tc, "go/1.26.8/x64/bin") + ":" + filepath.Join(tc, "go/9.9.9/x64/bin") + ":relative:" + usrbin + ":/usr/bin"
	bound := []string{filepath.Join(dir, "usr"), "/usr", "/bin"}

	got := sandbox.RunnerToolPaths(path, tc, bound)
	want := []string{
		filepath.Join(tc, "go/1.26.8/x64"), filepath.Join(real, "go/1.26.8/x64"), // PATH's entry, and where it resolves
		filepath.Join(tc, "go/1.25.0/x64"), filepath.Join(real, "go/1.25.0/x64"), // /usr/bin/go's target
		filepath.Join(real, "Python/3.12.4/x64"),
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("RunnerToolPaths = %q\nwant %q", got, want)
	}
	if got := sandbox.RunnerToolPaths(path, "", bound); got != nil {
		t.Errorf("no tool cache (not a runner): %q", got)
	}
	// A bin directory the task does not see is not searched for symlinks.
	if got := sandbox.RunnerToolPaths(usrbin, tc, []string{"/usr"}); got != nil {
		t.Errorf("an unbound bin directory's symlinks bound %q", got)
	}
	// A cache under a bound path is visible already.
	if got := sandbox.RunnerToolPaths(path, tc, append(bound, dir)); got != nil {
		t.Errorf("a cache under host_paths bound again: %q", got)
	}

	if got := sandbox.WithRunnerTools(nil, "/usr/bin", tc); got != nil {
		t.Errorf("WithRunnerTools without a tool on PATH = %q, want nil (the defaults)", got)
	}
	withDefaults := sandbox.WithRunnerTools(nil, path, tc)
	if !slices.Contains(withDefaults, "/usr") || slices.Contains(withDefaults, "/libx32") && !exists("/libx32") ||
		!slices.Contains(withDefaults, filepath.Join(tc, "go/1.26.8/x64")) {
		t.Errorf("WithRunnerTools(nil) = %q, want the existing defaults and the installs", withDefaults)
	}
	if got := sandbox.WithRunnerTools([]string{"/usr"}, path, tc); got[0] != "/usr" || len(got) != 1+len(sandbox.RunnerToolPaths(path, tc, []string{"/usr"})) {
		t.Errorf("WithRunnerTools([/usr]) = %q", got)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
