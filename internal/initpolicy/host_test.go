package initpolicy

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"
)

// TestLocalHostLocate lays out real toolchains in a temp dir (outside the
// sandbox's default binds) and looks them up as init does.
func TestLocalHostLocate(t *testing.T) {
	root := t.TempDir()
	exe := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cargoHome, rustupHome := filepath.Join(root, "cargo"), filepath.Join(root, "rustup")
	exe(filepath.Join(cargoHome, "bin", "rustup"))
	if err := os.Symlink("rustup", filepath.Join(cargoHome, "bin", "cargo")); err != nil {
		t.Fatal(err)
	}
	nodeRoot := filepath.Join(root, "opt", "node")
	exe(filepath.Join(nodeRoot, "bin", "rmnode"))
	exe(filepath.Join(root, "bin-noexec", "rmpy"))
	os.Chmod(filepath.Join(root, "bin-noexec", "rmpy"), 0o644) // not executable: not a tool

	env := map[string]string{"HOME": root, "RUSTUP_HOME": rustupHome}
	h := LocalHost{
		PATH:   filepath.Join(root, "bin-noexec") + ":" + filepath.Join(cargoHome, "bin") + ":" + filepath.Join(nodeRoot, "bin") + ":/usr/bin:/bin",
		Getenv: func(k string) string { return env[k] },
	}
	for _, tc := range []struct {
		tool string
		want Toolchain
	}{
		{"cargo", Toolchain{Tool: "cargo", Host: filepath.Join(cargoHome, "bin", "cargo"), Binds: []string{cargoHome, rustupHome}, Env: []string{"RUSTUP_HOME=" + rustupHome}}},
		{"rmnode", Toolchain{Tool: "rmnode", Host: filepath.Join(nodeRoot, "bin", "rmnode"), Binds: []string{nodeRoot}}},
		{"sh", Toolchain{Tool: "sh", Visible: "/usr/bin/sh"}},
		{"runmill-no-such-tool", Toolchain{Tool: "runmill-no-such-tool"}},
		{"rmpy", Toolchain{Tool: "rmpy"}},
	} {
		got := h.Locate(tc.tool)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Locate(%s) = %+v, want %+v", tc.tool, got, tc.want)
		}
	}
	// Without RUSTUP_HOME, rustup's default is $HOME/.rustup.
	delete(env, "RUSTUP_HOME")
	if got := h.Locate("cargo"); got.Env[0] != "RUSTUP_HOME="+filepath.Join(root, ".rustup") {
		t.Errorf("default rustup home: %+v", got)
	}
	if !h.Present("/usr") || h.Present(filepath.Join(root, "nope")) {
		t.Error("Present")
	}
}

// systemPython3 is the interpreter the sandbox sees by default; with CI=true
// it must exist (scripts/setup.sh installs python3-pytest, which brings it).
func systemPython3(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/bin/python3"} {
		if _, ok := executable(p); ok {
			return p
		}
	}
	testreq.Need(t, false, "no python3 under /usr/bin (scripts/setup.sh installs python3-pytest)")
	return ""
}

// venv lays out a real virtual environment by hand (what `python3 -m venv
// --without-pip` writes, without needing Debian's python3-venv): CPython
// reads pyvenv.cfg next to its executable and, with system site packages
// off, cannot import the system's pytest. The directories are world-readable
// so the sandbox's user can run it too.
func venv(t *testing.T, python string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "venv")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for d := root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	cfg := "home = " + filepath.Dir(real) + "\ninclude-system-site-packages = false\n"
	if err := os.WriteFile(filepath.Join(root, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestLocalHostPytest: init writes the pytest check only when `python3 -m
// pytest` runs with the interpreter the sandbox's PATH resolves to.
func TestLocalHostPytest(t *testing.T) {
	sys := systemPython3(t)
	t.Run("the sandbox's python3 has no pytest", func(t *testing.T) {
		// The operator's host_paths bind only the venv: its python3 is the
		// one the task's PATH finds, and it cannot import pytest.
		root := venv(t, sys)
		h := LocalHost{PATH: filepath.Join(root, "bin") + ":/usr/bin:/bin", Getenv: func(string) string { return "" }, HostPaths: []string{root}}
		got := h.Locate("python3")
		interp := filepath.Join(root, "bin", "python3")
		if got.Visible != interp || !strings.Contains(got.Unusable, "No module named pytest") ||
			!strings.Contains(got.Fix, "install pytest for "+interp) {
			t.Fatalf("Locate(python3) = %+v", got)
		}
		if err := ProbePytest(interp, "/usr/bin:/bin"); err == nil {
			t.Fatal("ProbePytest passed for an interpreter without pytest")
		}
	})
	t.Run("the default python3", func(t *testing.T) {
		h := LocalHost{PATH: os.Getenv("PATH"), Getenv: os.Getenv}
		got := h.Locate("python3")
		if got.Visible != sys {
			t.Fatalf("Locate(python3).Visible = %q, want %s (the sandbox's PATH starts with the standard directories)", got.Visible, sys)
		}
		// Judged both ways: the interpreter itself says whether pytest
		// imports, and Locate must agree.
		hasPytest := exec.Command(sys, "-c", "import pytest").Run() == nil
		if hasPytest != (got.Unusable == "") {
			t.Fatalf("%s imports pytest: %v; Locate says Unusable %q", sys, hasPytest, got.Unusable)
		}
		if !hasPytest {
			if testreq.CI() {
				t.Fatalf("CI=true and %s has no pytest (scripts/setup.sh installs python3-pytest)", sys)
			}
			if !strings.Contains(got.Fix, "apt-get install python3-pytest") {
				t.Errorf("fix %q", got.Fix)
			}
		}
	})
}
