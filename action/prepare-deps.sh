#!/usr/bin/env bash
# Step "Prepare dependencies" of action.yml (opt-in: prepare-dependencies).
# It makes, outside verification, an install for each commit verify will
# check out (base, merge base, candidate) and imports it with
# `runmill deps import`, which verifies it against that commit's lockfile
# (docs/dependencies.md). This step has the network and runs the package
# manager on the pull request's lockfile, so nothing of the pull request
# may configure it or run beside it (docs/action.md § Nothing from the pull
# request runs outside the sandbox):
#   - the package manager sees only the commit's manifests (package.json
#     and package-lock.json; go.mod, go.sum and the tree's other go.mod
#     files), copied from git into an empty directory, never a checkout;
#   - every setting that names a program or a config file is fixed here, in
#     the environment, which also binds the npm that pacote starts inside a
#     cloned git dependency (whose own .npmrc it reads); npm's user and
#     global configs are empty files; Go runs with GOTOOLCHAIN=local,
#     GOWORK=off, GOENV=off, fixed GOFLAGS and the job's proxy settings;
#   - it runs as a throwaway uid with no groups, no capabilities and
#     no_new_privs (no sudo), in its own PID namespace, so nothing it starts
#     outlives it, and it can write neither the installed runmill, nor
#     GITHUB_ENV / GITHUB_PATH / GITHUB_OUTPUT, nor the state directory;
#   - install scripts stay off unless dependency-scripts is true, which a
#     job that holds the signing key refuses.
# Only `runmill deps import` (root) reads what the package manager wrote,
# and it verifies it against the commit's lockfile before anything uses it.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/lib.sh"
runner_error() {
	echo "::error title=runmill (RM-ACTIONS-002)::$*"
	exit 2
}

base=${INPUT_BASE:-${RUNMILL_EVENT_BASE_SHA:-${RUNMILL_MERGE_GROUP_BASE_SHA:-}}}
candidate=${INPUT_CANDIDATE:-${RUNMILL_EVENT_HEAD_SHA:-${RUNMILL_MERGE_GROUP_HEAD_SHA:-}}}
if [ -z "$base" ] || [ -z "$candidate" ]; then
	input_error "no base or candidate commit: pass the base and candidate inputs"
fi
repo=${GITHUB_WORKSPACE:-$PWD}
git() { command git -c safe.directory='*' "$@"; }

scripts=true
case "${INPUT_DEPENDENCY_SCRIPTS:-false}" in
true)
	# Install scripts are programs the pull request's lockfile chooses.
	# Confined as below they cannot reach the key, but in the job that
	# signs nothing of the pull request runs outside the sandbox at all.
	if [ "${RUNMILL_SIGNING_KEY_SET:-}" = true ]; then
		input_error "dependency-scripts: true runs install scripts the pull request's lockfile chooses, and this job holds signing-key: refused. Run them in a job without signing-key (prepare-dependencies with dependency-scripts: true there) and verify there unsigned, or keep dependency-scripts false in the signing job (docs/action.md § Install scripts)"
	fi
	;;
false) scripts=false ;;
*) input_error "dependency-scripts must be true or false, not '${INPUT_DEPENDENCY_SCRIPTS}'" ;;
esac

strategies=()
for strategy in ${INPUT_PREPARE_DEPENDENCIES//,/ }; do
	case "$strategy" in
	npm | go-modules) strategies+=("$strategy") ;;
	true) input_error "prepare-dependencies lists strategies (npm, go-modules), not 'true'" ;;
	*) input_error "prepare-dependencies: unknown strategy '$strategy' (npm, go-modules); other package managers have no strategy" ;;
	esac
done

runmill=$(installed_runmill) || exit 2
mergebase=$(git -C "$repo" merge-base "$base" "$candidate")

# The state directory verify will use: a step output (verify reads it as
# RUNMILL_PREPARED_OUT), which no later step can change.
out=${RUNMILL_CACHES_OUT:-$(mktemp -d "$RUNNER_TEMP/runmill.XXXXXX")}
echo "state-dir=$out" >>"$GITHUB_OUTPUT"

