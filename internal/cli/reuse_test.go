package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReuseUsage: --reuse without a trust is refused (nothing could be
// reused, and silence would hide it), as is a --trust that is no trust
// document.
func TestReuseUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "trust.json")
	os.WriteFile(bad, []byte("{}"), 0o644)
	t.Setenv("RUNMILL_SIGNING_KEY", "")
	verify := []string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github"}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{append(verify, "--reuse", dir), "--reuse needs a trust document"},
		{append(verify, "--reuse", dir, "--trust", filepath.Join(dir, "nope")), "reading --trust"},
		{append(verify, "--reuse", dir, "--trust", bad), "parsing --trust"},
	} {
		code, out, errOut := run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want 2 and %q", tc.args, code, out, errOut, tc.err)
		}
	}
}
