#!/usr/bin/env bash
# Step "runmill verify" of action.yml. Inputs arrive as INPUT_* variables
# (a composite step gets none by itself: action.yml maps each one), the
# pull request's commits as RUNMILL_EVENT_*_SHA from the event payload.
# runmill's exit code 1 (not merge-ready) is an answer, not a failure of
# this step: the upload step must run first, the gate step fails the job.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The fan-in job of a sharded verification merges instead (docs/scale.md).
case ${INPUT_MERGE:-false} in
true) exec bash "$(dirname "${BASH_SOURCE[0]}")/merge.sh" ;;
false) ;;
*) input_error "merge must be true or false" ;;
esac
shard=${INPUT_SHARD:-}
if [ -n "$shard" ] && ! [[ $shard =~ ^[1-9][0-9]*/[1-9][0-9]*$ ]]; then
	input_error "shard must be K/N (e.g. 2/3), not '$shard'"
fi
# A shard's statement is worth something only signed: the merge refuses an
# unsigned one, so a shard job without the key would be green for nothing.
if [ -n "$shard" ] && [ -z "${RUNMILL_SIGNING_KEY:-}" ]; then
	if fork_pull_request; then
		input_error "$(fork_cause signing-key); a shard job fails without it, since the merge refuses an unsigned shard"
	fi
	input_error "a shard job needs signing-key: the merge job refuses an unsigned shard (docs/scale.md)"
fi
case ${INPUT_POLICY_REQUIRED:-false} in
true | false) ;;
*) input_error "policy-required must be true or false" ;;
esac
retention_output

# A base proof (prove-base) verifies no change: one commit, every report
# check's baseline there, signed for the pull requests against it.
case ${INPUT_BASE_PROOF:-false} in
true | false) ;;
*) input_error "base-proof must be true or false" ;;
esac
prove=${INPUT_PROVE_BASE:-}
if [ -n "$prove" ]; then
	[ -n "${RUNMILL_SIGNING_KEY:-}" ] || input_error "prove-base needs signing-key: an unsigned proof is never reused"
	[ -z "$shard" ] || input_error "prove-base proves every report check's baseline at once; drop shard"
	[ -z "${INPUT_AGENT_PROPOSALS:-}" ] && [ -z "${INPUT_REUSE_DIR:-}" ] && [ "${INPUT_CHECK_RUN:-false}" != true ] && [ "${INPUT_COMMENT:-false}" != true ] ||
		input_error "prove-base verifies no pull request: drop agent-proposals, reuse-dir, check-run and comment"
fi

# The pull request's base.sha and head.sha (a merge queue's base_sha and
# head_sha), never GITHUB_SHA: on pull_request that is a merge commit GitHub
# made, not the candidate.
base=${INPUT_BASE:-${RUNMILL_EVENT_BASE_SHA:-${RUNMILL_MERGE_GROUP_BASE_SHA:-}}}
candidate=${INPUT_CANDIDATE:-${RUNMILL_EVENT_HEAD_SHA:-${RUNMILL_MERGE_GROUP_HEAD_SHA:-}}}
if [ -n "$prove" ]; then
	base=$prove candidate=$prove
fi
if [ -z "$base" ] || [ -z "$candidate" ]; then
	input_error "no base or candidate commit: this ${GITHUB_EVENT_NAME:-} event carries no pull request or merge group, so pass the base and candidate inputs"
fi

# Both commits must be in the checkout: actions/checkout fetches one commit
# unless told fetch-depth: 0, and runmill needs the base and the head.
repo=${GITHUB_WORKSPACE:-$PWD}
for c in "$base" "$candidate"; do
	if ! git -c safe.directory='*' -C "$repo" cat-file -e "$c^{commit}" 2>/dev/null; then
		input_error "commit $c is not in the checkout at $repo: check out with actions/checkout and fetch-depth: 0 (the base and the head, not only the merge commit)"
	fi
done

# runmill runs as root, by the absolute path the Build step installed it at.
runmill=$(installed_runmill) || exit 2

