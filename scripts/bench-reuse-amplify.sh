#!/usr/bin/env bash
# bench-reuse-amplify.sh OUTDIR [RUNS] [IDS]: issue 23's reuse amplification.
#
# One change whose tests make a large delivery bundle (IDS test ids in its
# candidate's report, default 900 000 — under the 1 000 000 a report may
# hold) is verified first, signed, on a fresh state dir: its baseline (the
# base's four tests) executes. RUNS later changes (default 11), each one new
# test against the same base, are verified one after another on that state
# dir: each reuses the baseline, whose source is the large bundle. Per
# verification it prints
#   wall       seconds of `runmill verify`;
#   reused     seconds from its start to its progress line "(baseline):
#              reused from run …": finding the earlier runs, verifying their
#              bundles, holding the source to this run's record, storing it;
#   runs_bytes bytes under STATE/runs after it (du -sb: a hard-linked body
#              counted once) and the growth over the previous verification.
# Needs root (a private containerd in the state dir). runmill is built into
# OUTDIR unless $RUNMILL names a binary: RUNMILL=/path/to/old/runmill
# measures another build on the same workload.
set -euo pipefail
out=${1:?usage: bench-reuse-amplify.sh OUTDIR [RUNS] [IDS]}
runs=${2:-11}
ids=${3:-900000}
. "$(dirname "$0")/bench-lib.sh"
bench_prologue "$out" "$0"
repo=$out/repo state=$out/state
rm -rf "$repo" "$state" "$out/logs" "$out/key.pem" "$out/trust.json"
mkdir -p "$repo" "$out/logs"
"$runmill" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" --valid-for 24h >/dev/null

cd "$repo"
git init -q -b main
mkdir -p .runmill tests
cat > .runmill/checks.yaml <<'EOF'
checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    timeout: 600s
EOF
# One TAP point per tests/*.t file, then one per line of tests/bulk.list.
cat > tests/run.sh <<'EOF'
set -e
n=$(ls tests/*.t | wc -l)
bulk=0
[ -f tests/bulk.list ] && bulk=$(wc -l < tests/bulk.list)
echo "1..$((n + bulk))"
i=0
for f in tests/*.t; do i=$((i+1)); echo "ok $i $(basename "$f" .t)"; done
[ -f tests/bulk.list ] && awk -v i="$i" '{ i++; print "ok " i " " $0 }' tests/bulk.list
exit 0
EOF
for t in total zero_qty fixture rounding; do echo x > "tests/$t.t"; done
git add -A && git commit -qm base

# verify LABEL CANDIDATE: one signed verification; its progress lines are
# kept in logs/LABEL, each prefixed with the epoch second it arrived.
verify() {
  local s e rc=0 reused before=${last:-0} bytes
  s=$EPOCHREALTIME
  set +e
  "$runmill" verify --repo "$repo" --base main --candidate "$2" --out "$state" --no-github \
    --signing-key "$out/key.pem" 2>&1 >"$out/logs/$1.out" |
    while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$out/logs/$1"
  rc=${PIPESTATUS[0]}
  set -e
  e=$EPOCHREALTIME
  reused=$(awk -v s="$s" '/\(baseline\): reused from run/ { printf "%.2f", $1 - s; exit }' "$out/logs/$1")
  bytes=$(du -sb "$state/runs" | cut -f1)
  last=$bytes
  printf '%-6s %8s %8s %12d %+12d  exit %d\n' "$1" "$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }')" "${reused:--}" "$bytes" "$((bytes - before))" "$rc"
}

git checkout -q -b big main
awk -v n="$ids" 'BEGIN { for (i = 1; i <= n; i++) printf "bulk/suite-%02d/case-%07d-%s\n", i % 50, i, "padding-to-sixty-four-characters-x" }' > tests/bulk.list
git add -A && git commit -qm "a change whose tests make a large bundle"
echo "runmill: $("$runmill" --version 2>/dev/null || echo "$runmill")"
printf '%-6s %8s %8s %12s %12s\n' run wall reused runs_bytes growth
verify big big
for i in $(seq 1 "$runs"); do
  git checkout -q -b "p$i" main
  echo x > "tests/p$i.t"
  git add -A && git commit -qm "push $i"
  verify "p$i" "p$i"
done
ls -l "$state"/runs/*/evidence.json | awk '{ print $5, $9 }' | head -3
