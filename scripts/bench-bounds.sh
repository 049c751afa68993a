#!/usr/bin/env bash
# bench-bounds.sh KIND DIR [N]: the repositories of issue 23's resource
# bounds (docs/benchmarks.md § Bounds on repository content), built with git
# plumbing so that none of their files is ever written:
#   harness DIR N  a base whose check declares `harness: [conftest.py]` over N
#                  files named conftest.py (N/1000 directories of 1 000), and
#                  a candidate editing every one of them;
#   expand DIR     a candidate adding 30 references to one 100 MiB blob of
#                  zeros: about 0.1 MB of objects expanding to 3.1 GB;
#   paths DIR      a candidate adding 1 000 000 paths (1 000 directories of
#                  1 000 references to one blob): about 0.1 MB of objects.
# Each prints "BASE CANDIDATE" on stdout. Then, for example:
#   time runmill evidence expect --repo DIR --base BASE --candidate CANDIDATE --out "$(mktemp -d)"
set -euo pipefail
kind=$1 dir=$2 n=${3:-0}
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@runmill.invalid GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@runmill.invalid
git init -q -b main "$dir"
g() { git -C "$dir" "$@"; }
blob() { printf '%s' "$1" | g hash-object -w --stdin; }
# fanout NAME_FORMAT COUNT MODE TYPE ID: a tree of COUNT entries, all ID.
fanout() {
  awk -v f="$1" -v n="$2" -v m="$3" -v t="$4" -v id="$5" 'BEGIN { for (i = 0; i < n; i++) printf "%s %s %s\t" f "\n", m, t, id, i }' | g mktree
}
policy='checks:
  - id: unit
    run: "true"
    harness: [conftest.py]
'
runmill=$(printf '%s\n' "040000 tree $(printf '100644 blob %s\tchecks.yaml\n' "$(blob "$policy")" | g mktree)	.runmill" )
root() { printf '%s\n' "$runmill" "$@" | g mktree; }
commit() { g commit-tree "$1" ${2:+-p "$2"} -m "$3"; }
base=$(commit "$(root)" "" base)
case $kind in
harness)
  top() { awk -v id="$1" -v n=$((n / 1000)) 'BEGIN { for (i = 0; i < n; i++) printf "040000 tree %s\tpkg%04d\n", id, i }'; }
  sub_a=$(printf '100644 blob %s\tconftest.py\n' "$(blob a)" | g mktree)
  sub_b=$(printf '100644 blob %s\tconftest.py\n' "$(blob b)" | g mktree)
  pkg_a=$(fanout 'sub%03d' 1000 040000 tree "$sub_a")
  pkg_b=$(fanout 'sub%03d' 1000 040000 tree "$sub_b")
  base=$(commit "$(printf '%s\n' "$runmill" "$(top "$pkg_a")" | g mktree)" "" base)
  cand=$(commit "$(printf '%s\n' "$runmill" "$(top "$pkg_b")" | g mktree)" "$base" candidate)
  ;;
expand)
  zeros=$(head -c $((100 << 20)) /dev/zero | g hash-object -w --stdin)
  cand=$(commit "$(root "040000 tree $(fanout 'zeros%02d' 30 100644 blob "$zeros")	big")" "$base" candidate)
  ;;
paths)
  d=$(fanout 'f%03d' 1000 100644 blob "$(blob x)")
  cand=$(commit "$(root "040000 tree $(fanout 'd%03d' 1000 040000 tree "$d")	many")" "$base" candidate)
  ;;
*)
  echo "usage: bench-bounds.sh harness|expand|paths DIR [N]" >&2
  exit 2
  ;;
esac
g update-ref refs/heads/main "$cand"
echo "$base $cand"
