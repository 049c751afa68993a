package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/harness"
)

// runCLI runs one command line and returns exit code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestEveryDesignCommandExists(t *testing.T) {
	for _, name := range []string{"verify", "manifest", "report inventory", "evidence verify", "evidence keygen",
		"evidence expect", "evidence download", "inspect", "doctor", "init"} {
		c, rest := lookup(strings.Fields(name))
		if c == nil || c.name != name || len(rest) != 0 {
			t.Errorf("command %q not registered", name)
			continue
		}
		code, out, _ := runCLI(t, "", append(strings.Fields(name), "--help")...)
		if code != 0 || strings.Count(out, "Usage: runmill "+name) != 1 {
			t.Errorf("%s --help: exit %d, want the usage once in %q", name, code, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{nil, 2, ""},
		{[]string{"frobnicate"}, 2, "RM-USAGE-001: unknown command"},
		{[]string{"manifest"}, 2, "missing required flag(s) --repo, --base, --candidate"},
		{[]string{"manifest", "--repo"}, 2, "flag needs an argument"},
		{[]string{"manifest", "--nope"}, 2, "flag provided but not defined"},
		{[]string{"manifest", "--repo", ".", "--base", "a", "--candidate", "b", "extra"}, 2, "unexpected argument"},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.err) {
			t.Errorf("runmill %v: exit %d stderr %q, want exit %d containing %q", tc.args, code, errOut, tc.code, tc.err)
		}
	}
}

func TestManifestCommand(t *testing.T) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: go test ./... && mvn verify\n")
	r.Write("go.mod", "module example.com/m\n")
	r.Write("go.work", "go 1.22\n\nuse .\n")
	base := r.Commit("base")
	r.Checkout("pr", true)
	r.Write(".runmill/checks.yaml", "checks: []\n")
	cand := r.Commit("drop the check")

	code, out, errOut := runCLI(t, "unit\nghost\n", "manifest", "--repo", r.Dir, "--base", base, "--candidate", cand,
		"--agent-proposals", "-", "--github-contexts", "ci / build, lint")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m struct {
		ReadFrom string `json:"read_from"`
		Checks   []struct {
			ID      string   `json:"id"`
			Sources []string `json:"sources"`
		} `json:"checks"`
		Ignored []struct{ ID string } `json:"ignored_proposals"`
		Harness []struct {
			CheckID string          `json:"check_id"`
			Harness *harness.Record `json:"harness"`
		} `json:"harness"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if m.ReadFrom != "base-ref" || len(m.Checks) != 3 || m.Checks[2].ID != "unit" || len(m.Ignored) != 1 {
		t.Fatalf("unexpected manifest: %s", out)
	}
	// Issue 25: each runnable check's resolved harness, and what runmill
	// could not resolve.
	if len(m.Harness) != 1 || m.Harness[0].CheckID != "unit" || len(m.Harness[0].Harness.Files) != 1 || m.Harness[0].Harness.Files[0].Path != "go.work" ||
		len(m.Harness[0].Harness.Unpinned) != 1 || m.Harness[0].Harness.Unpinned[0].Part != "mvn verify" {
		t.Fatalf("unexpected harness: %s", out)
	}
	if errOut != "" {
		t.Fatalf("stderr not empty on success: %q", errOut)
	}

	// Exit codes of DESIGN.md: 1 for RM-VERIFY-004, 2 for operator errors.
	r.Checkout("main", false)
	r.Checkout("broken", true)
	r.Write(".runmill/checks.yaml", "checks: [\n")
	broken := r.Commit("broken policy at base")
	code, out, errOut = runCLI(t, "", "manifest", "--repo", r.Dir, "--base", broken, "--candidate", broken)
	if code != 1 || out != "" || !strings.Contains(errOut, "RM-VERIFY-004") || !strings.Contains(errOut, ".runmill/checks.yaml@") {
		t.Fatalf("broken manifest: exit %d stdout %q stderr %q", code, out, errOut)
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte("autonomy: continuous\nverification: {fail_on_skipped_check: false}\n"), 0o644)
	code, _, errOut = runCLI(t, "", "manifest", "--repo", r.Dir, "--base", base, "--candidate", cand, "--policy", pol)
	if code != 2 || !strings.Contains(errOut, "RM-POLICY-001") || !strings.Contains(errOut, pol+":2") {
		t.Fatalf("bad operator policy: exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "manifest", "--repo", r.Dir, "--base", "nope", "--candidate", cand)
	if code != 2 || !strings.Contains(errOut, "RM-GIT-001") {
		t.Fatalf("missing base: exit %d stderr %q", code, errOut)
	}
}
