#!/usr/bin/env bash
# Step "Summarize" of action.yml: the job summary of the run the verify
# step recorded, once the evidence is uploaded (its artifact-url links the
# Evidence section), and with comment: true the sticky pull-request
# comment. runmill runs here as the runner user: it reads the run
# directory (handed back by the verify step) and calls GitHub's API with
# the job's token; a comment it cannot write is a warning, never a failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runmill=$(installed_runmill) || exit 2
[[ ${RUNMILL_RUN_ID:-} =~ ^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$ ]] || input_error "no run id from the verify step"
run="${RUNMILL_EVIDENCE_DIR:?}/$RUNMILL_RUN_ID"
args=(summary "$run" --repo "${GITHUB_WORKSPACE:-$PWD}" --github-actions --out "$RUNNER_TEMP/runmill-summary-$RUNMILL_RUN_ID.md")
if [ "${INPUT_COMMENT:-false}" = true ]; then
	args+=(--comment)
fi
exec "$runmill" "${args[@]}"
