#!/usr/bin/env bash
# Step "Gate" of action.yml: the job fails unless runmill answered
# merge-ready. It runs after the evidence was uploaded, whatever happened.
set -euo pipefail
# The directory runmill was installed in (root-owned, one per job; the
# Install step's, handed on by the Build step) goes first: nothing runs
# runmill after this step.
for home in ${RUNMILL_HOME:-} ${RUNMILL_INSTALL_HOME:-}; do
	if [[ $home =~ ^/var/lib/runmill-action/job\.[A-Za-z0-9]+$ ]] && [ -d "$home" ]; then
		sudo -n rm -rf -- "$home" || echo "runmill: could not remove $home"
	fi
done
verdict=${RUNMILL_VERDICT:-}
code=${RUNMILL_EXIT_CODE:-}
artifact=${RUNMILL_ARTIFACT_NAME:-runmill-evidence}
if [ "$verdict" = merge-ready ] && [ "$code" = 0 ]; then
	echo "runmill: merge-ready"
	exit 0
fi
# A shard job passes when it signed its share: the merge job, the one
# required check, decides (docs/scale.md).
if [ "$verdict" = shard ] && [ "$code" = 0 ] && [ -n "${RUNMILL_SHARD:-}" ]; then
	echo "runmill: shard ${RUNMILL_SHARD} signed; the merge job takes the verdict"
	exit 0
fi
# A base proof takes no verdict: it passes when every report check's
# baseline passed at the commit, which pull requests then reuse.
if [ "$verdict" = base-proof ] && [ -n "${RUNMILL_PROVE_BASE:-}" ]; then
	if [ "$code" = 0 ]; then
		echo "runmill: base proof of ${RUNMILL_PROVE_BASE} signed and saved; every baseline is reusable"
		exit 0
	fi
	echo "::error title=runmill::the base proof of ${RUNMILL_PROVE_BASE} is signed, but some baselines did not pass there (the runmill verify step lists them); pull requests against it run those themselves"
	exit 1
fi
case $verdict in
not-merge-ready) echo "::error title=runmill::not merge-ready: the job summary says why; the evidence is the artifact $artifact" ;;
merge-ready) echo "::error title=runmill::runmill said merge-ready but exited ${code:-without a code}: not merge-ready" ;;
*) echo "::error title=runmill::runmill produced no verdict (an earlier step failed): not merge-ready" ;;
esac
exit 1
