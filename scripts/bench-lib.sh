# bench-lib.sh, sourced by the bench-*.sh scripts that drive a runmill
# binary: one prologue, so each measures the same way.
#
# bench_prologue OUTDIR SCRIPT: sets here (the checkout SCRIPT lives in),
# out (OUTDIR, created, absolute) and runmill ($RUNMILL, or a build of this
# checkout into OUTDIR), and pins git's configuration and identity so the
# host's settings cannot change a measured repository.
bench_prologue() {
  here=$(cd "$(dirname "$2")/.." && pwd)
  mkdir -p "$1"
  out=$(cd "$1" && pwd)
  runmill=${RUNMILL:-$out/runmill}
  [ -x "$runmill" ] || (cd "$here" && go build -o "$runmill" ./cmd/runmill)
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid
}
