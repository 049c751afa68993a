#!/usr/bin/env bash
# Step "Preflight" of action.yml: says clearly, before anything runs, when
# this runner cannot run runmill (RM-ACTIONS-002, docs/errors.md).
set -euo pipefail
fail() {
	echo "::error title=runmill preflight (RM-ACTIONS-002)::$*"
	exit 1
}
if [ "${RUNNER_OS:-Linux}" != Linux ]; then
	fail "runmill runs checks in containerd tasks and needs a Linux runner; this one is ${RUNNER_OS}: use runs-on: ubuntu-24.04"
fi
if ! sudo -n true 2>/dev/null; then
	fail "runmill runs under passwordless sudo to reach containerd, and 'sudo -n true' failed for user $(id -un): on a self-hosted runner allow it in sudoers (GitHub-hosted runners allow it)"
fi
addr=${INPUT_CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}
if sudo -n test -S "$addr"; then
	echo "runmill: containerd answers at $addr"
elif [ -n "${INPUT_CONTAINERD_ADDRESS:-}" ]; then
	fail "containerd-address is $addr, but no socket is there: start containerd at that address or leave the input empty"
elif sudo -n sh -c 'command -v containerd && command -v runc' >/dev/null 2>&1; then
	echo "::notice title=runmill preflight::no containerd socket at $addr: runmill will start a private containerd for this run"
else
	fail "no containerd socket at $addr and no containerd or runc binary: on a self-hosted runner run 'sudo apt-get install -y containerd runc', or set containerd-address"
fi
