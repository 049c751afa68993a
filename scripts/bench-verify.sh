#!/usr/bin/env bash
# bench-verify.sh OUTDIR [ROUNDS]: issue 16's figures, side by side in one run.
#
# Two workloads whose tests compute for real — the Go module of
# bench-gomodule.sh and the node:test project of bench-nodemodule.sh — each
# measured ROUNDS times (default 3), interleaved round by round:
#   bare      the check's command run once on the host, warm host caches;
#   first     `runmill verify` of a new candidate on a fresh state dir that
#             has never verified this base but holds the prepared Go
#             toolchain cache (copied from the cold run below): both sides run;
#   reverify  `runmill verify` of that same new candidate on the state dir of
#             the earlier runs, signed: the baseline is reused from them;
#   first, proven base
#             issue 26: `runmill verify` of that candidate on a fresh state
#             dir (the toolchain cache given) with --reuse the base proof's
#             state dir, as a pull request's job that restored the proof: only
#             the candidate runs;
#   reverify, proven base
#             the same verification again on that state dir (another push of
#             the pull request, or a re-run job that restored the proof).
# Once, before the rounds: the Go module's verification with a COLD toolchain
# cache (an empty state dir: the cache is built), which also seeds the Go
# reuse state dir; the node project's seeding verification; each workload's
# base proof (`verify --prove-base main`, the on-push job's work).
# Each round also: the example repository (examples/, three checks; runmill's
# fixed cost dominates) bare and re-verified (signed, warm state dir), and one
# trivial TAP check on a 1 000-file repository on a warm state dir.
#
# BENCH_BARE_CGROUP=1 adds a second bare run per round inside the sandbox
# tasks' CPU cgroup (see bare_in_group).
# Needs root (runmill starts a private containerd in each state dir), go and
# node on PATH. runmill is built into OUTDIR unless $RUNMILL names a binary;
# RUNMILL_TOOLCACHE=DIR (a state dir's toolcache/) skips the cold build.
# Per-verification progress (the check runs' own durations) is kept in
# OUTDIR/logs. The summary table is printed last; `bench-verify.sh --summary
# OUTDIR` prints it again.
set -euo pipefail
# summary OUTDIR ROUNDS: per workload and kind min/median/max wall seconds and
# their ratios to the same round's bare run; the same for CPU seconds (the
# bare command's; the sum over a verification's check runs in the sandbox).
summary() {
  echo
  echo "== summary ($2 rounds; wall-clock seconds; x bare = verification / bare run of the same round; cpu = CPU seconds of the command, or of all check runs of the verification)"
  awk -F '\t' '
    function stats(a, n,   i, j, t, m) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      m = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      return sprintf(n > 1 ? "%.2f %.2f %.2f" : "%.2f", a[1], m, a[n])
    }
    function cpu(k, note,   c, rest) {
      if (k ~ /^bare/) return match(note, /cpu [0-9.]+s/) ? substr(note, RSTART + 4, RLENGTH - 5) + 0 : -1
      if (!match(note, /cpu .*/)) return -1
      rest = substr(note, RSTART); c = 0
      while (match(rest, /(baseline|candidate) [0-9.]+s/)) { split(substr(rest, RSTART, RLENGTH), q, " "); c += q[2] + 0; rest = substr(rest, RSTART + RLENGTH) }
      return c
    }
    {
      w = $1; k = $2; s = $3 + 0; c = cpu(k, $4)
      if (k == "bare") { bare[w] = s; barec[w] = c }
      key = w SUBSEP k
      if (!(key in n)) { order[++nk] = key }
      v[key, ++n[key]] = s
      if (c >= 0) cv[key, ++nc[key]] = c
      if (k !~ /^bare/ && (w in bare)) { rv[key, ++nr[key]] = s / bare[w]; if (c >= 0 && barec[w] > 0) rc[key, ++nrc[key]] = c / barec[w] }
    }
    END {
      printf "%-5s %-24s %-20s %-17s %-17s %s\n", "work", "what", "wall s min/med/max", "x bare", "cpu s", "cpu x bare"
      for (i = 1; i <= nk; i++) {
        key = order[i]; split(key, p, SUBSEP)
        delete a; for (j = 1; j <= n[key]; j++) a[j] = v[key, j]
        r = "-"; if (nr[key] > 0) { delete b; for (j = 1; j <= nr[key]; j++) b[j] = rv[key, j]; r = stats(b, nr[key]) }
        c = "-"; if (nc[key] > 0) { delete b; for (j = 1; j <= nc[key]; j++) b[j] = cv[key, j]; c = stats(b, nc[key]) }
        x = "-"; if (nrc[key] > 0) { delete b; for (j = 1; j <= nrc[key]; j++) b[j] = rc[key, j]; x = stats(b, nrc[key]) }
        printf "%-5s %-24s %-20s %-17s %-17s %s\n", p[1], p[2], stats(a, n[key]), r, c, x
      }
    }' "$1/times"
  echo "load average (1 min) over the run: $(awk '{print $2}' "$1/loads" | sort -n | sed -n '1p;$p' | paste -sd- -) on $(nproc) cores"
  if grep -q EXIT "$1/times"; then echo "WARNING: some verifications were not merge-ready (EXIT in $1/times)"; fi
}
if [ "${1:-}" = --summary ]; then summary "${2:?usage: bench-verify.sh --summary OUTDIR}" "?"; exit 0; fi
out=${1:?usage: bench-verify.sh OUTDIR [ROUNDS]}
rounds=${2:-3}
. "$(dirname "$0")/bench-lib.sh"
bench_prologue "$out" "$0"
rm -rf "$out"/state-* "$out"/first-* "$out"/proof-* "$out"/proven-* "$out/logs" "$out/times" "$out/key.pem" "$out/trust.json"
mkdir -p "$out/logs"
"$runmill" evidence keygen --key-out "$out/key.pem" --trust-out "$out/trust.json" --valid-for 24h >/dev/null

