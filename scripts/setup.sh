#!/usr/bin/env bash
# Shared set-up for scripts/test.sh and scripts/demo.sh on a fresh Debian or
# Ubuntu machine: checks Go, and installs from the distribution every tool a
# test needs under CI=true when it is missing (idempotent: nothing is
# installed, and apt is not touched, when everything is there):
#   git                  the repositories every test builds (git daemon serves
#                        the action tests' git dependencies on loopback)
#   util-linux           unshare and setpriv: the action's Prepare step runs the
#                        package managers confined (essential on Debian, but a
#                        slim image may lack it)
#   containerd, runc     the sandbox runs every check in a containerd task (the
#                        test harness starts a private daemon itself)
#   python3-pytest       the pytest sample (internal/initpolicy) and doctor's
#                        pytest check: `python3 -m pytest` must work for the
#                        python3 the sandbox sees (/usr/bin/python3), not for a
#                        pyenv or virtualenv interpreter on the host's PATH
#   nodejs, npm          node:test and Mocha samples, prepared npm dependencies
#   cargo                the Cargo sample (Debian's cargo brings rustc)
#   librust-semver-dev, librust-semver-0.9-dev (with librust-semver-parser-0.7-dev)
#                        real crate directories under /usr/share/cargo/registry:
#                        the cargo strategy's directory source (semver 0.9.0 →
#                        1.0.14 is the tests' dependency bump)
#   openssl              TestOpenSSLKeys (pkg/evidence)
#   time                 GNU /usr/bin/time -v: peak memory in docs/benchmarks.md
#   libxml2-utils        xmllint --stream, the yardstick of the JUnit parser's
#                        figures in docs/benchmarks.md
#   curl, unzip          the action's Build step fetches and unpacks its pinned Go
#                        (action/lib.sh private_go); its Install step downloads
#                        the release binary
#   chromium,            the job-summary render test (internal/actions
#   fonts-noto-color-emoji  TestRenderSummaries): headless Chromium, and an
#                        emoji font so the ✅/❌ marks are not empty boxes
#   user-mode-linux      linux.uml, a kernel run as a process: the probe's cgroup
#                        v2 test boots it (TestProbeReadsCgroupV2InUML) for a
#                        cgroup2 hierarchy with the pids, memory and cpu
#                        controllers, which a cgroup v1 or hybrid host lacks
# and, with npm from the npm registry, the yarn CLIs the yarn strategy's
# tests install real packages with (yarn_tools below): yarn 1.22.22
# ("classic") and Berry 4.5.3 (@yarnpkg/cli-dist), pinned, under the tools
# cache; scripts/test.sh passes them as RUNMILL_YARN_CLASSIC and
# RUNMILL_YARN_BERRY;
# and, through the go command, the action's pinned Go toolchain module
# (action/go-toolchain.sha256) into the module cache, which the action tests
# serve to the Build step as a file:// module proxy (go_toolchain below).
# A tool counts as present only where the sandbox sees it by default (under
# /usr, /bin): a pyenv python3 under /root does not make python3-pytest
# unnecessary. cargo is the exception: init binds a rustup cargo's ~/.cargo
# and ~/.rustup itself (docs/init.md), so any cargo on PATH will do.
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

# visible: the tool is in one of the directories the sandbox binds by default.
visible() {
	local d
	for d in /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
		[ -x "$d/$1" ] && return 0
	done
	return 1
}

