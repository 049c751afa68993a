#!/usr/bin/env bash
# Builds runmill's release binaries (linux/amd64 and linux/arm64) into dist/
# with the action's own build — build_runmill and the pinned Go of
# action/lib.sh, the same the action's source fallback uses — and writes
# dist/SHA256SUMS. The build is reproducible (no VCS stamp, trimmed paths,
# CGO off, one pinned Go), so the maintainer's build before tagging and the
# release workflow's build of the tag give the same bytes
# (docs/action.md § Releasing):
#   scripts/release.sh v1.2.3          before tagging: also writes
#                                      action/checksums/SHA256SUMS, which the
#                                      release commit adds
#   scripts/release.sh v1.2.3 --check  the release workflow, at the tag:
#                                      fails unless dist/SHA256SUMS is the
#                                      committed file, byte for byte
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-} mode=${2:-}
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || ! [[ $mode == "" || $mode == --check ]]; then
	echo "usage: scripts/release.sh vX.Y.Z [--check]" >&2
	exit 2
fi
source action/lib.sh
work=$(mktemp -d)
trap 'chmod -R u+w -- "$work" 2>/dev/null; rm -rf -- "$work"' EXIT
go=$(private_go "$work/go" "$work/cache")
rm -rf dist
mkdir -p dist
for arch in amd64 arm64; do
	build_runmill "$go" "$PWD" "$version" "$arch" "$PWD/dist/runmill_${version}_linux_$arch"
done
(cd dist && sha256sum runmill_"${version}"_linux_* >SHA256SUMS)
cat dist/SHA256SUMS
sums=action/checksums/SHA256SUMS
if [ "$mode" = --check ]; then
	if ! diff -u "$sums" dist/SHA256SUMS; then
		echo "release: the binaries built from this tag are not the ones $sums vouches for (above); nothing is published" >&2
		exit 1
	fi
	echo "release: dist/ matches $sums"
	exit 0
fi
mkdir -p action/checksums
cp dist/SHA256SUMS "$sums"
cat <<MSG
release: wrote $sums. Commit it on a commit of its own, off main, tag it and push the tag:
  git add $sums && git commit -m "release $version: checksums"
  git tag -a $version -m "runmill $version" && git push origin $version
MSG
