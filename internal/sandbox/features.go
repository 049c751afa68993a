package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// runtimeFeatures is what runmill found out about the kernel and runc
// before running anything. It decides which options are requested; whether
// they took effect is the probe's job.
type runtimeFeatures struct {
	Kernel string // uname -r
	Runc   string // first line of runc --version, "" when runc is not on PATH
	// RecursiveReadOnly: the runtime accepts the "rro" mount option (runc
	// ≥ 1.1 lists it in `runc features`) and the kernel has mount_setattr(2)
	// (≥ 5.12).
	RecursiveReadOnly bool
	CgroupV2          bool
}

// detectFeatures asks the kernel and the runc a private daemon would use. A
// system containerd may be configured with another runc; the probe then
// measures what that one actually did.
func detectFeatures(ctx context.Context) runtimeFeatures {
	var f runtimeFeatures
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	f.CgroupV2 = cgroupUnified()
	runc, err := lookDaemonPath("runc")
	if err != nil {
		if runc, err = exec.LookPath("runc"); err != nil {
			return f
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// runc is the operator's binary; it still gets no token or key.
	runcCmd := func(arg string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, runc, arg)
		cmd.Env, cmd.Dir = []string{"PATH=" + os.Getenv("PATH")}, "/"
		cmd.WaitDelay = time.Second // a child holding the pipe must not outlast ctx
		return cmd
	}
	if out, err := runcCmd("--version").Output(); err == nil {
		f.Runc, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	out, err := runcCmd("features").Output()
	if err != nil {
		return f // runc < 1.1 has no features command, and no rro either
	}
	var feat struct {
		MountOptions []string `json:"mountOptions"`
	}
	if json.NewDecoder(bytes.NewReader(out)).Decode(&feat) != nil {
		return f
	}
	f.RecursiveReadOnly = slices.Contains(feat.MountOptions, "rro") && kernelAtLeast(f.Kernel, 5, 12)
	return f
}

// kernelAtLeast compares the leading major.minor of a kernel release.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	// The minor may carry a suffix ("12-rc1").
	minor2 := parts[1]
	if i := strings.IndexFunc(minor2, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor2 = minor2[:i]
	}
	maj, err1 := strconv.Atoi(parts[0])
	min, err2 := strconv.Atoi(minor2)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && min >= minor
}