# A fresh state directory per run: its runs/ holds exactly this run, which
# the upload step takes whatever happens next.
# The Prepare dependencies step, when enabled, made it and filled its cache,
# or the Locate the caches step made it and the caches were restored into
# it (their step outputs, which no later step can change, not GITHUB_ENV).
out=${RUNMILL_PREPARED_OUT:-${RUNMILL_CACHES_OUT:-$(mktemp -d "$RUNNER_TEMP/runmill.XXXXXX")}}
echo "evidence-dir=$out/runs" >>"$GITHUB_OUTPUT"

if [ -n "$prove" ]; then
	args=(verify --github-actions --repo "$repo" --prove-base "$prove" --out "$out")
else
	args=(verify --github-actions --repo "$repo" --base "$base" --candidate "$candidate" --out "$out")
fi
if [ -n "${GITHUB_REPOSITORY:-}" ]; then
	args+=(--github-repo "$GITHUB_REPOSITORY")
fi

# The operator policy: a file outside the workspace, or YAML text (such as a
# repository variable) written to one.
policy=${INPUT_POLICY:-}
policy_file=${INPUT_POLICY_FILE:-}
if [ -n "$policy" ] && [ -n "$policy_file" ]; then
	input_error "set policy or policy-file, not both"
fi
if [ -z "$policy_file" ] && [ -n "$policy" ]; then
	if [[ $policy != *$'\n'* && ($policy == /* || $policy == ./* || $policy == *.yaml || $policy == *.yml) ]]; then
		policy_file=$policy
	else
		# At a path of the policy's content alone: runmill records the path
		# in the manifest, which every shard of a sharded verification must
		# share, and RUNNER_TEMP is one path on every GitHub-hosted runner.
		policy_file="$RUNNER_TEMP/runmill-policy-$(printf '%s\n' "$policy" | sha256sum | cut -c1-16)/policy.yaml"
		mkdir -p -- "$(dirname -- "$policy_file")"
		rm -f -- "$policy_file"
		printf '%s\n' "$policy" >"$policy_file"
	fi
fi
if [ -n "$policy_file" ]; then
	[ -f "$policy_file" ] || input_error "the policy file $policy_file does not exist"
	args+=(--policy "$policy_file")
elif [ "${INPUT_POLICY_REQUIRED:-false}" = true ]; then
	if fork_pull_request; then
		input_error "$(fork_cause "the policy input"); policy-required is true, so this job fails rather than verify without the operator policy"
	fi
	input_error "policy-required is true but policy and policy-file are empty: set the variable or file the workflow's policy input names"
elif fork_pull_request; then
	echo "::warning title=runmill (fork pull request)::$(fork_cause "the policy input"); verifying without an operator policy (set policy-required: true to fail instead)"
fi

proposals=${INPUT_AGENT_PROPOSALS:-}
if [ -n "$proposals" ]; then
	if [[ $proposals != *$'\n'* && -f $proposals ]]; then
		args+=(--agent-proposals "$proposals")
	else
		printf '%s\n' "$proposals" >"$out/agent-proposals.txt"
		args+=(--agent-proposals "$out/agent-proposals.txt")
	fi
fi

parallel=${INPUT_PARALLEL:-0}
[[ $parallel =~ ^[0-9]+$ ]] || input_error "parallel must be a number (0: one check per CPU), not '$parallel'"
args+=(--parallel "$parallel")

if [ -n "${INPUT_CONTAINERD_ADDRESS:-}" ]; then
	args+=(--containerd-address "$INPUT_CONTAINERD_ADDRESS")
fi

if [ -n "$shard" ]; then
	# A shard signs what it proved and takes no verdict: the merge job does.
	args+=(--shard "$shard")
	# Every shard resolves the same required contexts (the manifest digest
	# binds them), and none of them may be the merge job, which is runmill's
	# own verdict: the merge would wait for itself.
	args+=(--github-job "${INPUT_MERGE_JOB:-verify}")
fi

# Baseline reuse (docs/action.md § Reusing baselines): the earlier runs the
# workflow's actions/cache restored. They are read, never trusted: only a
# bundle that verifies against the signing key's own public key lends a run.
reuse_dir=${INPUT_REUSE_DIR:-}
if [ -n "$reuse_dir" ]; then
	[ -n "${RUNMILL_SIGNING_KEY:-}" ] || input_error "reuse-dir needs signing-key: only runs signed with it are reused"
	mkdir -p "$reuse_dir"
	args+=(--reuse "$reuse_dir")
fi

# The base proof the Restore step put there (docs/action.md § Proving the
# base once per commit): read like reuse-dir, never trusted. Without the
# signing key (a fork's pull request) nothing can verify it: a miss.
proof_dir=${RUNMILL_BASE_PROOF_DIR:-}
if [ -z "$prove" ] && [ -n "$proof_dir" ] && [ -d "$proof_dir" ]; then
	if [ -n "${RUNMILL_SIGNING_KEY:-}" ]; then
		args+=(--reuse "$proof_dir")
	else
		echo "::notice title=runmill::base-proof: no signing-key in this job, so the restored base proof cannot be verified and is not reused; the baselines run"
	fi
fi

case ${INPUT_CHECK_RUN:-false} in
true) args+=(--check-run) ;;
false) ;;
*) input_error "check-run must be true or false" ;;
esac
# The Summarize step writes the job summary (and the comment) once the
# evidence is uploaded; this step writes the outputs and annotations.
case ${INPUT_COMMENT:-false} in
true | false) ;;
*) input_error "comment must be true or false" ;;
esac
args+=(--no-job-summary)

# root writes into the runner user's runtime files: create them first, so
# they stay the runner user's.
: >>"$GITHUB_OUTPUT"
: >>"${GITHUB_STEP_SUMMARY:-/dev/null}"

set +e
sudo -E env PATH="$PATH" "$runmill" "${args[@]}"
rc=$?
set -e
# Hand the run back to the runner user: the upload step reads it, and the
# runner must be able to clean $RUNNER_TEMP.
sudo -n chown -R "$(id -u):$(id -g)" "$out"
if [ -n "$reuse_dir" ]; then
	# This run joins the earlier ones for the next push; the newest 8 are
	# kept (a run that reused one holds its source bundle itself).
	for d in "$out"/runs/*/; do
		[ -f "$d/evidence.json" ] && cp -a "$d" "$reuse_dir/"
	done
	# NUL-separated: the directory comes from a cache any workflow of the
	# pull request can save, so its names are the pull request's.
	find "$reuse_dir" -mindepth 1 -maxdepth 1 -type d -print0 | sort -rz | tail -z -n +9 | xargs -0r rm -rf --
fi
echo "exit-code=$rc" >>"$GITHUB_OUTPUT"
if [ -n "$prove" ] && { [ "$rc" = 0 ] || [ "$rc" = 1 ]; }; then
	# runmill publishes no verdict for a proof (exit 1: some baseline did
	# not pass at the commit; it is signed all the same). The run joins the
	# directory the Save step caches for the pull requests against it.
	bundle=$(find "$out/runs" -mindepth 2 -maxdepth 2 -name evidence.json -type f | head -n 1)
	[ -n "$bundle" ] || { echo "::error title=runmill::the base proof wrote no signed bundle"; exit 3; }
	run=$(dirname "$bundle")
	commit=$(git -c safe.directory='*' -C "$repo" rev-parse --verify "$prove^{commit}")
	# Saved under the branch pushed to: the base_ref of the pull requests
	# that restore it.
	base_proof_outputs "${GITHUB_REF_NAME:-}" "$commit"
	proof_dir=$RUNNER_TEMP/runmill-base-proof
	mkdir -p "$proof_dir"
	cp -a "$run" "$proof_dir/"
	{
		echo "verdict=base-proof"
		echo "bundle-path=$bundle"
		echo "run-id=$(basename "$run")"
	} >>"$GITHUB_OUTPUT"
fi
if [ -n "$shard" ] && [ "$rc" = 0 ]; then
	# runmill publishes no verdict for a shard; the gate reads this one.
	bundle=$(find "$out/runs" -name shard.json -type f | head -n 1)
	{
		echo "verdict=shard"
		echo "bundle-path=$bundle"
		echo "run-id=$(basename "$(dirname "$bundle")")"
	} >>"$GITHUB_OUTPUT"
fi
case $rc in
0 | 1) ;;
*)
	echo "::error title=runmill::runmill verify exited $rc without a verdict (2: usage or configuration, 3: sandbox, git or disk); the message above names the RM code and the fix"
	exit "$rc"
	;;
esac
