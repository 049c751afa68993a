#!/usr/bin/env bash
# bench-fixed.sh OUTDIR OTHER_RUNMILL [ROUNDS]: runmill's fixed cost per
# verification, this checkout's runmill against OTHER_RUNMILL (a build of
# main, say) side by side in one run, alternating run by run:
#   tap    the trivial verification of bench-verify.sh (one TAP check, a
#          1 000-file repository, warm state dir, no GitHub);
#   shop   the example repository (examples/, a real Go library whose
#          suite takes under 1 s bare) bare, then re-verified by each binary
#          on a warm, signed state dir of its own (the baseline reused).
# The shop state dirs are seeded by one verification each (the first also
# builds the Go toolchain cache, 30-60 s, copied to the second). Prints one
# line per run and a min/median/max summary per workload and binary.
# Needs root (a private containerd per state dir) and go on PATH.
set -euo pipefail
out=${1:?usage: bench-fixed.sh OUTDIR OTHER_RUNMILL [ROUNDS]}
other=${2:?usage: bench-fixed.sh OUTDIR OTHER_RUNMILL [ROUNDS]}
rounds=${3:-7}
. "$(dirname "$0")/bench-lib.sh"
bench_prologue "$out" "$0"
rm -f "$out/times"
tap=$out/tap
if [ ! -d "$tap/.git" ]; then
  rm -rf "$tap"; mkdir -p "$tap/.runmill"
  for d in $(seq -w 0 9); do mkdir -p "$tap/d$d"; for f in $(seq -w 0 99); do echo "$d$f" > "$tap/d$d/f$f.txt"; done; done
  printf 'checks:\n  - id: t\n    run: echo "1..1" > reports/t.tap; echo "ok 1 a" >> reports/t.tap\n    report: {path: reports/t.tap, format: tap}\n' > "$tap/.runmill/checks.yaml"
  printf 'reports/\n' > "$tap/.gitignore"
  (cd "$tap" && git init -qb main && git add -A && git commit -qm base && git checkout -qb cand && echo x > d0/f00.txt && git commit -qam cand && git checkout -q main)
fi
[ -d "$out/shop/.git" ] || bash "$here/examples/make-shop-repo.sh" "$out/shop" >/dev/null
[ -f "$out/key.pem" ] || "$runmill" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" --valid-for 24h >/dev/null
# run LABEL BIN STATE REPO CANDIDATE [FLAGS…]: one verification, timed.
run() {
  local label=$1 bin=$2 state=$3 repo=$4 cand=$5 s e rc=0
  shift 5
  s=$EPOCHREALTIME
  "$bin" verify --repo "$repo" --base main --candidate "$cand" --out "$state" --no-github "$@" >/dev/null 2>"$out/last.log" || rc=$?
  e=$EPOCHREALTIME
  [ "$rc" = 0 ] || { echo "EXIT $rc: $label"; cat "$out/last.log"; }
  awk -v l="$label" -v s="$s" -v e="$e" 'BEGIN { printf "%s\t%.3f\n", l, e - s }' | tee -a "$out/times"
}
bare_shop() {
  local s e
  s=$EPOCHREALTIME
  (cd "$out/shop" && mkdir -p reports && go test -json ./... > reports/unit.json &&
    sh scripts/gofmt-tap.sh > reports/fmt.tap && sh scripts/migrations-tap.sh > reports/migrations.tap)
  e=$EPOCHREALTIME
  awk -v s="$s" -v e="$e" 'BEGIN { printf "shop bare\t%.3f\n", e - s }' | tee -a "$out/times"
}
sign=(--signing-key "$out/key.pem")
# Seed: warm state dirs, the shop's baseline signed once by each binary (a
# reuse key holds the binary's digest, so each signs its own).
[ -d "$out/state-shop-this/toolcache" ] || run "toolcache" "$runmill" "$out/state-shop-this" "$out/shop" good "${sign[@]}"
if [ ! -d "$out/state-shop-other/toolcache" ]; then
  mkdir -p "$out/state-shop-other" && cp -a "$out/state-shop-this/toolcache" "$out/state-shop-other/"
fi
run "seed shop this" "$runmill" "$out/state-shop-this" "$out/shop" good "${sign[@]}"
run "seed shop other" "$other" "$out/state-shop-other" "$out/shop" good "${sign[@]}"
run "seed tap this" "$runmill" "$out/state-tap-this" "$tap" cand
run "seed tap other" "$other" "$out/state-tap-other" "$tap" cand
rm -f "$out/times"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/loads"
for r in $(seq "$rounds"); do
  run "tap this" "$runmill" "$out/state-tap-this" "$tap" cand
  run "tap other" "$other" "$out/state-tap-other" "$tap" cand
  bare_shop
  run "shop reverify this" "$runmill" "$out/state-shop-this" "$out/shop" good "${sign[@]}"
  run "shop reverify other" "$other" "$out/state-shop-other" "$out/shop" good "${sign[@]}"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/loads"
echo "== summary ($rounds rounds; wall-clock seconds min / median / max; this = $runmill, other = $other)"
awk -F '\t' '{ v[$1] = v[$1] " " $2 } END { for (k in v) print k "\t" v[k] }' "$out/times" | sort |
  while IFS=$'\t' read -r k vals; do
    printf '%-22s %s\n' "$k" "$(printf '%s\n' $vals | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f / %.2f / %.2f", a[1], m, a[NR] }')"
  done
