#!/usr/bin/env bash
# The project's one test command (README "Run the tests"; .ci/run calls it).
# It does its own set-up: installs containerd/runc when missing, then builds,
# vets and runs every test. Sandbox tests start a private containerd under a
# temp dir when RUNMILL_CONTAINERD_ADDRESS is not set; with CI=true a sandbox
# test that cannot reach containerd fails instead of skipping.
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
go test -count=1 -timeout 20m "$@" ./...
