#!/usr/bin/env bash
# bench-cgroup-placement.sh [LOAD] [ROUNDS]: how long one second of CPU takes
# inside a sandbox task while LOAD busy loops (default 5) run outside it, for
# the three placements side by side, round by round (docs/benchmarks.md
# § Where a sandbox task is placed): the task in its own cgroup under the
# run's parent, the task in containerd's default group shared by every task
# (the placement before), and a plain process beside the loops.
#
# The loops run in this script's cgroup, each in a session of its own (with
# the kernel's autogroup on, as here, a session at the root cgroup is one
# scheduling group: loops sharing the measured process's session would weigh
# on it alone); run it from the cgroup whose neighbours you want to compete
# with (a root shell on this machine: the root of the cpu hierarchy). Needs
# root and containerd/runc (scripts/setup.sh);
# with $RUNMILL_CONTAINERD_ADDRESS the benchmark uses that containerd,
# otherwise it starts a private one.
set -euo pipefail
load=${1:-5} rounds=${2:-3}
cd "$(dirname "$0")/.."
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$load"); do
  setsid sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "load: $load busy loops in $(cut -d: -f3 /proc/self/cgroup | sort -u | tr '\n' ' ')on $(nproc) cores; autogroup $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo -); sandbox tasks of other runs in containerd's shared group: $(ls -d /sys/fs/cgroup/cpu/runmill/*/ /sys/fs/cgroup/runmill/*/ 2>/dev/null | wc -l); uptime: $(uptime)"
go test -count=1 -run XXX -bench CgroupPlacement -benchtime "${rounds}x" -v ./internal/sandbox/ | grep -E 'round|CgroupPlacement'
echo "after: $(uptime)"