# The tools, resolved now, by absolute path. npm must be npm's own CLI: a
# corepack shim would let package.json's packageManager choose the npm.
abs() { # a program on PATH (not a function such as git above), resolved
	local p
	p=$(type -P "$1") && readlink -f -- "$p"
}
git_bin=$(abs git)
for s in "${strategies[@]}"; do
	case $s in
	npm)
		node_bin=$(abs node) || runner_error "prepare-dependencies: npm needs node on PATH (actions/setup-node)"
		npm_cli=$(abs npm) || runner_error "prepare-dependencies: npm is not on PATH (actions/setup-node)"
		[[ $npm_cli == */bin/npm-cli.js ]] || runner_error "npm on PATH is $npm_cli, not npm's own bin/npm-cli.js (a corepack shim would let the pull request's packageManager field choose the npm that runs): put Node's own npm first on PATH"
		node_gyp="$(dirname "$(dirname "$npm_cli")")/node_modules/node-gyp/bin/node-gyp.js"
		[ -f "$node_gyp" ] || node_gyp=/bin/false
		;;
	go-modules)
		go_bin=$(abs go) || runner_error "prepare-dependencies: go-modules needs go on PATH (actions/setup-go)"
		;;
	esac
done
sudo -n sh -c 'command -v unshare && command -v setpriv' >/dev/null ||
	runner_error "prepare-dependencies runs the package manager confined with unshare and setpriv (util-linux), and root has neither: install util-linux"

# The confinement: a directory root owns (so the throwaway uid can replace
# none of its entries, such as a directory root later imports from by name)
# holding the directories that uid owns. The uid is random in [2^30, 2^31):
# no account, no file and no other process has it (concurrent jobs on one
# machine draw their own).
prep=$(sudo -n mktemp -d "$(dirname "$runmill")/prepare.XXXXXXXX")
stage=$(mktemp -d "$RUNNER_TEMP/runmill-stage.XXXXXX")
trap 'sudo -n rm -rf -- "$prep"; rm -rf -- "$stage"' EXIT
uid=$((0x40000000 + $(od -An -N4 -tu4 /dev/urandom) % 0x40000000))

sudo -n chmod 0711 "$prep"
sudo -n install -m 0444 /dev/null "$prep/user.npmrc"
sudo -n install -m 0444 /dev/null "$prep/global.npmrc"
sudo -n install -d -o "$uid" -g "$uid" -m 0700 "$prep/home" "$prep/tmp" "$prep/npm-cache" "$prep/gomod" "$prep/gocache" "$prep/gopath"

