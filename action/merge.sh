#!/usr/bin/env bash
# Step "runmill verify" of action.yml with merge: true — the fan-in job of a
# sharded verification (docs/scale.md). It merges the shard bundles found
# under shards-dir (the downloaded artifacts of the shard jobs) into one
# signed verdict. Like verify.sh, exit 1 (not merge-ready, or a shard
# refused) is an answer: the upload step runs first, the gate fails the job.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=${INPUT_SHARDS_DIR:-}
[ -n "$dir" ] || input_error "merge: true needs shards-dir: the directory actions/download-artifact wrote the shard jobs' evidence to"
[ -n "${INPUT_SHARD:-}" ] && input_error "set shard (a shard job) or merge (the merge job), not both"

# The trust document names the keys the shards may be signed with: text
# (such as a repository variable) or a file outside the workspace.
trust=${INPUT_TRUST:-}
if [ -z "$trust" ] && fork_pull_request; then
	input_error "$(fork_cause "the trust input"); the merge fails closed without the trust document the shard bundles must verify against"
fi
[ -n "$trust" ] || input_error "merge: true needs trust: the trust document (runmill evidence keygen --trust-out) the shard bundles must verify against"
retention_output

out=$(mktemp -d "$RUNNER_TEMP/runmill.XXXXXX")
echo "evidence-dir=$out/runs" >>"$GITHUB_OUTPUT"
if [[ $trust != *$'\n'* && -f $trust ]]; then
	trust_file=$trust
else
	trust_file="$out/trust.json"
	printf '%s\n' "$trust" >"$trust_file"
fi

args=(evidence merge --github-actions --trust "$trust_file" --out "$out")
if [ -n "${GITHUB_REPOSITORY:-}" ]; then
	args+=(--github-repo "$GITHUB_REPOSITORY")
fi
# What GitHub said of the shard jobs (needs.<job>.result): anything but
# success is a reason in the verdict, so a cancelled or skipped shard job is
# never a pass even when it left a bundle behind.
if [ -n "${INPUT_SHARD_RESULTS:-}" ]; then
	args+=(--job-result "shards=$INPUT_SHARD_RESULTS")
fi

# Every shard bundle under the directory, in a stable order. None at all is
# passed on as none: runmill refuses to merge nothing, with the reason.
bundles=()
if [ -d "$dir" ]; then
	while IFS= read -r -d '' f; do bundles+=("$f"); done < <(find "$dir" -name shard.json -type f -print0 | sort -z)
fi
echo "runmill: merging ${#bundles[@]} shard bundles from $dir"

: >>"$GITHUB_OUTPUT"
: >>"${GITHUB_STEP_SUMMARY:-/dev/null}"

set +e
if [ ${#bundles[@]} -eq 0 ]; then
	echo "::error title=runmill (RM-EVIDENCE-019)::no shard bundle (shard.json) under $dir: every shard job failed, was cancelled or skipped, or uploaded nothing; not merge-ready"
	echo "verdict=not-merge-ready" >>"$GITHUB_OUTPUT"
	rc=1
else
	runmill=$(installed_runmill) || exit 2
	"$runmill" "${args[@]}" "${bundles[@]}"
	rc=$?
fi
set -e
echo "exit-code=$rc" >>"$GITHUB_OUTPUT"
case $rc in
0 | 1) ;;
*)
	echo "::error title=runmill::runmill evidence merge exited $rc without a verdict (2: usage or configuration); the message above names the RM code and the fix"
	exit "$rc"
	;;
esac
