# Sourced by the action's steps. The rule they keep (docs/action.md § Nothing
# from the pull request runs outside the sandbox): runmill runs as root, so
# each step calls the binary the Build step installed by its absolute path,
# handed on as that step's output (not PATH, not GITHUB_ENV: the runner
# user can write both), and checks it first.

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
