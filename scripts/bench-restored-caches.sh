#!/usr/bin/env bash
# bench-restored-caches.sh OUTDIR [ROUNDS]: issue 26's "caches outlive the
# job", side by side in one run on the Go module of bench-gomodule.sh,
# interleaved round by round (default 3 rounds), each verification the first
# of a new candidate (both sides run), signed:
#   bare       the check's command once on the host, warm host caches;
#   restored   a job's empty state dir into which the saved caches are
#              restored (the zstd tar actions/cache would download, unpacked),
#              `runmill cache vet`, `runmill verify`, `runmill cache seal` —
#              the Action's steps;
#   warm       `runmill verify` on a state dir that already holds the
#              toolchain cache (a copy, nothing vetted or sealed): what the
#              restored job would cost if restoring, vetting and sealing were
#              free;
#   nothing    `runmill verify` on an empty state dir (nothing restored: the
#              toolchain cache is built).
# The restored job's own steps (unpack, vet, seal) are timed apart too
# (logs/steps).
# Once, before the rounds: a verification on an empty state dir whose sealed
# caches are archived as actions/cache archives them (tar | zstd), and the
# sizes on disk and archived.
# Needs root (runmill starts a private containerd in each state dir), go and
# zstd. runmill is built into OUTDIR unless $RUNMILL names a binary.
set -euo pipefail
out=${1:?usage: bench-restored-caches.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
. "$(dirname "$0")/bench-lib.sh"
bench_prologue "$out" "$0"
rm -rf "$out"/state-* "$out/logs" "$out/times" "$out/caches.tar.zst" "$out/key.pem" "$out/trust.json"
mkdir -p "$out/logs"
"$runmill" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" --valid-for 24h >/dev/null
bash "$here/scripts/bench-gomodule.sh" "$out/go"
repo=$out/go

push() {
  git -C "$repo" checkout -q main && git -C "$repo" checkout -qb "push$1"
  printf '\nfunc Extra%s() int { return %s }\n' "$1" "$1" >>"$repo/p1/p.go"
  git -C "$repo" commit -qam "push $1" && git -C "$repo" checkout -q main
}
verify() { # STATE CANDIDATE LABEL
  "$runmill" verify --repo "$repo" --base main --candidate "$2" --out "$1" --no-github --signing-key "$out/key.pem" \
    >"$out/logs/$3.out" 2>"$out/logs/$3"
}
restored() { # STATE CANDIDATE LABEL: the Action's restore, vet, verify, seal
  local t0 t1 t2 t3 t4
  mkdir -p "$1"
  t0=$EPOCHREALTIME
  zstd -dc "$out/caches.tar.zst" | tar -xf - -C "$1"
  t1=$EPOCHREALTIME
  "$runmill" cache vet --out "$1" --signing-key "$out/key.pem" 2>>"$out/logs/$3.vet"
  t2=$EPOCHREALTIME
  verify "$@"
  t3=$EPOCHREALTIME
  "$runmill" cache seal --out "$1" --signing-key "$out/key.pem" 2>>"$out/logs/$3.vet"
  t4=$EPOCHREALTIME
  awk -v l="$3" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" \
    'BEGIN { printf "%s: unpack %.2f s, vet %.2f s, verify %.2f s, seal %.2f s\n", l, b - a, c - b, d - c, e - d }' | tee -a "$out/logs/steps"
}
warm_state() { mkdir -p "$1/toolcache" && cp -a "$out/state-seed/toolcache/go" "$1/toolcache/"; }
bare() { (cd "$repo" && go test -count=1 -json ./... >/dev/null); }
measure() { # KIND CMD…
  local k=$1 s e rc=0
  shift
  s=$EPOCHREALTIME
  "$@" || rc=$?
  e=$EPOCHREALTIME
  local t
  t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }')
  [ "$rc" = 0 ] || t="$t EXIT $rc"
  printf '%s\t%s\n' "$k" "$t" >>"$out/times"
  printf '%-10s %s  (load %s)\n' "$k" "$t" "$(cut -d' ' -f1 /proc/loadavg)"
}

bare # warm host caches
push 0
measure seed verify "$out/state-seed" push0 seed
"$runmill" cache seal --out "$out/state-seed" --signing-key "$out/key.pem" 2>"$out/logs/seed.seal"
(cd "$out/state-seed" && tar -cf - toolcache/go | zstd -q -T0 -3 >"$out/caches.tar.zst")
echo "toolchain cache: $(du -sb "$out/state-seed/toolcache/go" | cut -f1) bytes on disk, $(stat -c %s "$out/caches.tar.zst") bytes as tar.zst"
for r in $(seq "$rounds"); do
  push "$r"
  measure bare bare
  measure restored restored "$out/state-r$r" "push$r" "restored-$r"
  grep -q '0 refused' "$out/logs/restored-$r.vet" || echo "WARNING: round $r's vet refused an entry (logs/restored-$r.vet)"
  grep -q 'prepared the Go toolchain cache' "$out/logs/restored-$r" && echo "WARNING: round $r built the toolchain cache though it was restored"
  warm_state "$out/state-w$r" # before the clock: the machine had it
  measure warm verify "$out/state-w$r" "push$r" "warm-$r"
  measure nothing verify "$out/state-n$r" "push$r" "nothing-$r"
  rm -rf "$out/state-r$r" "$out/state-w$r" "$out/state-n$r"
done
echo
echo "== wall seconds (min med max) and over bare (each round's own bare), $rounds rounds, $(nproc) cores"
awk -F '\t' '
  $1 == "bare" { b = $2 + 0; bare[++nb] = b; next }
  $1 == "seed" { next }
  { v[$1, ++n[$1]] = $2 + 0; d[$1, n[$1]] = $2 - b; kinds[$1] = 1 }
  function med(a, k, m,   i, j, t, x) { for (i = 1; i <= m; i++) x[i] = a[k, i]; for (i = 2; i <= m; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t } return sprintf("%.2f %.2f %.2f", x[1], (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2, x[m]) }
  END {
    for (i = 1; i <= nb; i++) bb["bare", i] = bare[i]
    printf "%-9s %-20s %s\n", "bare", med(bb, "bare", nb), ""
    for (k in kinds) printf "%-9s %-20s bare + %s\n", k, med(v, k, n[k]), med(d, k, n[k])
  }' "$out/times"
