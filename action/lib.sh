# Sourced by the action's steps. The rule they keep (docs/action.md § Nothing
# from the pull request runs outside the sandbox): runmill runs as root, so
# each step calls the binary the Build step installed by its absolute path,
# handed on as that step's output (not PATH, not GITHUB_ENV: the runner
# user can write both), and checks it first.

# input_error MESSAGE: an input of the action is invalid or missing
# (RM-ACTIONS-003); the step fails with exit 2.
input_error() {
	echo "::error title=runmill (RM-ACTIONS-003)::$*"
	exit 2
}

# installed_runmill prints $RUNMILL_BIN once it is a regular file owned by
# root that only root can write, on a path of root-owned directories only
# root can write, without a symlink anywhere on it; else it says why on
# stderr (the runner reads workflow commands there too; stdout is the
# caller's).
installed_runmill() {
	local bin=${RUNMILL_BIN:-} p owner mode type
	if [[ $bin != /* ]]; then
		echo "::error title=runmill (RM-ACTIONS-002)::no installed runmill: the Build runmill step did not run or failed (its output runmill is empty)" >&2
		return 2
	fi
	if [ "$(realpath -e -- "$bin" 2>/dev/null)" != "$bin" ]; then
		echo "::error title=runmill (RM-ACTIONS-002)::the installed runmill $bin is missing or reached through a symlink: only the path the Build runmill step installed is run" >&2
		return 2
	fi
	p=$bin
	while :; do
		read -r owner mode type < <(stat -c '%u %a %F' -- "$p")
		if [ "$owner" != 0 ] || ((8#$mode & 8#022)) || { [ "$p" = "$bin" ] && [ "$type" != "regular file" ]; } || { [ "$p" != "$bin" ] && [ "$type" != directory ]; }; then
			echo "::error title=runmill (RM-ACTIONS-002)::$p is owned by uid $owner with mode $mode: runmill runs as root only from a file and directories that root owns and only root can write" >&2
			return 2
		fi
		[ "$p" = / ] && break
		p=$(dirname -- "$p")
	done
	printf '%s\n' "$bin"
}

# The Go toolchain runmill is built with when no release binary is
# installed (issue 27): the release's own module golang.org/toolchain, as
# the go command's toolchain switch fetches it from the module proxy,
# checked against the SHA-256 pinned in go-toolchain.sha256 (taken with
# `go mod download`, which verified it against sum.golang.org), unpacked
# into a directory of the step's own and run by absolute path. It is never
# put on PATH, so the job's later steps and its checks keep the Go the
# workflow chose.
go_toolchain_version() {
	awk 'NR == 1 { sub(/.*@v0\.0\.1-/, "", $2); sub(/\.linux-.*/, "", $2); print $2 }' "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sha256"
}

# goarch prints this machine's GOARCH (amd64 or arm64, the architectures of
# GitHub's Linux runners and of the release); else it says so and fails.
goarch() {
	case $(uname -m) in
	x86_64 | amd64) echo amd64 ;;
	aarch64 | arm64) echo arm64 ;;
	*)
		echo "::error title=runmill (RM-ACTIONS-002)::runmill is released and built for linux/amd64 and linux/arm64; this runner is $(uname -m)" >&2
		return 2
		;;
	esac
}

# sha256_is FILE HEX: the file's SHA-256 is HEX.
sha256_is() {
	[ "$(sha256sum -- "$1" | cut -d' ' -f1)" = "$2" ]
}

# fetch URL OUT: downloads without credentials (a public release, the module
# proxy), bounded in size; the caller verifies what arrived.
fetch() {
	curl -fsSL --retry 3 --max-filesize 536870912 -o "$2" -- "$1"
}

