#!/usr/bin/env bash
# bench-verify.sh OUTDIR [ROUNDS]: issue 16's side-by-side figures, in one
# run: each workload's check command bare on the host (warm host caches)
# against `runmill verify` — on a cold state dir (the toolchain cache is
# built), then re-verifications on the warm one — alternating, ROUNDS times.
# Needs root (a private containerd), go on PATH and runmill built at
# $RUNMILL (default: go build into OUTDIR).
set -euo pipefail
out=${1:?usage: bench-verify.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
runmill=${RUNMILL:-$out/runmill}
[ -x "$runmill" ] || (cd "$here" && go build -o "$runmill" ./cmd/runmill)
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.invalid GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.invalid

# The example repository (examples/shop): three checks, runmill's fixed cost dominates.
bash "$here/examples/make-shop-repo.sh" "$out/shop" >/dev/null

# A Go module whose tests compute for real: 8 packages, each hashing.
gomod=$out/gowork
bash "$here/scripts/bench-gomodule.sh" "$gomod"
cd "$gomod"
git checkout -qb cand && printf '\nfunc Extra() int { return 1 }\n' >> p1/p.go && git commit -qam cand
git checkout -q main

# One trivial TAP check on a small repository.
tap=$out/tap
rm -rf "$tap"; mkdir -p "$tap/.runmill"; cd "$tap"
printf 'checks:\n  - id: t\n    run: echo "1..1" > reports/t.tap; echo "ok 1 a" >> reports/t.tap\n    report: {path: reports/t.tap, format: tap}\n' > .runmill/checks.yaml
printf 'reports/\n' > .gitignore
git init -qb main && git add -A && git commit -qm base && git checkout -qb cand && echo x > f && git add f && git commit -qm cand && git checkout -q main

secs() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; echo "$(date +%s.%N) - $s" | bc; }
verify() { "$runmill" verify --repo "$1" --base main --candidate "$2" --out "$3" --no-github; }
bare_go() { (cd "$1" && go test -count=1 -json ./... >/dev/null); }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in shop gowork tap; do rm -rf "$out/state-$w"; done
# Warm host caches for the bare runs.
bare_go "$out/shop"; bare_go "$gomod"
printf '%-8s %-22s %s\n' workload what seconds
printf '%-8s %-22s %s\n' shop "verify, cold state" "$(secs verify "$out/shop" good "$out/state-shop")"
# The toolchain cache is made once per machine: the Go module's first
# verification finds it (a copy), as a second repository on one runner would.
mkdir -p "$out/state-gowork" && cp -a "$out/state-shop/toolcache" "$out/state-gowork/"
printf '%-8s %-22s %s\n' gowork "verify, first" "$(secs verify "$gomod" cand "$out/state-gowork")"
printf '%-8s %-22s %s\n' tap "verify, cold state" "$(secs verify "$tap" cand "$out/state-tap")"
for r in $(seq "$rounds"); do
  printf '%-8s %-22s %s\n' shop "bare go test" "$(secs bare_go "$out/shop")"
  printf '%-8s %-22s %s\n' shop "verify, warm state" "$(secs verify "$out/shop" good "$out/state-shop")"
  printf '%-8s %-22s %s\n' gowork "bare go test" "$(secs bare_go "$gomod")"
  printf '%-8s %-22s %s\n' gowork "verify, warm state" "$(secs verify "$gomod" cand "$out/state-gowork")"
  printf '%-8s %-22s %s\n' tap "verify, warm state" "$(secs verify "$tap" cand "$out/state-tap")"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
# Per check run durations of the last verification of each workload.
for w in shop gowork; do
  last=$(ls -d "$out/state-$w"/runs/*/ | tail -1)
  echo "$w: $(grep -ho '"duration_ms":[0-9]*' -r "$last" --include=statement.json | sort -u | tr '\n' ' ')"
done
