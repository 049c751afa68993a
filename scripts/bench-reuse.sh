#!/usr/bin/env bash
# bench-reuse.sh OUTDIR [ROUNDS]: issue 16's re-verification figure, side by
# side in one run: the Go module of bench-verify.sh, its check command bare
# on the host (warm host caches) against `runmill verify` of a NEW candidate
# (one more push against the same base) each round, signed, on the state dir
# of the earlier runs — the baseline reused from them — alternating, ROUNDS
# times. Also a signed first verification on a fresh state dir holding the
# toolchain cache, and one with --no-reuse for comparison. Needs root (a
# private containerd), go and bc on PATH; runmill is built into OUTDIR
# unless $RUNMILL is set.
set -euo pipefail
out=${1:?usage: bench-reuse.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
runmill=${RUNMILL:-$out/runmill}
[ -x "$runmill" ] || (cd "$here" && go build -o "$runmill" ./cmd/runmill)
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid
rm -f "$out/key.pem" "$out/trust.json"
"$runmill" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" --valid-for 24h >/dev/null

# The Go module of bench-verify.sh: 8 packages whose tests hash for real.
gomod=$out/gowork
bash "$here/scripts/bench-gomodule.sh" "$gomod"
cd "$gomod"
# push N: one more function on a branch of its own off main.
newpush() { git -C "$gomod" checkout -q main && git -C "$gomod" checkout -qb "push$1" &&
  printf '\nfunc Extra%s() int { return %s }\n' "$1" "$1" >> "$gomod/p1/p.go" && git -C "$gomod" commit -qam "push $1" && git -C "$gomod" checkout -q main; }

secs() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; echo "$(date +%s.%N) - $s" | bc; }
verify() { "$runmill" verify --repo "$gomod" --base main --candidate "$1" --out "$2" --no-github --signing-key "$out/key.pem" "${@:3}"; }
bare_go() { (cd "$gomod" && go test -count=1 -json ./... >/dev/null); }
reused() { grep -c '"reused_from"' "$(ls -d "$1"/runs/*/ | tail -1)statement.json" || true; }

state=$out/state-reuse
rm -rf "$state" "$out/state-first" "$out/state-noreuse"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
bare_go # warm host caches
# The toolchain cache is made once per machine and toolchain; $RUNMILL_TOOLCACHE
# (a state dir's toolcache/) saves building it here.
mkdir -p "$state"
if [ -n "${RUNMILL_TOOLCACHE:-}" ]; then cp -a "$RUNMILL_TOOLCACHE" "$state/"; fi
newpush 0
printf '%-28s %s\n' "verify push0, first (state)" "$(secs verify push0 "$state")  reused=$(reused "$state")"
mkdir -p "$out/state-noreuse" && cp -a "$state/toolcache" "$out/state-noreuse/"
for r in $(seq "$rounds"); do
  newpush "$r"
  printf '%-28s %s\n' "bare go test" "$(secs bare_go)"
  printf '%-28s %s\n' "verify push$r, reused" "$(secs verify "push$r" "$state")  reused=$(reused "$state")"
  printf '%-28s %s\n' "verify push$r, --no-reuse" "$(secs verify "push$r" "$out/state-noreuse" --no-reuse)  reused=$(reused "$out/state-noreuse")"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
last=$(ls -d "$state"/runs/*/ | tail -1)
echo "last reusing run: $(grep -ho '"duration_ms":[0-9]*' "$last/statement.json" | tr '\n' ' ')"
"$runmill" evidence verify --help >/dev/null 2>&1 || true
