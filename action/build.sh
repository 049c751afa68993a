#!/usr/bin/env bash
# Step "Build runmill" of action.yml: builds runmill from the action's own
# source (the same `go build -trimpath` as scripts/test.sh and the
# Dockerfile), or, with the runmill-version input, installs that release
# through the Go module proxy (checksummed against sum.golang.org), then
# installs it root-owned in a directory only root can write and hands its
# absolute path on as the step output runmill. Later steps run it by that
# path (lib.sh), never through PATH.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
version=${INPUT_RUNMILL_VERSION:-}
if [ -n "$version" ] && ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "::error title=runmill (RM-ACTIONS-003)::runmill-version must be a module version such as v1.2.3, or empty to build the action's own source"
	exit 2
fi

# Built as the runner user, in a directory of its own.
bin=$(mktemp -d "$RUNNER_TEMP/runmill-build.XXXXXX")
trap 'rm -rf -- "$bin"' EXIT
# A fresh build and module cache: the go command trusts both, and a cache
# restored with actions/cache is one any workflow of the pull request could
# have saved under the same key. RUNMILL_TRUST_GO_CACHE=true keeps the job's
# own (a self-hosted runner's warm cache nothing restores; the action's
# tests).
if [ "${RUNMILL_TRUST_GO_CACHE:-}" != true ]; then
	export GOCACHE="$bin/gocache" GOMODCACHE="$bin/gomodcache"
	export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
fi
# GOWORK=off: no go.work above the action's directory joins the build.
if [ -z "$version" ]; then
	(cd "$GITHUB_ACTION_PATH" && GOWORK=off CGO_ENABLED=0 go build -trimpath -o "$bin/runmill" ./cmd/runmill)
else
	(cd / && GOBIN="$bin" CGO_ENABLED=0 go install -trimpath "github.com/runmill/verify/cmd/runmill@$version")
fi

# Root-owned, in a fresh directory per job under a root-owned one: the
# runner user (and so anything it runs) cannot replace the binary root
# runs. The gate step removes the directory.
root=/var/lib/runmill-action
sudo -n install -d -o root -g root -m 0755 "$root"
home=$(sudo -n mktemp -d "$root/job.XXXXXXXX")
sudo -n chmod 0755 "$home"
sudo -n install -o root -g root -m 0755 "$bin/runmill" "$home/runmill"
home=$(realpath -e "$home")
{
	echo "runmill=$home/runmill"
	echo "home=$home"
} >>"$GITHUB_OUTPUT"
runmill=$(RUNMILL_BIN="$home/runmill" installed_runmill)
"$runmill" --version
