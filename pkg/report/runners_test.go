package report_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/pkg/report"
)

// tool finds the first of names that runs with args; without one the test
// skips, or fails under CI=true (scripts/setup.sh installs them).
func tool(t *testing.T, args []string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if exec.Command(n, args...).Run() == nil {
			return n
		}
	}
	testreq.Need(t, false, "none of %v runs %v (scripts/setup.sh installs them)", names, args)
	return ""
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// failedMessages parses a JUnit report a real runner wrote and returns
// each failed test's message by id.
func failedMessages(t *testing.T, path string, id report.Identity) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the runner wrote no report: %v", err)
	}
	defer f.Close()
	inv, err := report.Parse(f, report.JUnit, report.Options{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, x := range inv.Tests {
		if x.Status == report.Failed {
			out[string(x.ID)] = x.Message
		}
	}
	return out
}

// Issue 27: a failed test's message says its cause, from what the real
// runner wrote. libtest's JUnit formatter (as runmill init's cargo template
// runs it) gives a panicking test an empty <failure> and the panic in the
// test's <system-out>, beside what the test printed first; pytest gives a
// test module that fails to import message="collection failure" and the
// error in the element's text.
func TestJUnitMessagesFromRealRunners(t *testing.T) {
	t.Run("cargo test panic", func(t *testing.T) {
		cargo := tool(t, []string{"--version"}, "cargo")
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"Cargo.toml": "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			"src/lib.rs": "pub fn add(a: u64, b: u64) -> u64 { a + b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n" +
				"    #[test]\n    fn adds() { assert_eq!(add(2, 2), 4); }\n" +
				"    #[test]\n    fn adds_wrong() {\n        eprintln!(\"warning: using the slow path\");\n        assert_eq!(add(2, 2), 5, \"two and two\");\n    }\n}\n",
		})
		cmd := exec.Command(cargo, "test", "--offline", "--tests", "--", "-Z", "unstable-options", "--format", "junit")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "RUSTC_BOOTSTRAP=1", "CARGO_TARGET_DIR="+filepath.Join(dir, "target"))
		out, _ := cmd.Output() // exit 101: a test failed
		p := filepath.Join(dir, "cargo.xml")
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		got := failedMessages(t, p, report.IdentityDefault)
		want := "panicked at src/lib.rs:11:9: assertion `left == right` failed: two and two"
		if len(got) != 1 || got["tests::adds_wrong"] != want {
			t.Fatalf("failed tests %q, want tests::adds_wrong with %q; the report:\n%s", got, want, out)
		}
	})
	t.Run("pytest collection failure", func(t *testing.T) {
		py := tool(t, []string{"-m", "pytest", "--version"}, "python3", "/usr/bin/python3")
		dir := t.TempDir()
		// A src/ layout pytest is not told about: the project's own
		// package is not importable.
		writeFiles(t, dir, map[string]string{
			"src/calc/__init__.py": "def add(a, b):\n    return a + b\n",
			"tests/test_calc.py":   "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
		})
		cmd := exec.Command(py, "-m", "pytest", "-p", "no:cacheprovider", "--junitxml=pytest.xml")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		_ = cmd.Run() // exit 2: interrupted by the collection error
		got := failedMessages(t, filepath.Join(dir, "pytest.xml"), report.IdentityDefault)
		want := "collection failure: ModuleNotFoundError: No module named 'calc'"
		if len(got) != 1 || got["tests.test_calc"] != want {
			t.Fatalf("failed tests %q, want tests.test_calc with %q", got, want)
		}
	})
}
