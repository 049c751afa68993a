package initpolicy

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
