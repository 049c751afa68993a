package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/policy"
)

func goRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInitWritesBothFiles(t *testing.T) {
	dir := goRepo(t)
	code, out, errOut := runCLI(t, "", "init", "--repo", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".runmill", "checks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.ParseRepository(b, "checks.yaml"); err != nil {
		t.Fatalf("checks.yaml: %v", err)
	}
	// Without --operator-policy-out the template is stdout, and only it.
	if _, err := policy.ParseOperator([]byte(out), "stdout"); err != nil || !strings.Contains(out, "fail_on_skipped_check: false") {
		t.Fatalf("stdout is not the operator template (%v):\n%s", err, out)
	}
	if !strings.Contains(errOut, "checks: go") {
		t.Errorf("stderr does not say what was written: %s", errOut)
	}
}

func TestInitRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, op string)
		args  func(dir, op string) []string
		want  string
	}{
		{"existing checks.yaml", func(t *testing.T, dir, op string) {
			os.MkdirAll(filepath.Join(dir, ".runmill"), 0o755)
			os.WriteFile(filepath.Join(dir, ".runmill", "checks.yaml"), []byte("mine\n"), 0o644)
		}, nil, "/.runmill/checks.yaml: file exists"},
		{"existing operator policy", func(t *testing.T, dir, op string) {
			os.WriteFile(op, []byte("mine\n"), 0o644)
		}, nil, "RM-INIT-001: "},
		{"a symlinked .runmill", func(t *testing.T, dir, op string) {
			os.Symlink(t.TempDir(), filepath.Join(dir, ".runmill"))
		}, nil, "RM-INIT-001: "},
		{"operator policy inside the repository", nil, func(dir, op string) []string {
			return []string{"init", "--repo", dir, "--operator-policy-out", filepath.Join(dir, "policy.yaml")}
		}, "RM-USAGE-001: "},
		{"nothing recognised", func(t *testing.T, dir, op string) {
			os.Remove(filepath.Join(dir, "go.mod"))
			os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`), 0o644)
		}, nil, "RM-INIT-002: "},
		{"not a directory", nil, func(dir, op string) []string {
			return []string{"init", "--repo", filepath.Join(dir, "go.mod")}
		}, "RM-USAGE-001: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := goRepo(t)
			op := filepath.Join(t.TempDir(), "policy.yaml")
			if tc.setup != nil {
				tc.setup(t, dir, op)
			}
			before := snapshot(t, dir, op)
			args := []string{"init", "--repo", dir, "--operator-policy-out", op}
			if tc.args != nil {
				args = tc.args(dir, op)
			}
			code, out, errOut := runCLI(t, "", args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "(fix: ") {
				t.Fatalf("exit %d stdout %q stderr %q, want exit 2 with %q and a fix", code, out, errOut, tc.want)
			}
			// Nothing was written: init writes both files or neither.
			if after := snapshot(t, dir, op); after != before {
				t.Fatalf("init changed files although it refused:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// snapshot lists the files under dir and op with their contents.
func snapshot(t *testing.T, dir, op string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			c, _ := os.ReadFile(p)
			b.WriteString(p + "=" + string(c) + ";")
		}
		return nil
	})
	c, err := os.ReadFile(op)
	b.WriteString(op + "=" + string(c) + "," + fmt.Sprint(os.IsNotExist(err)))
	return b.String()
}
