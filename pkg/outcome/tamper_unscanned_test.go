package outcome_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/outcome"
)

// TestFindTamperFailsClosed: test code the scan cannot read as written —
// longer than its cap, a symbolic link leaving the checkout, not a regular
// file — is an "unscanned" tamper fact (a failure), never a clean file;
// what is not test code, or not there, costs nothing.
func TestFindTamperFailsClosed(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "conftest.py")
	for name, body := range map[string]string{
		"tests/conftest.py":  "import pytest\n" + strings.Repeat("# padding\n", 20),
		"tests/test_ok.py":   "def test_ok():\n    pass\n",
		"src/app.py":         strings.Repeat("x = 1\n", 100),
		"tests/fixtures/a.t": "ok\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("import atexit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "tests/sub_test.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "tests/test_dir.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{"tests/conftest.py", "tests/test_ok.py", "src/app.py", "tests/fixtures/a.t",
		"tests/sub_test.py", "tests/test_dir.py", "tests/test_gone.py"}
	rep, err := outcome.FindTamper(root, files, outcome.TamperOptions{MaxFileBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Tamper {
		got[f.File] = f.Rule + ": " + f.Code
	}
	for file, want := range map[string]string{
		"tests/conftest.py": "longer than the 100-byte cap",
		"tests/sub_test.py": "cannot be read inside the checkout",
		"tests/test_dir.py": "not a regular file",
	} {
		if !strings.HasPrefix(got[file], outcome.TamperUnscanned+": ") || !strings.Contains(got[file], want) {
			t.Errorf("%s: %q, want unscanned: …%s…", file, got[file], want)
		}
	}
	if len(got) != 3 || rep.Files != 1 {
		t.Errorf("facts %v, %d files scanned; want the three unscanned and test_ok.py scanned", got, rep.Files)
	}
}
