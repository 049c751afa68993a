// Package testreq is how a test says what it needs of the machine: root, a
// tool, a kernel feature, or time. A test whose need is not met is skipped
// on a developer's machine and fails under CI=true, where every test must
// run: a skip that CI does not notice would be a test that stopped running
// without anyone seeing it. Slow tests (cold compiles, registry installs,
// reports of millions of tests) are skipped by -short, the edit loop's tier;
// CI runs the full suite, where -short is never set.
package testreq

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether this is a CI run, where a test may not skip for want
// of a part (scripts/test.sh and the workflows set CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Need skips the test unless ok, or fails it under CI=true; what names the
// need and how it is met ("root to mount", "scripts/setup.sh installs X").
func Need(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("CI=true and %s", msg)
	}
	t.Skip(msg)
}

// Root needs the test to run as root; why says what for.
func Root(t testing.TB, why string) {
	t.Helper()
	Need(t, os.Geteuid() == 0, "not root: %s needs root", why)
}

// Tool needs each named program on PATH and returns their paths in order.
func Tool(t testing.TB, names ...string) []string {
	t.Helper()
	paths := make([]string, len(names))
	for i, n := range names {
		p, err := exec.LookPath(n)
		Need(t, err == nil, "%s is not installed (scripts/setup.sh installs it): %v", n, err)
		paths[i] = p
	}
	return paths
}

// Slow marks a test the edit loop's -short tier leaves out; why names what
// makes it slow ("compiles the standard library cold").
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s", why)
	}
}
