package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/sandbox"
)

// TestPrivateDaemonBinary: the private containerd the suite runs against is
// the binary chosen ($RUNMILL_CONTAINERD_BIN, else the distribution's), and
// its tasks' shim is the one beside that binary, not another on the PATH:
// what makes the suite's second run a run against containerd 2.x.
func TestPrivateDaemonBinary(t *testing.T) {
	s := needSandbox(t)
	if os.Getenv("RUNMILL_CONTAINERD_ADDRESS") != "" {
		t.Skip("RUNMILL_CONTAINERD_ADDRESS names the containerd; no private daemon to check")
	}
	bin, path, err := sandbox.DaemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=" + path}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out)) // containerd <module> <version> [<revision>]
	if len(fields) < 3 {
		t.Fatalf("%s --version: %q", bin, out)
	}
	rep, err := s.Probe(context.Background(), sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Runtime.Private || rep.Runtime.Containerd != fields[2] {
		t.Fatalf("the sandbox runs on containerd %q (private %v), want a private %s (%s)", rep.Runtime.Containerd, rep.Runtime.Private, fields[2], bin)
	}
	// Warm keeps the shared shim running; it names its daemon's socket.
	if err := s.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(bin), "containerd-shim-runc-v2")
	if os.Getenv(sandbox.ContainerdBinEnv) == "" {
		if want, err = exec.LookPath("containerd-shim-runc-v2"); err != nil {
			t.Fatal(err)
		}
	}
	var shims []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, _ := os.ReadFile(p)
		if !bytes.Contains(b, []byte("\x00-address\x00"+s.Address()+"\x00")) {
			continue
		}
		exe, err := os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
		if err != nil {
			continue // exited meanwhile
		}
		shims = append(shims, exe)
		if exe != want {
			t.Errorf("a shim of %s runs %s, want %s", s.Address(), exe, want)
		}
	}
	if len(shims) == 0 {
		t.Fatalf("no shim serves %s after Warm", s.Address())
	}
	t.Logf("containerd %s (%s), shims %v", fields[2], bin, shims)
}
