#!/usr/bin/env bash
# Steps "Locate the caches", "Vet the restored caches" and "Seal the caches"
# of action.yml (docs/action.md § Caches that outlive the job). The caches
# of the state dir — the prepared Go toolchain caches and the prepared
# dependencies — are restored and saved with actions/cache around verify.
# Whatever a workflow in the cache's scope saved can be restored here, a
# pull request's own workflow included, so nothing restored is used before
# `runmill cache vet` has judged it: its receipt, every byte, and with the
# signing key a seal only that key makes. The keys come from
# `runmill cache key`, the one place that computes them.
#   locate  the state dir (a step output verify and Prepare dependencies
#           use) and the restore keys; nothing with caches: false
#   vet     judge every restored entry; what fails is removed (a miss)
#   seal    seal what this job made, then the save keys
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runmill=$(installed_runmill) || exit 2
repo=${GITHUB_WORKSPACE:-$PWD}
base=${INPUT_BASE:-${RUNMILL_EVENT_BASE_SHA:-${RUNMILL_MERGE_GROUP_BASE_SHA:-}}}

# keys STATE: runmill cache key's name=value lines, checked against the
# grammar of what it prints (an absolute path, key words) before they
# become step outputs.
keys() {
	local args=(cache key --out "$1") line
	if [ -n "$base" ] && git -c safe.directory='*' -C "$repo" cat-file -e "$base^{commit}" 2>/dev/null; then
		args+=(--repo "$repo" --base "$base")
	fi
	"$runmill" "${args[@]}" | while IFS= read -r line; do
		[[ $line =~ ^[a-z-]+=[A-Za-z0-9/._+-]*$ ]] || {
			echo "::error title=runmill::runmill cache key printed an unexpected line" >&2
			return 2
		}
		printf '%s\n' "$line"
	done
}

case ${1:-} in
locate)
	case ${INPUT_CACHES:-true} in
	true) ;;
	false) exit 0 ;; # no state-dir output: every cache step is skipped
	*) input_error "caches must be true or false, not '${INPUT_CACHES}'" ;;
	esac
	out=$(mktemp -d "$RUNNER_TEMP/runmill.XXXXXX")
	keys "$out" >>"$GITHUB_OUTPUT"
	;;
vet)
	state=${RUNMILL_STATE_DIR:?the Locate the caches step names the state dir}
	# The signing key's own public key is the trust: only entries a job
	# holding it sealed are kept. Without it the receipts alone decide.
	sudo -E env PATH="$PATH" "$runmill" cache vet --out "$state"
	;;
seal)
	state=${RUNMILL_STATE_DIR:?the Locate the caches step names the state dir}
	if [ -n "${RUNMILL_SIGNING_KEY:-}" ]; then
		sudo -E env PATH="$PATH" "$runmill" cache seal --out "$state"
		sudo -n chown -R "$(id -u):$(id -g)" "$state"
	else
		echo "runmill: no signing-key: the caches are saved unsealed, and a later job without the key takes them on their receipts alone (docs/action.md § Caches that outlive the job)"
	fi
	keys "$state" | grep -E '^(gotool|deps)-save=' >>"$GITHUB_OUTPUT"
	;;
*)
	echo "::error title=runmill::caches.sh locate|vet|seal" >&2
	exit 2
	;;
esac