install_pkgs() {
	local missing=()
	visible git || missing+=(git)
	{ visible unshare && visible setpriv; } || missing+=(util-linux)
	visible containerd || missing+=(containerd)
	visible runc || missing+=(runc)
	# Not `command -v python3`: the first python3 on a developer's PATH is
	# often pyenv's, which the sandbox cannot see.
	{ visible python3 && /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent python3 -c 'import pytest' >/dev/null 2>&1; } || missing+=(python3-pytest)
	visible node || missing+=(nodejs)
	visible npm || missing+=(npm)
	# cargo: a rustup cargo on PATH works (init binds ~/.cargo and ~/.rustup).
	command -v cargo >/dev/null 2>&1 || missing+=(cargo)
	[ -d /usr/share/cargo/registry/semver-1.0.14 ] || missing+=(librust-semver-dev)
	[ -d /usr/share/cargo/registry/semver-0.9.0 ] || missing+=(librust-semver-0.9-dev)
	visible openssl || missing+=(openssl)
	[ -x /usr/bin/time ] || missing+=(time)
	command -v xmllint >/dev/null 2>&1 || missing+=(libxml2-utils)
	visible curl || missing+=(curl)
	visible unzip || missing+=(unzip)
	visible linux.uml || missing+=(user-mode-linux)
	# The job-summary render test (internal/actions TestRenderSummaries):
	# headless Chromium, and a colour emoji font for the ✅/❌ marks.
	visible chromium || missing+=(chromium)
	[ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || missing+=(fonts-noto-color-emoji)
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
		exit 2
	fi
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	local log
	log=$(mktemp)
	# Quiet unless it fails: debconf's notes on a fresh image are noise.
	if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "setup: installing ${missing[*]} failed" >&2
		exit 2
	fi
	rm -f "$log"
}

# node:test's JUnit reporter (the node-test sample) needs Node 20.10 or later;
# Debian 12's nodejs is 18. Say so now rather than as a failed check later.
check_node() {
	if ! node -e 'process.exit(require("node:test/reporters").junit ? 0 : 1)' >/dev/null 2>&1; then
		echo "setup: $(command -v node) ($(node --version 2>/dev/null)) has no node:test JUnit reporter; the node-test tests need Node >= 20.10 under /usr (Debian 13's nodejs, or NodeSource's)" >&2
		[ "${CI:-}" = true ] && exit 2
	fi
	return 0
}

# go_toolchain: the Go release the action builds runmill with, as the go
# command fetches it (verified against sum.golang.org), once.
go_toolchain() {
	local arch version
	# shellcheck source=../action/lib.sh
	source "$(dirname "${BASH_SOURCE[0]}")/../action/lib.sh"
	arch=$(goarch 2>/dev/null) || return 0
	version=$(go_toolchain_version)
	[ -f "$(go env GOMODCACHE)/cache/download/golang.org/toolchain/@v/v0.0.1-$version.linux-$arch.zip" ] && return 0
	echo "setup: downloading Go $version ($arch) for the action tests (first run only)" >&2
	(cd / && go mod download "golang.org/toolchain@v0.0.1-$version.linux-$arch")
}

# pnpm: the pnpm strategy's tests install with pnpm's own CLI, from the npm
# registry, at one exact version, into runmill-tools (RUNMILL_PNPM names
# another; internal/deps/depstest.Pnpm finds it).
pnpm_cli() {
	local version=9.15.9 dir=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}/pnpm
	[ -n "${RUNMILL_PNPM:-}" ] && return 0
	[ "$("$dir/node_modules/.bin/pnpm" --version 2>/dev/null)" = "$version" ] && return 0
	echo "setup: installing pnpm $version from the npm registry into $dir" >&2
	npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "pnpm@$version" >/dev/null
}

# yarn_tools: the yarn CLIs, each from the npm registry with npm, pinned,
# never run from a repository (the tests run them outside verification).
yarn_tools() {
	local tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
	local flavour pkg
	for flavour in classic:yarn@1.22.22 berry:@yarnpkg/cli-dist@4.5.3; do
		pkg=${flavour#*:}
		flavour=${flavour%%:*}
		if [ ! -x "$tools/yarn-$flavour/node_modules/.bin/yarn" ] || ! grep -q "\"version\": \"${pkg##*@}\"" "$tools/yarn-$flavour/node_modules/${pkg%@*}/package.json" 2>/dev/null; then
			echo "setup: installing $pkg into $tools/yarn-$flavour" >&2
			npm install --no-audit --no-fund --ignore-scripts --prefix "$tools/yarn-$flavour" "$pkg" >/dev/null
		fi
	done
}

need_go
install_pkgs
check_node
go_toolchain
pnpm_cli
yarn_tools
