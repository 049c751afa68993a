package rmerr

// Codes of the check sandbox (internal/sandbox). A check that cannot be run
// with every promised guarantee is never run with fewer: it fails with one of
// these instead.
const (
	// SandboxUnavailable: no containerd answers and a private one cannot be
	// started (not root, containerd or runc not installed, or it failed to come up),
	// or the run's parent cgroup cannot be made.
	SandboxUnavailable Code = "RM-SANDBOX-001"
	// SandboxGuarantee: the probe measured that a promised isolation guarantee
	// (network, read-only mounts, user, capabilities, limits, environment) is
	// not enforced by this runtime.
	SandboxGuarantee Code = "RM-SANDBOX-002"
	// SandboxSpec: a run was asked for something impossible or unsafe (relative
	// or missing paths, a report file that is not an empty regular file, an
	// environment entry the sandbox owns, a zero limit).
	SandboxSpec Code = "RM-SANDBOX-003"
	// SandboxRuntime: containerd or the runtime failed to create, start, wait
	// for or delete a task.
	SandboxRuntime Code = "RM-SANDBOX-004"
	// SandboxImage: an OCI image tarball cannot be read, imported or unpacked.
	SandboxImage Code = "RM-SANDBOX-005"
	// SandboxCleanup: a leftover task, container or directory of an earlier
	// run could not be removed.
	SandboxCleanup Code = "RM-SANDBOX-006"
)