# The workloads.
bash "$here/scripts/bench-gomodule.sh" "$out/go"
bash "$here/scripts/bench-nodemodule.sh" "$out/node"
bash "$here/examples/make-shop-repo.sh" "$out/shop" >/dev/null
tap=$out/tap
rm -rf "$tap"; mkdir -p "$tap/.runmill"
for d in $(seq -w 0 9); do mkdir -p "$tap/d$d"; for f in $(seq -w 0 99); do echo "$d$f" > "$tap/d$d/f$f.txt"; done; done
printf 'checks:\n  - id: t\n    run: echo "1..1" > reports/t.tap; echo "ok 1 a" >> reports/t.tap\n    report: {path: reports/t.tap, format: tap}\n' > "$tap/.runmill/checks.yaml"
printf 'reports/\n' > "$tap/.gitignore"
(cd "$tap" && git init -qb main && git add -A && git commit -qm base && git checkout -qb cand && echo x > d0/f00.txt && git commit -qam cand && git checkout -q main)

# push W N: a new candidate of workload W, one more function in one source file, off main.
push() {
  local repo=$out/$1
  git -C "$repo" checkout -q main && git -C "$repo" checkout -qb "push$2"
  case $1 in
    go) printf '\nfunc Extra%s() int { return %s }\n' "$2" "$2" >> "$repo/p1/p.go" ;;
    node) printf '\nmodule.exports.extra%s = () => %s;\n' "$2" "$2" >> "$repo/src/lcg.js" ;;
  esac
  git -C "$repo" commit -qam "push $2" && git -C "$repo" checkout -q main
}
# bare W: the check's command of workload W on the host; its CPU time (user +
# system of every process) goes to logs/bare.cpu.
bare() { /usr/bin/time -f '%U %S' -o "$out/logs/bare.cpu" bash -c "$(declare -f bare_cmd); out=$out; bare_cmd $1"; }
# bare_in_group W: the same inside a CPU cgroup beside the sandbox tasks'
# (containerd's namespace group, runmill/): on a loaded machine that whole group
# weighs as much as one host process, so this bare run waits for a core the
# way a check run does (BENCH_BARE_CGROUP=1).
bare_in_group() {
  local g=$cgroup/bench-bare-$$
  mkdir -p "$g"
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$g" \
    /usr/bin/time -f '%U %S' -o "$out/logs/bare.cpu" bash -c "$(declare -f bare_cmd); out=$out; bare_cmd $1"
  rmdir "$g"
}
bare_cmd() {
  case $1 in
    go) (cd "$out/go" && go test -count=1 -json ./... >/dev/null) ;;
    node) (cd "$out/node" && mkdir -p reports && node --test --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=junit --test-reporter-destination=reports/node-test.xml >/dev/null) ;;
    shop) (cd "$out/shop" && mkdir -p reports && go test -json ./... > reports/unit.json &&
      sh scripts/gofmt-tap.sh > reports/fmt.tap && sh scripts/migrations-tap.sh > reports/migrations.tap) ;;
  esac
}
# verify LABEL REPO CANDIDATE STATE [FLAGS…]: one verification; its progress goes to logs/LABEL.
verify() {
  "$runmill" verify --repo "$out/$2" --base main --candidate "$3" --out "$4" --no-github "${@:5}" \
    >"$out/logs/$1.out" 2>"$out/logs/$1"
}
# prove LABEL REPO STATE: the base proof of main; its progress goes to logs/LABEL.
prove() {
  "$runmill" verify --repo "$out/$2" --prove-base main --out "$3" --signing-key "$out/key.pem" \
    >"$out/logs/$1.out" 2>"$out/logs/$1"
}
# measure WORKLOAD KIND LABEL CMD…: runs CMD, appends "WORKLOAD KIND SECONDS NOTE" to times, prints it.
measure() {
  local w=$1 k=$2 label=$3 s e rc=0 note
  shift 3
  s=$EPOCHREALTIME
  "$@" || rc=$?
  e=$EPOCHREALTIME
  note=""
  if [ -f "$out/logs/$label" ]; then
    # The check runs' own durations (progress lines), and whether the baseline was reused.
    note=$({ grep -oE '\((baseline|candidate)\): (passed|failed), .*, [0-9hms.]+$|\(baseline\): reused|toolchain cache [0-9a-f]+ .* in [0-9hms.]+$' "$out/logs/$label" || true; } |
      sed -E 's/\((baseline|candidate)\): (passed|failed).*, ([0-9hms.]+)$/\1 \2 \3/; s/\(baseline\): reused/baseline reused/; s/toolchain cache .* in /toolcache built in /' | paste -sd, -)
  fi
  # CPU time: of the bare command, or of each check run in the sandbox (the
  # terminal statement's cpu-ms budget ledger): equal CPU with more wall time
  # means waiting for a core, not work runmill added.
  if [ "${k%%,*}" = bare ] && [ -f "$out/logs/bare.cpu" ]; then
    note="cpu $(awk 'END { printf "%.1fs", $1 + $2 }' "$out/logs/bare.cpu")"; rm -f "$out/logs/bare.cpu"
  elif [ -f "$out/logs/$label.out" ]; then
    local run
    run=$(sed -n 's/^Evidence: //p' "$out/logs/$label.out")
    if [ -f "$run/terminal-statement.json" ]; then
      note="$note, cpu $({ grep -oE '"consumed":[0-9]+,"exceeded":[a-z]+,"limit":[0-9]+,"phase":"[a-z]+","resource":"cpu-ms"' "$run/terminal-statement.json" || true; } |
        sed -E 's/"consumed":([0-9]+).*"phase":"([a-z]+)".*/\2 \1/' | awk '{ printf "%s%s %.1fs", (NR > 1 ? ", " : ""), $1, $2 / 1000 }')"
    fi
  fi
  [ "$rc" = 0 ] || note="EXIT $rc (not a merge-ready verification: see logs/$label) $note"
  local t
  t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }')
  printf '%s\t%s\t%s\t%s\n' "$w" "$k" "$t" "$note" >> "$out/times"
  printf '%-5s %-24s %7s  %s\n' "$w" "$k" "$t" "$note"
}
load() { echo "load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/loads"; }