# private_go DIR CACHE prints the go binary of the pinned toolchain, unpacked
# under DIR; the module's zip is taken from CACHE when it is there and
# matches the pin (CACHE may come from actions/cache, so it is checked like a
# download), else downloaded into CACHE.
private_go() {
	local dir=$1 cache=$2 arch version name want zip proxy IFS=$' \t\n,|'
	arch=$(goarch) || return 2
	version=$(go_toolchain_version)
	name="v0.0.1-$version.linux-$arch"
	want=$(awk -v n="golang.org/toolchain@$name.zip" '$2 == n { print $1 }' "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sha256")
	zip="$cache/go/golang.org-toolchain@$name.zip"
	mkdir -p "$cache/go"
	if ! { [ -f "$zip" ] && sha256_is "$zip" "$want"; }; then
		rm -f -- "$zip"
		# The job's module proxies in order (a file:// one too), as the go
		# command tries them, else the public one.
		local p got=""
		for p in ${GOPROXY:-https://proxy.golang.org}; do
			[[ $p == https://* || $p == http://* || $p == file://* ]] || continue
			proxy=${p%/}
			fetch "$proxy/golang.org/toolchain/@v/$name.zip" "$zip.part" 2>/dev/null || continue
			got=$(sha256sum -- "$zip.part" | cut -d' ' -f1)
			break
		done
		if [ -z "$got" ]; then
			echo "::error title=runmill (RM-ACTIONS-002)::could not download Go $version ($arch) from the module proxy (GOPROXY=${GOPROXY:-https://proxy.golang.org}): building runmill needs it" >&2
			return 2
		fi
		if [ "$got" != "$want" ]; then
			echo "::error title=runmill (RM-ACTIONS-004)::the Go $version toolchain from $proxy has SHA-256 $got, not the $want pinned in the action (go-toolchain.sha256): refused" >&2
			rm -f -- "$zip.part"
			return 2
		fi
		echo "runmill: Go $version ($arch) from $proxy matches the action's pin" >&2
		mv -- "$zip.part" "$zip"
	fi
	unzip -q "$zip" -d "$dir"
	printf '%s\n' "$dir/golang.org/toolchain@$name/bin/go"
}

# build_runmill GO SRC VERSION GOARCH OUT: the one build of runmill — the
# release workflow's and the action's source fallback — static, with the
# version stamped where the CLI reads it, and reproducible: no VCS stamp
# (the release commit adds only the checksums, which the binary must not
# depend on), paths trimmed, nothing from the job's GOFLAGS or go env file.
build_runmill() {
	local go=$1 src=$2 version=$3 arch=$4 out=$5
	(cd "$src" && GOWORK=off GOENV=off GOTOOLCHAIN=local GOFLAGS="-mod=readonly -modcacherw" \
		CGO_ENABLED=0 GOOS=linux GOARCH="$arch" \
		"$go" build -trimpath -buildvcs=false -ldflags "-s -w -X github.com/runmill/verify/internal/cli.Version=$version" -o "$out" ./cmd/runmill)
}

# install_root_owned BIN: installs BIN as runmill, root-owned and mode 0755,
# in a fresh directory per job under a root-owned one, so the runner user
# (and anything it runs) cannot replace the binary root runs; writes the
# step outputs runmill and home. The gate step removes the directory.
install_root_owned() {
	local root=/var/lib/runmill-action home
	sudo -n install -d -o root -g root -m 0755 "$root"
	home=$(sudo -n mktemp -d "$root/job.XXXXXXXX")
	sudo -n chmod 0755 "$home"
	home=$(realpath -e "$home")
	echo "home=$home" >>"$GITHUB_OUTPUT"
	sudo -n install -o root -g root -m 0755 "$1" "$home/runmill"
	echo "runmill=$home/runmill" >>"$GITHUB_OUTPUT"
	RUNMILL_BIN="$home/runmill" installed_runmill >/dev/null
	"$home/runmill" --version
}

# fork_pull_request: this is a pull_request run of a pull request from
# another repository — one GitHub gives no repository or organisation
# variables, no secrets (other than a read-only GITHUB_TOKEN), so every
# input the workflow fills from vars.* or secrets.* arrives empty.
fork_pull_request() {
	[ "${GITHUB_EVENT_NAME:-}" = pull_request ] && [ -n "${RUNMILL_EVENT_HEAD_REPO:-}" ] &&
		[ "$RUNMILL_EVENT_HEAD_REPO" != "${GITHUB_REPOSITORY:-}" ]
}

# fork_cause WHAT prints why WHAT (an input) is empty on a fork pull request
# and the safe patterns that give it its value (docs/action.md § Fork pull
# requests).
fork_cause() {
	printf '%s is empty because this is a pull request from the fork %s: GitHub gives pull_request workflows of forks no variables or secrets. To verify fork pull requests with them, run the verification from the default branch: on pull_request_target with the base checked out (the pull request fetched as data, never run outside the sandbox), or in a workflow_run job after the pull_request run (docs/action.md § Fork pull requests)' "$1" "$RUNMILL_EVENT_HEAD_REPO"
}

# retention_output: the evidence artifact's retention-days (the Upload
# step's input, as this step's output): retention-days when given (1 to 90,
# GitHub's range), else 1 day for a shard job's bundle (the merge job reads
# it minutes later; a re-run replaces it), else empty, the repository's
# default.
retention_output() {
	local days=${INPUT_RETENTION_DAYS:-}
	if [ -n "$days" ] && ! { [[ $days =~ ^[1-9][0-9]?$ ]] && [ "$days" -le 90 ]; }; then
		input_error "retention-days must be a number of days from 1 to 90, or empty for the repository's default, not '$days'"
	fi
	if [ -z "$days" ] && [ -n "${INPUT_SHARD:-}" ]; then
		days=1
	fi
	echo "retention-days=$days" >>"$GITHUB_OUTPUT"
}

# base_proof_outputs BRANCH COMMIT writes the actions/cache key of the base
# proof of COMMIT on BRANCH, the restore-keys prefix of the branch's newest
# proof, and the directory the proof is kept in, as step outputs (docs/
# action.md § Proving the base once per commit). A cache key may not hold
# a comma, and a branch name may: anything but the characters of ordinary
# branch names becomes "_".
base_proof_outputs() {
	local branch
	branch=$(printf '%s' "${1:-none}" | tr -c 'A-Za-z0-9._/-' '_')
	{
		echo "base-proof-key=runmill-base-proof-$branch-$2"
		echo "base-proof-restore-keys=runmill-base-proof-$branch-"
		echo "base-proof-dir=$RUNNER_TEMP/runmill-base-proof"
	} >>"$GITHUB_OUTPUT"
}
