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
go build -trimpath -o bin/runmill ./cmd/runmill
go test -count=1 -timeout 20m "$@" ./...
