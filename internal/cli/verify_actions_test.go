package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/actions/actionstest"
	"github.com/runmill/verify/internal/gittest"
)

// TestVerifyGitHubActionsNoVerdict: a run that reaches no verdict (here the
// base revision does not exist) still tells the workflow: verdict
// not-merge-ready, a summary, one error annotation on stderr, stdout clean.
// The merge-ready and not-merge-ready paths run for real in action/.
func TestVerifyGitHubActionsNoVerdict(t *testing.T) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: go test ./...\n")
	cand := r.Commit("c")
	dir := t.TempDir()
	for _, k := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV"} {
		p := filepath.Join(dir, k)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(k, p)
	}
	code, out, errOut := runCLI(t, "", "verify", "--github-actions", "--repo", r.Dir, "--base", "no-such-rev", "--candidate", cand, "--out", t.TempDir())
	if code != 2 {
		t.Fatalf("exit %d, want 2 (RM-GIT-001); stderr:\n%s", code, errOut)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	outs, err := actionstest.ReadFileCommands(filepath.Join(dir, "GITHUB_OUTPUT"))
	if err != nil || len(outs) != 1 || outs["verdict"] != "not-merge-ready" {
		t.Errorf("outputs %q (%v), want verdict=not-merge-ready only", outs, err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "GITHUB_STEP_SUMMARY"))
	if !strings.Contains(string(sum), "no verdict") || !strings.Contains(string(sum), "RM\\-GIT\\-001") {
		t.Errorf("summary:\n%s", sum)
	}
	if !strings.Contains(errOut, "::error title=runmill%3A no verdict::RM-GIT-001") || !strings.Contains(errOut, "::stop-commands::runmill-") {
		t.Errorf("stderr lacks the stop-commands pause or the error annotation:\n%s", errOut)
	}
	if env, _ := os.ReadFile(filepath.Join(dir, "GITHUB_ENV")); len(env) != 0 {
		t.Errorf("GITHUB_ENV written: %q", env)
	}
}
