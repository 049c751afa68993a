#!/usr/bin/env bash
# Step "Install the released runmill" of action.yml (issue 27). At a release
# tag the action carries checksums/SHA256SUMS, committed before tagging
# (docs/action.md § Releasing): the release's binary for this runner is
# downloaded from the action's own repository, checked against that file,
# and installed root-owned (lib.sh); a binary that does not match is
# refused. Without the file (a branch, a commit between releases, a local
# copy of the action), with runmill-version, or when the release cannot be
# downloaded, the Build step builds from source instead: this step then
# hands it the version to stamp and the build cache's key and directory.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
requested=${INPUT_RUNMILL_VERSION:-}
if [ -n "$requested" ] && ! [[ $requested =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	input_error "runmill-version must be a module version such as v1.2.3, or empty to use the action's own release or source"
fi
arch=$(goarch) || exit 2
ref=${RUNMILL_ACTION_REF:-}
repository=${RUNMILL_ACTION_REPOSITORY:-}
sums="$GITHUB_ACTION_PATH/action/checksums/SHA256SUMS"

# The release this copy of the action is: the one its checksums name.
release="" asset="" want=""
if [ -f "$sums" ]; then
	read -r want asset < <(grep -E "^[0-9a-f]{64}  runmill_v[^ ]+_linux_$arch\$" "$sums" | head -n 1) || true
	release=${asset#runmill_}
	release=${release%_linux_$arch}
	if [ -z "$asset" ] || ! [[ $release =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
		echo "::error title=runmill (RM-ACTIONS-004)::$sums names no runmill_vX.Y.Z_linux_$arch: the release commit is broken; use another release of the action"
		exit 2
	fi
	# A full version tag must be the release it carries (v1, a SHA or a
	# branch name may point at any).
	if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] && [ "$ref" != "$release" ]; then
		echo "::error title=runmill (RM-ACTIONS-004)::the action's tag is $ref but its checksums are those of $release: the tag was moved onto another release's commit; use a tag the release process made"
		exit 2
	fi
fi

if [ -z "$requested" ] && [ -n "$release" ]; then
	if [ -z "$repository" ]; then
		echo "::notice title=runmill::this copy of the action carries the checksums of $release but no repository to download it from (a local action): building from source"
	else
		url="${GITHUB_SERVER_URL:-https://github.com}/$repository/releases/download/$release/$asset"
		dl=$(mktemp -d "$RUNNER_TEMP/runmill-release.XXXXXX")
		trap 'rm -rf -- "$dl"' EXIT
		if fetch "$url" "$dl/runmill"; then
			got=$(sha256sum -- "$dl/runmill" | cut -d' ' -f1)
			if [ "$got" != "$want" ]; then
				echo "::error title=runmill (RM-ACTIONS-004)::$url has SHA-256 $got, but the action's checksums/SHA256SUMS at this ref says $want: refused, nothing installed. The release asset is not the binary the release commit vouches for; report it to the action's maintainers"
				exit 2
			fi
			echo "runmill: $asset matches the action's checksums ($want)"
			install_root_owned "$dl/runmill"
			echo "build=false" >>"$GITHUB_OUTPUT"
			exit 0
		fi
		echo "::warning title=runmill::could not download $url (the release may still be publishing): building $release from source"
	fi
fi

# The source fallback: the version to stamp (the release this commit is,
# else the action's ref), and the build cache's key and directory. What the
# cache holds is checked after every restore (docs/action.md § Caches are
# not trusted), so its key only decides how often it hits.
if [ -n "$requested" ]; then
	version=$requested
elif [ -n "$release" ]; then
	version=$release
elif [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	version=$ref
elif [ -n "$ref" ]; then
	version="dev+$(printf '%s' "$ref" | tr -c 'A-Za-z0-9.-' '-' | cut -c1-64)"
else
	version=dev
fi
gosum=$(sha256sum -- "$GITHUB_ACTION_PATH/go.sum" | cut -c1-16)
keyref=$(printf '%s' "${ref:-local}" | tr -c 'A-Za-z0-9.-' '-' | cut -c1-64)
{
	echo "build=true"
	echo "version=$version"
	# At a release commit the build must give the release's bytes (it is
	# reproducible): the Build step checks them against the checksums.
	[ -z "$requested" ] && [ -n "$want" ] && echo "sha256=$want"
	echo "cache-key=runmill-build-$keyref-$gosum-$(go_toolchain_version)-linux-$arch"
	echo "cache-dir=$RUNNER_TEMP/runmill-build-cache"
} >>"$GITHUB_OUTPUT"
