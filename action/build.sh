#!/usr/bin/env bash
# Step "Build runmill" of action.yml. When the Install step installed the
# released binary, this step hands its path on. Otherwise it builds runmill
# from the action's own source (build_runmill in lib.sh, the release's own
# build, version stamped from the release or the action's ref), or, with
# the runmill-version input, installs that release through the Go module
# proxy (checksummed against sum.golang.org) — in both cases with a Go of
# its own (private_go), never the job's and never left on PATH — then
# installs it root-owned in a directory only root can write and hands its
# absolute path on as the step output runmill. Later steps run it by that
# path (lib.sh), never through PATH.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ -n "${RUNMILL_RELEASED:-}" ]; then
	bin=$(RUNMILL_BIN=$RUNMILL_RELEASED installed_runmill) || exit 2
	{
		echo "runmill=$bin"
		echo "home=$(dirname "$bin")"
	} >>"$GITHUB_OUTPUT"
	exit 0
fi
version=${RUNMILL_VERSION:?the Install step names the version to build}
requested=${INPUT_RUNMILL_VERSION:-}
cache=${RUNMILL_CACHE_DIR:?the Install step names the build cache}
arch=$(goarch) || exit 2

# Built as the runner user, in a directory of its own.
bin=$(mktemp -d "$RUNNER_TEMP/runmill-build.XXXXXX")
trap 'chmod -R u+w -- "$bin" 2>/dev/null; rm -rf -- "$bin"' EXIT
go=$(private_go "$bin/go" "$cache") || exit 2
# A fresh build and module cache: the go command trusts both, and a cache
# restored with actions/cache is one any workflow of the pull request could
# have saved under the same key. The modules the cache holds are offered
# as a module proxy instead, whose every zip the go command checks against
# go.sum (a tampered one fails the build: the next job, without this
# cache's entry, downloads afresh). RUNMILL_TRUST_GO_CACHE=true keeps the
# job's own (a self-hosted runner's warm cache nothing restores; the
# action's tests).
if [ "${RUNMILL_TRUST_GO_CACHE:-}" != true ]; then
	export GOCACHE="$bin/gocache" GOMODCACHE="$bin/gomodcache"
	if [ -d "$cache/mod" ]; then
		export GOPROXY="file://$cache/mod,${GOPROXY:-https://proxy.golang.org,direct}"
	fi
fi
if [ -z "$requested" ]; then
	build_runmill "$go" "$GITHUB_ACTION_PATH" "$version" "$arch" "$bin/runmill"
else
	(cd / && GOBIN="$bin" GOWORK=off GOENV=off GOTOOLCHAIN=local GOFLAGS=-modcacherw CGO_ENABLED=0 \
		"$go" install -trimpath -buildvcs=false -ldflags "-s -w -X github.com/runmill/verify/internal/cli.Version=$version" \
		"github.com/runmill/verify/cmd/runmill@$version")
fi
"$bin/runmill" --version
if [ -n "${RUNMILL_RELEASE_SHA256:-}" ]; then
	got=$(sha256sum -- "$bin/runmill" | cut -d' ' -f1)
	if [ "$got" != "$RUNMILL_RELEASE_SHA256" ]; then
		echo "::error title=runmill (RM-ACTIONS-004)::runmill built from this release commit has SHA-256 $got, not the $RUNMILL_RELEASE_SHA256 its checksums/SHA256SUMS vouches for: refused. The build is reproducible, so its source is not the release's or RUNMILL_TRUST_GO_CACHE let a cache into it; nothing is installed"
		exit 2
	fi
	echo "runmill: the build is the release's binary ($got)"
fi
# What the Save step keeps: the toolchain's zip (already there) and the
# module zips, both checked again after the next restore.
if [ "${RUNMILL_TRUST_GO_CACHE:-}" != true ] && [ -d "$GOMODCACHE/cache/download" ]; then
	rm -rf -- "$cache/mod"
	cp -a -- "$GOMODCACHE/cache/download" "$cache/mod"
fi
install_root_owned "$bin/runmill"
