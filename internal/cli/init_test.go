package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/initpolicy"
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
		}, func(dir, op string) []string { return []string{"init", "--repo", dir} }, "/.runmill/checks.yaml: file exists"},
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

// TestInitChecksDependencies: a committed npm project whose source checkout
// has no install (no npm ci) gets its files written, and init fails with
// RM-VERIFY-005 saying what to do; with no commit yet it says it could not
// check.
func TestInitChecksDependencies(t *testing.T) {
	r := gittest.New(t)
	r.Write("package.json", `{"name":"x","version":"1.0.0","scripts":{"test":"node --test"},"devDependencies":{"left-pad":"1.3.0"}}`+"\n")
	r.Write("package-lock.json", `{"name":"x","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"x","version":"1.0.0","devDependencies":{"left-pad":"1.3.0"}},"node_modules/left-pad":{"version":"1.3.0","resolved":"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz","integrity":"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQbjfZuqOUcxrwnvAxOK2Nyb4WDe48Hx8Ke3ls7KkDeIyEXEA==","dev":true}}}`+"\n")
	r.Write(".gitignore", "node_modules/\n")

	code, _, errOut := runCLI(t, "", "init", "--repo", r.Dir, "--operator-policy-out", filepath.Join(t.TempDir(), "op.yaml"))
	if code != 0 || !strings.Contains(errOut, "dependencies npm: not checked, the repository has no commit yet") {
		t.Fatalf("unborn repository: exit %d: %s", code, errOut)
	}
	os.RemoveAll(filepath.Join(r.Dir, ".runmill"))
	r.Commit("the project")
	code, _, errOut = runCLI(t, "", "init", "--repo", r.Dir, "--operator-policy-out", filepath.Join(t.TempDir(), "op.yaml"))
	if code != 1 || !strings.Contains(errOut, "RM-VERIFY-005") || !strings.Contains(errOut, "npm ci") {
		t.Fatalf("no install: exit %d, want 1 with RM-VERIFY-005 and the fix: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, ".runmill", "checks.yaml")); err != nil {
		t.Fatalf("the policy was not written: %v", err)
	}
}

// TestInitPytestUnusable: init looks python3 up as the sandbox will (here
// binds of only a real virtual environment without pytest) and, since
// `python3 -m pytest` cannot run there, does not write the pytest check.
func TestInitPytestUnusable(t *testing.T) {
	root := venvWithoutPytest(t)
	defer func(f func() initpolicy.Host) { initHost = f }(initHost)
	initHost = func() initpolicy.Host {
		return initpolicy.LocalHost{PATH: filepath.Join(root, "bin") + ":/usr/bin:/bin", Getenv: func(string) string { return "" }, HostPaths: []string{root}}
	}
	t.Run("with another check", func(t *testing.T) {
		dir := goRepo(t)
		os.WriteFile(filepath.Join(dir, "pytest.ini"), []byte("[pytest]\n"), 0o644)
		code, _, errOut := runCLI(t, "", "init", "--repo", dir)
		b, err := os.ReadFile(filepath.Join(dir, ".runmill", "checks.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := policy.ParseRepository(b, "checks.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if code != 1 || !strings.Contains(errOut, "RM-INIT-003") || !strings.Contains(errOut, "No module named pytest") ||
			!strings.Contains(errOut, "checks: go\n") || len(doc.Value.Checks) != 1 || doc.Value.Checks[0].ID != "go" ||
			!strings.Contains(string(b), "#   run: PYTHONDONTWRITEBYTECODE=1 python3 -m pytest") {
			t.Fatalf("exit %d, %d checks written\nstderr:\n%s\nchecks.yaml:\n%s", code, len(doc.Value.Checks), errOut, b)
		}
	})
	t.Run("alone", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "pytest.ini"), []byte("[pytest]\n"), 0o644)
		code, out, errOut := runCLI(t, "", "init", "--repo", dir)
		if _, err := os.Stat(filepath.Join(dir, ".runmill")); code != 2 || out != "" || !os.IsNotExist(err) ||
			!strings.Contains(errOut, "RM-INIT-002") || !strings.Contains(errOut, "install pytest for "+filepath.Join(root, "bin", "python3")) {
			t.Fatalf("exit %d (.runmill: %v) stdout %q stderr %s", code, err, out, errOut)
		}
	})
}

// TestInitPytestUsable: with the machine's own binds, init writes the
// pytest check exactly when the sandbox's python3 runs pytest.
func TestInitPytestUsable(t *testing.T) {
	has := systemHasPytest(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pytest.ini"), []byte("[pytest]\n"), 0o644)
	code, _, errOut := runCLI(t, "", "init", "--repo", dir)
	if has && (code != 0 || !strings.Contains(errOut, "checks: pytest")) || !has && code != 2 {
		t.Fatalf("pytest importable: %v; exit %d stderr %s", has, code, errOut)
	}
}

// TestInitOperatorOnly: with --operator-policy-out, a repository that
// already has .runmill/checks.yaml keeps it, and init writes only the
// operator template (issue 14), which parses.
func TestInitOperatorOnly(t *testing.T) {
	dir := goRepo(t)
	checks := "checks:\n  - id: go\n    run: go test -json ./... > reports/go.json\n    report: {path: reports/go.json, format: go-json}\n    timeout: 5m\n    dependencies: go-modules\n"
	os.MkdirAll(filepath.Join(dir, ".runmill"), 0o755)
	os.WriteFile(filepath.Join(dir, ".runmill", "checks.yaml"), []byte(checks), 0o644)
	op := filepath.Join(t.TempDir(), "policy.yaml")
	code, out, errOut := runCLI(t, "", "init", "--repo", dir, "--operator-policy-out", op)
	if code != 0 || out != "" || !strings.Contains(errOut, "exists and is kept; wrote only the operator policy template") ||
		!strings.Contains(errOut, "runmill doctor --check checks --policy "+op) {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".runmill", "checks.yaml")); string(b) != checks {
		t.Errorf("checks.yaml changed:\n%s", b)
	}
	b, err := os.ReadFile(op)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.ParseOperator(b, op); err != nil {
		t.Errorf("the template does not parse: %v\n%s", err, b)
	}
	// An invalid existing checks.yaml is the repository's error, not a
	// template from nothing.
	os.WriteFile(filepath.Join(dir, ".runmill", "checks.yaml"), []byte("mine\n"), 0o644)
	code, _, errOut = runCLI(t, "", "init", "--repo", dir, "--operator-policy-out", filepath.Join(t.TempDir(), "p.yaml"))
	if code == 0 || !strings.Contains(errOut, "RM-VERIFY-004") {
		t.Errorf("invalid checks.yaml: exit %d stderr %q", code, errOut)
	}
}
