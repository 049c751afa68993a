#!/usr/bin/env bash
# Step "Name the base proof" of action.yml (docs/action.md § Proving the
# base once per commit): the actions/cache key of the proof of this pull
# request's base commit, which a push job with prove-base saved, and where
# the Restore step puts it. Keyed by the branch and the commit; the restore
# falls back to the branch's newest proof, whose runs then miss by input
# key, costing only the download. Nothing here is trusted: runmill reuses a
# restored run only from a bundle the signing key's own public key verifies.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

commit=${INPUT_BASE:-${RUNMILL_EVENT_BASE_SHA:-${RUNMILL_MERGE_GROUP_BASE_SHA:-}}}
if [ -z "$commit" ]; then
	echo "::notice title=runmill::base-proof: this ${GITHUB_EVENT_NAME:-} event names no base commit, so no base proof is restored"
	exit 0
fi
repo=${GITHUB_WORKSPACE:-$PWD}
commit=$(git -c safe.directory='*' -C "$repo" rev-parse -q --verify "$commit^{commit}" 2>/dev/null || printf '%s' "$commit")
# The push job saved it under the branch pushed to: this pull request's
# base, or the branch a merge queue merges into (refs/heads/<branch>).
queue=${RUNMILL_MERGE_GROUP_BASE_REF:-}
base_proof_outputs "${GITHUB_BASE_REF:-${queue#refs/heads/}}" "$commit"
