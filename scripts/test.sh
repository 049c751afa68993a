#!/usr/bin/env bash
# The project's one test command (README "Run the tests"; .ci/run calls it).
# It does its own set-up: installs containerd/runc when missing, then builds,
# vets and runs every test. Sandbox tests start a private containerd under a
# temp dir when RUNMILL_CONTAINERD_ADDRESS is not set; with CI=true a sandbox
# test that cannot reach containerd fails instead of skipping. The sandbox
# suite then runs a second time against containerd 2.x (the runners' stack),
# built from the Go module proxy at the client's version.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
CGO_ENABLED=0 go build -trimpath -o bin/runmill ./cmd/runmill
# cosign, for the interoperability test (pkg/evidence TestCosignInterop):
# built from the Go module proxy into a directory outside the repository.
# Cached builds take seconds; a fresh machine needs several minutes.
if [ -z "${RUNMILL_COSIGN:-}" ]; then
	tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
	if [ ! -x "$tools/cosign" ]; then
		echo "test: building cosign v2.6.5 into $tools (first run only)" >&2
		(cd / && GOBIN="$tools" go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5)
	fi
	export RUNMILL_COSIGN="$tools/cosign"
fi
# yarn 1 and Berry, for the yarn strategy's tests (internal/deps,
# internal/engine): installed from the npm registry by scripts/setup.sh.
tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
export RUNMILL_YARN_CLASSIC=${RUNMILL_YARN_CLASSIC:-$tools/yarn-classic/node_modules/.bin/yarn}
export RUNMILL_YARN_BERRY=${RUNMILL_YARN_BERRY:-$tools/yarn-berry/node_modules/.bin/yarn}
# actionlint, for the workflows and the action (action/ TestActionlint lints
# the composite steps): built from the Go module proxy like cosign.
if [ -z "${RUNMILL_ACTIONLINT:-}" ]; then
	tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
	if [ ! -x "$tools/actionlint" ]; then
		echo "test: building actionlint v1.7.12 into $tools (first run only)" >&2
		(cd / && GOBIN="$tools" go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12)
	fi
	export RUNMILL_ACTIONLINT="$tools/actionlint"
fi
"$RUNMILL_ACTIONLINT" -color=false .github/workflows/*.yml
# staticcheck, the project's linter (every check at its defaults): built
# from the Go module proxy like cosign; about a minute on 2 cores.
if [ -z "${RUNMILL_STATICCHECK:-}" ]; then
	tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
	if [ ! -x "$tools/staticcheck" ]; then
		echo "test: building staticcheck v0.8.2 into $tools (first run only)" >&2
		(cd / && GOBIN="$tools" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2)
	fi
	export RUNMILL_STATICCHECK="$tools/staticcheck"
fi
"$RUNMILL_STATICCHECK" ./...
# containerd 2.x, for the sandbox suite's second run (docs/sandbox.md "What
# was measured where"): the daemon and its runc shim at the version of the
# client runmill is built with (go.mod), built from the Go module proxy like
# cosign, each version in a directory of its own so the shim beside the
# daemon is its own (RUNMILL_CONTAINERD_BIN puts that directory first on the
# daemon's PATH). CGO_ENABLED=0: no C headers needed, btrfs (cgo only) is
# left out, and the private daemon disables it anyway.
containerd2=
if [ -z "${RUNMILL_CONTAINERD_ADDRESS:-}" ]; then
	tools=${RUNMILL_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/runmill-tools}
	ctrd_version=$(go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
	ctrd_dir="$tools/containerd-$ctrd_version"
	if [ ! -x "$ctrd_dir/containerd" ] || [ ! -x "$ctrd_dir/containerd-shim-runc-v2" ]; then
		echo "test: building containerd $ctrd_version into $ctrd_dir (first run only)" >&2
		if ! (cd / && CGO_ENABLED=0 GOBIN="$ctrd_dir" go install -trimpath \
			-ldflags "-X github.com/containerd/containerd/v2/version.Version=$ctrd_version" \
			"github.com/containerd/containerd/v2/cmd/containerd@$ctrd_version" \
			"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$ctrd_version"); then
			if [ "${CI:-}" = true ]; then
				echo "test: FAIL: CI=true and containerd $ctrd_version could not be built" >&2
				exit 1
			fi
			echo "test: containerd $ctrd_version could not be built; the sandbox suite runs against one containerd only" >&2
		fi
	fi
	[ -x "$ctrd_dir/containerd" ] && [ -x "$ctrd_dir/containerd-shim-runc-v2" ] && containerd2="$ctrd_dir/containerd"
fi
go test -count=1 -timeout 20m "$@" ./...
# The sandbox suite again, on a private containerd 2.x daemon: every test of
# internal/sandbox, the doctor's containerd and sandbox checks, and three
# whole verifications through the engine (probe, checks, a killed run swept
# by the next, prepared npm dependencies in copy-on-write views). About
# 1–1.5 min on the project's 2-core machine (docs/benchmarks.md).
# Skipped when RUNMILL_CONTAINERD_ADDRESS names a daemon: the tests would
# use that one.
if [ -n "$containerd2" ]; then
	echo "test: the sandbox suite against $("$containerd2" --version)" >&2
	export RUNMILL_CONTAINERD_BIN="$containerd2"
	go test -count=1 -timeout 10m "$@" ./internal/sandbox/...
	go test -count=1 -timeout 10m "$@" -run '^(TestDoctorContainerd|TestDoctorSandbox)$' ./internal/cli/
	go test -count=1 -timeout 15m "$@" -run '^(TestVerifyEndToEnd|TestKilledRunSweptByNextRun|TestVerifyNPM)$' ./internal/engine/
	unset RUNMILL_CONTAINERD_BIN
fi
