#!/usr/bin/env bash
# bench-sigterm.sh OUTDIR [ROUNDS]: how long `runmill verify` takes to end
# after SIGTERM while its check runs (issue 23, docs/benchmarks.md).
#
# A repository whose candidate's one check sleeps for 300 s; each round starts
# `runmill verify` on a fresh state dir, waits until the check's `sleep 300`
# runs, sends SIGTERM and times the process's end (wall seconds). The run must
# end by itself: exit 3, a terminal statement with a run.cancelled event, and
# not the 3 s grace backstop (stderr says "exiting now" when that fires).
# Needs root; with $RUNMILL_CONTAINERD_ADDRESS the runs share that containerd,
# otherwise each starts a private one. runmill is built into OUTDIR unless
# $RUNMILL names a binary.
set -euo pipefail
out=$1 rounds=${2:-5}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=${RUNMILL:-$out/runmill}
[ -n "${RUNMILL:-}" ] || (cd "$(dirname "$0")/.." && go build -o "$bin" ./cmd/runmill)
repo=$out/repo
if [ ! -d "$repo" ]; then
  git init -q "$repo"
  mkdir -p "$repo/.runmill"
  cat > "$repo/.runmill/checks.yaml" <<'YAML'
checks:
  - id: unit
    run: "if [ -e slow ]; then sleep 300; fi; printf '1..1\nok 1 a\n' > reports/r.tap"
    report: {path: reports/r.tap, format: tap}
    timeout: 600s
YAML
  git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm base
  touch "$repo/slow"
  git -C "$repo" add slow
  git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm "the check sleeps"
fi
[ -f "$out/key.pem" ] || "$bin" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" >/dev/null
addr=()
[ -z "${RUNMILL_CONTAINERD_ADDRESS:-}" ] || addr=(--containerd-address "$RUNMILL_CONTAINERD_ADDRESS")
sleeping() {
  local f
  for f in /proc/[0-9]*/cmdline; do
    [ "$( { tr '\0' ' ' < "$f"; } 2>/dev/null)" = "sleep 300 " ] && return 0
  done
  return 1
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$rounds"); do
  st=$(mktemp -d /tmp/rmsig-XXXX)
  "$bin" verify --repo "$repo" --base HEAD~1 --candidate HEAD --out "$st" --signing-key "$out/key.pem" --no-github "${addr[@]}" \
    >/dev/null 2>"$out/stderr-$i" &
  pid=$!
  until sleeping; do sleep 0.05; done
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  rc=0
  wait "$pid" || rc=$?
  t1=$(date +%s.%N)
  cancelled=no
  grep -qs '"run.cancelled"' "$st"/runs/*/terminal-statement.json && cancelled=yes
  backstop=no
  grep -qs "exiting now" "$out/stderr-$i" && backstop=yes
  printf 'round %d: exit %d after %.3f s; run.cancelled recorded: %s; backstop: %s\n' "$i" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$cancelled" "$backstop"
  rm -rf "$st"
done