: > "$out/loads"
load
bare go; bare node; bare shop # warm host caches
sign=(--signing-key "$out/key.pem")
mkdir -p "$out/state-go"
if [ -n "${RUNMILL_TOOLCACHE:-}" ]; then
  cp -a "$RUNMILL_TOOLCACHE" "$out/state-go/toolcache"
  push go 0; measure go "first (toolcache given)" go-cold verify go-cold go push0 "$out/state-go" "${sign[@]}"
else
  push go 0; measure go "first, cold toolcache" go-cold verify go-cold go push0 "$out/state-go" "${sign[@]}"
fi
toolcache=$out/state-go/toolcache
# Every other state dir starts from this machine's toolchain cache, as a second
# repository on one runner would find it.
seed() { mkdir -p "$1" && cp -a "$toolcache" "$1/"; }
seed "$out/state-node"; push node 0
measure node "first (reuse seed)" node-seed verify node-seed node push0 "$out/state-node" "${sign[@]}"
seed "$out/state-shop"
measure shop "first" shop-first verify shop-first shop good "$out/state-shop" "${sign[@]}"
seed "$out/state-tap"
measure tap "first" tap-first verify tap-first tap cand "$out/state-tap"
for w in go node; do
  seed "$out/proof-$w"
  measure "$w" "base proof (on push)" "$w-proof" prove "$w-proof" "$w" "$out/proof-$w"