# The job's PATH, absolute entries only (the working directory holds the
# pull request's manifests).
safe_path=
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do [[ $d == /* ]] && safe_path+="${safe_path:+:}$d"; done
common=(PATH="$safe_path" HOME="$prep/home" TMPDIR="$prep/tmp" LANG=C.UTF-8 GIT_TERMINAL_PROMPT=0)
for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
	[ -n "${!v:-}" ] && common+=("$v=${!v}")
done

# confined DIR ENV... -- runs as the throwaway uid in DIR with only ENV.
confined() {
	local dir=$1
	shift
	sudo -n unshare --pid --fork --kill-child --mount-proc -- \
		setpriv --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- \
		env -i -C "$dir" "${common[@]}" "$@"
}

# stage_dir COMMIT NAME: an empty directory the uid owns, holding what
# $stage holds (copied by root, so nothing in it is a link the runner made).
stage_dir() {
	local work="$prep/$2-$1"
	sudo -n install -d -o "$uid" -g "$uid" -m 0700 "$work"
	sudo -n cp -R -- "$stage/." "$work/"
	sudo -n chown -R "$uid:$uid" "$work"
	rm -rf -- "$stage" && mkdir -- "$stage"
	printf '%s\n' "$work"
}

# blob COMMIT PATH: the file's bytes at the commit, or nothing.
blob() { git -C "$repo" cat-file blob "$1:$2" 2>/dev/null; }
isfile() { [ "$(git -C "$repo" cat-file -t "$1:$2" 2>/dev/null)" = blob ]; }

npm_env=(
	npm_config_userconfig="$prep/user.npmrc"
	npm_config_globalconfig="$prep/global.npmrc"
	npm_config_cache="$prep/npm-cache"
	npm_config_git="$git_bin"
	npm_config_script_shell=/bin/sh
	npm_config_shell=/bin/sh
	npm_config_node_gyp="${node_gyp:-/bin/false}"
	npm_config_editor=/bin/false
	npm_config_viewer=/bin/false
	npm_config_browser=false
	npm_config_init_module="$prep/user.npmrc"
	npm_config_node_options=
	npm_config_ignore_scripts=$([ "$scripts" = true ] && echo false || echo true)
	npm_config_audit=false
	npm_config_fund=false
	npm_config_update_notifier=false
)
for v in npm_config_registry NPM_CONFIG_REGISTRY; do
	[ -n "${!v:-}" ] && npm_env+=("npm_config_registry=${!v}")
done

# npm_settings COMMIT: the few settings of the commit's .npmrc that only
# change how npm resolves the same lockfile (no program, path or URL),
# so an honest project that needs legacy-peer-deps still installs.
npm_settings() {
	local line
	while IFS= read -r line; do
		if [[ $line =~ ^[[:space:]]*(legacy-peer-deps|strict-peer-deps|engine-strict|install-strategy|omit|include)[[:space:]]*=[[:space:]]*([a-z,]+)[[:space:]]*$ ]]; then
			printf 'npm_config_%s=%s\n' "${BASH_REMATCH[1]//-/_}" "${BASH_REMATCH[2]}"
		fi
	done < <(isfile "$1" .npmrc && blob "$1" .npmrc)
}

if [[ " ${strategies[*]} " == *" go-modules "* ]]; then
	# The job's module settings (its environment and go env -w), read
	# outside any module; the repository has no say in them.
	go_names=(GOPROXY GOSUMDB GONOSUMDB GONOPROXY GOPRIVATE GOINSECURE GOVCS)
	mapfile -t go_values < <(cd / && GOTOOLCHAIN=local GOFLAGS= "$go_bin" env "${go_names[@]}")
	go_env=(GOMODCACHE="$prep/gomod" GOCACHE="$prep/gocache" GOPATH="$prep/gopath" GOTOOLCHAIN=local GOWORK=off GOENV=off GOFLAGS=-modcacherw)
	for i in "${!go_names[@]}"; do go_env+=("${go_names[$i]}=${go_values[$i]:-}"); done
fi

# Commit by commit, the candidate last: whatever its install leaves cannot
# reach an earlier commit's, which is imported (copied by root) by then.
for c in $(printf '%s\n' "$base" "$mergebase" "$candidate" | awk '!seen[$0]++'); do
	for strategy in "${strategies[@]}"; do
		case "$strategy" in
		npm)
			isfile "$c" package-lock.json || continue
			blob "$c" package.json >"$stage/package.json" || input_error "commit $c has package-lock.json but no package.json"
			blob "$c" package-lock.json >"$stage/package-lock.json"
			work=$(stage_dir "$c" npm)
			mapfile -t settings < <(npm_settings "$c")
			echo "runmill: npm ci for $c (scripts $([ "$scripts" = true ] && echo on || echo off), confined)"
			confined "$work" "${settings[@]}" "${npm_env[@]}" "$node_bin" "$npm_cli" ci --no-audit --no-fund
			sudo -E env PATH="$PATH" "$runmill" deps import --repo "$repo" --commit "$c" --from "$work" --out "$out"
			;;
		go-modules)
			isfile "$c" go.mod || continue
			# go.mod, go.sum and every other go.mod of the tree, so a
			# replace by a directory of the repository resolves; nothing else.
			while IFS= read -r -d '' entry; do
				meta=${entry%%$'\t'*} path=${entry#*$'\t'}
				read -r mode type obj <<<"$meta"
				[[ $type == blob && ($mode == 100644 || $mode == 100755) ]] || continue
				[[ $path == go.mod || $path == */go.mod || $path == go.sum ]] || continue
				[[ /$path/ == */../* || /$path/ == */./* ]] && continue
				mkdir -p -- "$stage/$(dirname -- "$path")"
				git -C "$repo" cat-file blob "$obj" >"$stage/$path"
			done < <(git -C "$repo" ls-tree -r -z --full-tree "$c")
			work=$(stage_dir "$c" go)
			echo "runmill: go mod download for $c (GOTOOLCHAIN=local, confined)"
			if ! confined "$work" "${go_env[@]}" "$go_bin" mod download; then
				echo "::error title=runmill::go mod download failed for $c: the message above says why (with GOTOOLCHAIN=local a go.mod that needs a newer Go than $(cd / && GOTOOLCHAIN=local "$go_bin" env GOVERSION) fails here as it would in the sandbox: set that Go up with actions/setup-go before the action)"
				exit 1
			fi
			sudo -E env PATH="$PATH" "$runmill" deps import --strategy go-modules --repo "$repo" --commit "$c" --from "$prep/gomod" --out "$out"
			;;
		esac
	done
done
