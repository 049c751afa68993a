// Package sandbox runs one command in a locked-down containerd task and
// reports what happened: exit code, timeout, OOM kill, duration, and the
// SHA-256 and size of everything it printed.
//
// A task gets an empty read-only root with the host toolchain (or an OCI
// image) bound read-only, the checkout at the fixed CheckoutPath and the
// caller's other read-only paths (git objects, prepared dependencies), all
// bound recursively read-only (a view with an upper layer copy-on-write
// over its read-only source, writes landing in the caller's discarded
// layer), exactly one writable report file, a private size-limited tmpfs
// TMPDIR, a network
// namespace with nothing but loopback, a non-root user without any
// capability, no_new_privs, containerd's default seccomp profile, pids,
// memory, CPU and open-file limits, an environment built only from what the
// caller passes, and a wall-clock limit enforced by killing every process.
// Probe measures those guarantees with a canary task; a missing one is an
// RM-SANDBOX-002 error, never weaker running.
//
// The package knows nothing about git, policies or reports. docs/sandbox.md
// describes the guarantees, the probe and the limits.
package sandbox