done
load
cgroup=
if [ -n "${BENCH_BARE_CGROUP:-}" ]; then
  for c in /sys/fs/cgroup/cpu/runmill /sys/fs/cgroup/runmill; do [ -d "$c" ] && cgroup=$c && break; done
  [ -n "$cgroup" ] || { echo "BENCH_BARE_CGROUP: no runmill CPU cgroup yet (it appears with the first sandbox task)" >&2; }
fi
for r in $(seq "$rounds"); do
  for w in go node; do
    push "$w" "$r"
    measure "$w" bare "" bare "$w"
    if [ -n "$cgroup" ]; then measure "$w" "bare, sandbox cgroup" "" bare_in_group "$w"; fi
    seed "$out/first-$w-$r"
    measure "$w" first "$w-first-$r" verify "$w-first-$r" "$w" "push$r" "$out/first-$w-$r" "${sign[@]}"
    rm -rf "$out/first-$w-$r"
    measure "$w" "reverify (reused)" "$w-reverify-$r" verify "$w-reverify-$r" "$w" "push$r" "$out/state-$w" "${sign[@]}"
    seed "$out/proven-$w-$r"
    measure "$w" "first, proven base" "$w-proven-$r" verify "$w-proven-$r" "$w" "push$r" "$out/proven-$w-$r" "${sign[@]}" --reuse "$out/proof-$w"
    measure "$w" "reverify, proven base" "$w-proven-re-$r" verify "$w-proven-re-$r" "$w" "push$r" "$out/proven-$w-$r" "${sign[@]}" --reuse "$out/proof-$w"
    rm -rf "$out/proven-$w-$r"
  done
  measure shop bare "" bare shop
  measure shop "reverify (reused)" "shop-reverify-$r" verify "shop-reverify-$r" shop good "$out/state-shop" "${sign[@]}"
  measure tap "verify, warm state" "tap-warm-$r" verify "tap-warm-$r" tap cand "$out/state-tap"
  load
done

summary "$out" "$rounds"
