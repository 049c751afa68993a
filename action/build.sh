#!/usr/bin/env bash
# Step "Build runmill" of action.yml: builds runmill from the action's own
# source into $RUNNER_TEMP/runmill-bin (the same `go build -trimpath` as
# scripts/test.sh and the Dockerfile), or, with the runmill-version input,
# installs that release through the Go module proxy (checksummed against
# sum.golang.org), and puts it on PATH for the following steps.
set -euo pipefail
bin="$RUNNER_TEMP/runmill-bin"
mkdir -p "$bin"
version=${INPUT_RUNMILL_VERSION:-}
if [ -z "$version" ]; then
	(cd "$GITHUB_ACTION_PATH" && CGO_ENABLED=0 go build -trimpath -o "$bin/runmill" ./cmd/runmill)
else
	if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
		echo "::error title=runmill (RM-ACTIONS-003)::runmill-version must be a module version such as v1.2.3, or empty to build the action's own source"
		exit 2
	fi
	(cd / && GOBIN="$bin" CGO_ENABLED=0 go install -trimpath "github.com/runmill/verify/cmd/runmill@$version")
fi
echo "$bin" >>"$GITHUB_PATH"
"$bin/runmill" --version
