#!/usr/bin/env bash
# Step "Prepare dependencies" of action.yml (opt-in: prepare-dependencies).
# It makes, outside verification, an install for each commit verify will
# check out (base, merge base, candidate) and imports it with
# `runmill deps import`, which verifies it against that commit's lockfile
# (docs/dependencies.md). This step has the network and runs the package
# manager; action.yml gives it neither the signing key nor a token, and
# install scripts stay off unless dependency-scripts is true.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
input_error() {
	echo "::error title=runmill (RM-ACTIONS-003)::$*"
	exit 2
}

base=${INPUT_BASE:-${RUNMILL_EVENT_BASE_SHA:-${RUNMILL_MERGE_GROUP_BASE_SHA:-}}}
candidate=${INPUT_CANDIDATE:-${RUNMILL_EVENT_HEAD_SHA:-${RUNMILL_MERGE_GROUP_HEAD_SHA:-}}}
if [ -z "$base" ] || [ -z "$candidate" ]; then
	input_error "no base or candidate commit: pass the base and candidate inputs"
fi
repo=${GITHUB_WORKSPACE:-$PWD}
git() { command git -c safe.directory='*' "$@"; }
mergebase=$(git -C "$repo" merge-base "$base" "$candidate")

scripts=--ignore-scripts
case "${INPUT_DEPENDENCY_SCRIPTS:-false}" in
true) scripts= ;;
false) ;;
*) input_error "dependency-scripts must be true or false, not '${INPUT_DEPENDENCY_SCRIPTS}'" ;;
esac

runmill=$(installed_runmill) || exit 2

# The state directory verify will use: a step output (verify reads it as
# RUNMILL_PREPARED_OUT), which no later step can change.
out=$(mktemp -d "$RUNNER_TEMP/runmill.XXXXXX")
echo "state-dir=$out" >>"$GITHUB_OUTPUT"
gomodcache="$RUNNER_TEMP/runmill-gomodcache"

for strategy in ${INPUT_PREPARE_DEPENDENCIES//,/ }; do
	case "$strategy" in
	npm | go-modules) ;;
	true) input_error "prepare-dependencies lists strategies (npm, go-modules), not 'true'" ;;
	*) input_error "prepare-dependencies: unknown strategy '$strategy' (npm, go-modules); other package managers have no strategy" ;;
	esac
	for c in $(printf '%s\n' "$base" "$mergebase" "$candidate" | awk '!seen[$0]++'); do
		wt="$RUNNER_TEMP/runmill-prepare-$c"
		[ -d "$wt" ] || git -C "$repo" worktree add --detach "$wt" "$c" >/dev/null
		case "$strategy" in
		npm)
			[ -f "$wt/package-lock.json" ] || continue
			(cd "$wt" && npm ci $scripts --no-audit --no-fund)
			sudo -E env PATH="$PATH" "$runmill" deps import --repo "$repo" --commit "$c" --from "$wt" --out "$out"
			;;
		go-modules)
			[ -f "$wt/go.mod" ] || continue
			(cd "$wt" && GOMODCACHE="$gomodcache" GOFLAGS=-modcacherw go mod download)
			sudo -E env PATH="$PATH" "$runmill" deps import --strategy go-modules --repo "$repo" --commit "$c" --from "$gomodcache" --out "$out"
			;;
		esac
	done
done
