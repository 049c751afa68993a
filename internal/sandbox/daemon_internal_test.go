package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/pkg/rmerr"
)

func TestParseConfigVersion(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       int
		ok         bool
	}{
		// First lines of `containerd config default`, as each prints them.
		{"containerd 1.6.20 (Debian 12)", "disabled_plugins = []\nimports = []\noom_score = 0\nplugin_dir = \"\"\nrequired_plugins = []\nroot = \"/var/lib/containerd\"\nstate = \"/run/containerd\"\ntemp = \"\"\nversion = 2\n", 2, true},
		{"containerd 2.4.2", "version = 4\nroot = '/var/lib/containerd'\nstate = '/run/containerd'\n", 4, true},
		{"spaces", "  version   =   3  \n", 3, true},
		{"version 1 is not supported", "version = 1\n", 0, false},
		{"no version line", "root = \"/var/lib/containerd\"\n", 0, false},
		{"a plugin's version key is not the file's", "[plugins.x]\n  versions = 7\n", 0, false},
		{"not a number", "version = \"2\"\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseConfigVersion([]byte(tc.toml))
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseConfigVersion = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseConfigVersion(f *testing.F) {
	f.Add([]byte("version = 2\n"))
	f.Add([]byte("version = 4\nroot = '/var/lib/containerd'\n"))
	f.Add([]byte("version=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, ok := parseConfigVersion(b); ok && n < 2 {
			t.Fatalf("accepted version %d", n)
		}
	})
}

// TestContainerdBinEnvRefused: a $RUNMILL_CONTAINERD_BIN that cannot be the
// daemon's binary is RM-SANDBOX-001 naming the variable, never a fallback
// to another containerd.
func TestContainerdBinEnvRefused(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "containerd")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"containerd", "bin/containerd", filepath.Join(dir, "absent"), notExec, dir} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(ContainerdBinEnv, v)
			_, _, err := daemonBinary()
			if rmerr.CodeOf(err) != rmerr.SandboxUnavailable || !strings.Contains(err.Error(), ContainerdBinEnv) {
				t.Fatalf("daemonBinary with %s=%s: %v, want RM-SANDBOX-001 naming the variable", ContainerdBinEnv, v, err)
			}
			if _, err := lookDaemonPath("runc"); err == nil {
				t.Errorf("lookDaemonPath found runc although %s=%s is invalid", ContainerdBinEnv, v)
			}
		})
	}
}

// TestContainerdBinEnvFirst: the chosen binary's directory comes first on
// the daemon's PATH, so the shim beside it is the one found.
func TestContainerdBinEnvFirst(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"containerd", "containerd-shim-runc-v2"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(ContainerdBinEnv, filepath.Join(dir, "containerd"))
	bin, path, err := daemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	if bin != filepath.Join(dir, "containerd") || path != dir+":"+daemonPath {
		t.Errorf("daemonBinary = %s, PATH %s", bin, path)
	}
	if shim, err := lookDaemonPath("containerd-shim-runc-v2"); err != nil || shim != filepath.Join(dir, "containerd-shim-runc-v2") {
		t.Errorf("shim %s, %v; want the one beside the chosen containerd", shim, err)
	}
}

// TestDaemonConfigAccepted: each containerd here (the distribution's on the
// daemon's PATH, and $RUNMILL_CONTAINERD_BIN's, the 2.x the suite's second
// run uses) loads the private daemon's configuration in its own format —
// no migration, no warning — with the private sockets and the disabled
// plugins in effect.
func TestDaemonConfigAccepted(t *testing.T) {
	var bins []string
	t.Setenv(ContainerdBinEnv, os.Getenv(ContainerdBinEnv)) // restored afterwards
	if b := os.Getenv(ContainerdBinEnv); b != "" {
		bins = append(bins, b)
	}
	os.Unsetenv(ContainerdBinEnv)
	if b, err := lookDaemonPath("containerd"); err == nil {
		bins = append(bins, b)
	}
	testreq.Need(t, len(bins) > 0, "no containerd installed on %s", daemonPath)
	for _, bin := range bins {
		t.Run(bin, func(t *testing.T) {
			path := filepath.Dir(bin) + ":" + daemonPath
			version, err := configVersion(context.Background(), bin, path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			address := filepath.Join(dir, "containerd.sock")
			config := filepath.Join(dir, "config.toml")
			if err := os.WriteFile(config, daemonConfig(version, dir, address), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--config", config, "config", "dump")
			cmd.Env, cmd.Dir = []string{"PATH=" + path}, dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			dump, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s config dump: %v\n%s", bin, err, stderr.Bytes())
			}
			if stderr.Len() > 0 {
				t.Errorf("%s warned about the version %d configuration:\n%s", bin, version, stderr.Bytes())
			}
			want := []string{address, address + ".ttrpc", filepath.Join(dir, "root"), "io.containerd.grpc.v1.cri"}
			if version >= 3 {
				want = append(want, "io.containerd.nri.v1.nri", "io.containerd.cri.v1.runtime")
			}
			for _, w := range want {
				if !bytes.Contains(dump, []byte(w)) {
					t.Errorf("%s (config version %d) does not have %q in effect:\n%s", bin, version, w, dump)
				}
			}
			t.Logf("%s: config version %d", bin, version)
		})
	}
}

// TestKeptConfigVersion: the configuration version is asked of the
// executable once and kept with its identity; a binary touched, replaced by
// another version or a kept file that does not parse is asked again, and
// the answer always is the executable's own.
func TestKeptConfigVersion(t *testing.T) {
	dir := t.TempDir()
	bin, asked, kept := filepath.Join(dir, "containerd"), filepath.Join(dir, "asked"), filepath.Join(dir, "config-version")
	install := func(version int) {
		t.Helper()
		script := fmt.Sprintf("#!/bin/sh\necho >> %s\nprintf 'version = %d\\n'\n", asked, version)
		tmp := bin + ".tmp"
		if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, bin); err != nil { // a new inode, as a package upgrade makes
			t.Fatal(err)
		}
	}
	questions := func() int {
		b, _ := os.ReadFile(asked)
		return bytes.Count(b, []byte("\n"))
	}
	install(3)
	for _, step := range []struct {
		name    string
		before  func()
		want    int
		askedTo int // questions so far
	}{
		{"first", func() {}, 3, 1},
		{"kept", func() {}, 3, 1},
		{"kept again", func() {}, 3, 1},
		{"replaced by another version", func() { install(2) }, 2, 2},
		{"kept after the replacement", func() {}, 2, 2},
		{"touched", func() {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(bin, later, later); err != nil {
				t.Fatal(err)
			}
		}, 2, 3},
		{"a kept file that does not parse", func() {
			if err := os.WriteFile(kept, []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 2, 4},
		{"kept once more", func() {}, 2, 4},
		{"a FIFO planted in its place: refused, not waited on", func() {
			os.Remove(kept)
			if err := syscall.Mkfifo(kept, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 2, 5},
		{"kept after the FIFO", func() {}, 2, 5},
	} {
		step.before()
		got, err := keptConfigVersion(context.Background(), bin, daemonPath, kept)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got != step.want || questions() != step.askedTo {
			t.Errorf("%s: version %d after %d questions, want %d after %d", step.name, got, questions(), step.want, step.askedTo)
		}
	}
}
