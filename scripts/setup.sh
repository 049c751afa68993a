#!/usr/bin/env bash
# Shared set-up for scripts/test.sh and scripts/demo.sh on a fresh Debian or
# Ubuntu machine: checks Go and git, and installs containerd and runc from the
# distribution when they are missing (the sandbox runs every check in a
# containerd task; the test harness starts a private daemon itself).
set -euo pipefail

need_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH="/usr/local/go/bin:$PATH"
		else
			echo "setup: Go 1.26 is required (https://go.dev/doc/install); it is not on PATH" >&2
			exit 2
		fi
	fi
}

install_pkgs() {
	local missing=()
	command -v git >/dev/null 2>&1 || missing+=(git)
	command -v containerd >/dev/null 2>&1 || missing+=(containerd)
	command -v runc >/dev/null 2>&1 || missing+=(runc)
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
		exit 2
	fi
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${missing[@]}" >/dev/null
}

need_go
install_pkgs
