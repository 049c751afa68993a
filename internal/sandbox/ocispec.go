package sandbox

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cfsPeriod is the CFS period in microseconds; the quota is CPUs × period.
const cfsPeriod = 100_000

// ociSpec builds the runtime spec of one task. It starts from containerd's
// default (masked and read-only /proc paths, device cgroup deny-all, the
// standard /proc, /dev and /sys mounts, private pid/ipc/uts/mount/network
// namespaces) and tightens everything a check does not need.
//
// The network namespace has no path, so runc creates an empty one with only
// a loopback interface (brought up by runc); no CNI ever adds another.
func ociSpec(ctx context.Context, p *plan, rootfs string, etc []bind, rro bool) (*specs.Spec, error) {
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: p.ID})
	if err != nil {
		return nil, fmt.Errorf("generating default spec: %w", err)
	}
	s.Root = &specs.Root{Path: rootfs, Readonly: true}
	s.Hostname = "sandbox"

	proc := s.Process
	proc.Terminal = false
	proc.Args = []string{"/bin/sh", "-c", p.Command}
	proc.Cwd = p.Dir
	proc.Env = p.env
	proc.User = specs.User{UID: p.uid, GID: p.gid}
	// An empty (not nil) set: runc drops every capability from every set,
	// including the bounding set, so not even a setuid binary regains one.
	proc.Capabilities = &specs.LinuxCapabilities{
		Bounding: []string{}, Effective: []string{}, Permitted: []string{},
		Inheritable: []string{}, Ambient: []string{},
	}
	proc.NoNewPrivileges = true
	proc.Rlimits = []specs.POSIXRlimit{
		{Type: "RLIMIT_NOFILE", Hard: p.Limits.NoFile, Soft: p.Limits.NoFile},
		{Type: "RLIMIT_FSIZE", Hard: p.Limits.FileBytes, Soft: p.Limits.FileBytes},
		{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
	}

	// containerd's /run tmpfs is dropped: nothing in a check needs it and
	// every writable place is one more to account for.
	s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run" })
	// The task's own cgroup, read-only, so runtimes size themselves to the
	// limits (Go's GOMAXPROCS, Node's heap) and the probe can read them.
	s.Mounts = append(s.Mounts, specs.Mount{
		Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"ro", "nosuid", "noexec", "nodev"},
	})

	roOpts := []string{"rbind", "ro", "nosuid", "nodev"}
	if rro {
		// Recursive read-only (mount_setattr(2) with AT_RECURSIVE): without
		// it a submount of a bound path would stay writable.
		roOpts = append(roOpts, "rro")
	}
	var layered []specs.Mount
	layered = append(layered, specs.Mount{
		Destination: TmpPath, Type: "tmpfs", Source: "tmpfs",
		// exec is allowed: go test builds and runs its test binaries here.
		Options: []string{"nosuid", "nodev", "mode=0700",
			fmt.Sprintf("size=%d", p.Limits.TmpBytes),
			fmt.Sprintf("uid=%d", p.uid), fmt.Sprintf("gid=%d", p.gid)},
	})
	for _, b := range p.hostBinds {
		layered = append(layered, bindMount(b.Source, b.Destination, roOpts))
	}
	for _, b := range etc {
		layered = append(layered, bindMount(b.Source, b.Destination, []string{"bind", "ro", "nosuid", "nodev", "noexec"}))
	}
	for _, b := range p.roBinds {
		layered = append(layered, bindMount(b.Source, b.Destination, roOpts))
	}
	for _, o := range p.overlays {
		// Mounted by runc inside the task's mount namespace, before
		// pivot_root, so the host paths resolve as binds do and nothing
		// is mounted on the host. Writes land in Upper only.
		layered = append(layered, specs.Mount{Destination: o.Destination, Type: "overlay", Source: "overlay",
			Options: []string{"nosuid", "nodev", "lowerdir=" + o.Lower, "upperdir=" + o.Upper, "workdir=" + o.Work}})
	}
	if m, ok := p.goCacheMount(); ok {
		layered = append(layered, m)
	}
	if p.report.Source != "" {
		layered = append(layered, bindMount(p.report.Source, p.report.Destination, []string{"bind", "rw", "nosuid", "nodev", "noexec"}))
	}
	// Parents before children: a bind below /tmp must land inside the
	// tmpfs, the report file on top of the read-only checkout.
	slices.SortStableFunc(layered, func(a, b specs.Mount) int { return depth(a.Destination) - depth(b.Destination) })
	s.Mounts = append(s.Mounts, layered...)

	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	pids := p.Limits.Pids
	mem := p.Limits.MemoryBytes
	quota := int64(math.Ceil(p.Limits.CPUs * cfsPeriod))
	period := uint64(cfsPeriod)
	// Swap equal to the limit means memory+swap = limit: no swap on top
	// (runc maps this to memory.swap.max = 0 on cgroup v2).
	swap := mem
	s.Linux.Resources.Pids = &specs.LinuxPids{Limit: &pids}
	s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &mem, Swap: &swap}
	s.Linux.Resources.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}

	// containerd's default profile, computed from the (empty) capability
	// sets above, so it must come after them. Restricted to the native
	// architecture: the i386 and x32 syscall ABIs the default also admits
	// are attack surface no check needs, and compiling the filter for three
	// architectures costs runc init about 12 ms of CPU per task.
	s.Linux.Seccomp = seccomp.DefaultProfile(s)
	s.Linux.Seccomp.Architectures = nil
	return s, nil
}

func bindMount(src, dst string, opts []string) specs.Mount {
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: slices.Clone(opts)}
}

func depth(p string) int { return strings.Count(strings.TrimSuffix(p, "/"), "/") }
