package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
)

// BenchmarkRunTrue measures the sandbox's own per-run overhead: container
// create, task create and start, wait, output drain, OOM read, task and
// container delete, for a command that does nothing. Besides wall time it
// reports the CPU all parties spent per run (this process, containerd, the
// shim and the runc processes it reaps), which stays meaningful on a busy
// machine where wall time does not.
func BenchmarkRunTrue(b *testing.B) {
	s := needSandbox(b)
	ctx := context.Background()
	// One run outside the timing: the shim keeper is created lazily.
	if _, err := s.Run(ctx, sandbox.Spec{Command: "true"}); err != nil {
		b.Fatal(err)
	}
	cpu0 := runtimeCPU(s.Address())
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Run(ctx, sandbox.Spec{Command: "true"})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(runtimeCPU(s.Address())-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")

}

// runtimeCPU is the CPU time of this process and of the containerd and shim
// processes serving address (including their reaped children: runc
// create/start/delete, runc init, shim start). Other containerds on a
// shared machine are not counted: their command lines do not name address.
func runtimeCPU(address string) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tick := time.Second / 100 // USER_HZ
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 {
			continue
		}
		comm := s[open+1 : end]
		if comm != "containerd" && !strings.HasPrefix(comm, "containerd-shim") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if !strings.Contains(string(cmdline), filepath.Dir(address)) {
			continue
		}
		f := strings.Fields(s[end+1:])
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			if v, err := strconv.ParseInt(f[i], 10, 64); err == nil {
				total += time.Duration(v) * tick
			}
		}
	}
	return total
}

// BenchmarkProbe is the sandbox probe a verification waits for before any
// check starts (docs/benchmarks.md § --parallel: the largest serial part).
func BenchmarkProbe(b *testing.B) {
	s := needSandbox(b)
	ctx := context.Background()
	dir := b.TempDir()
	if err := s.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	var canary time.Duration
	for b.Loop() {
		rep, err := s.Probe(ctx, sandbox.Spec{ReadOnly: []string{dir}})
		if err != nil {
			b.Fatal(err)
		}
		canary += rep.Duration
	}
	b.ReportMetric(float64(canary.Milliseconds())/float64(b.N), "canary-ms/op")
}

// BenchmarkCgroupPlacement: how long one second of CPU takes in a sandbox
// task placed in its own cgroup under the run's parent, in containerd's
// default group shared by every task (the placement before), and as a
// plain process beside whatever load runs (this benchmark's own cgroup),
// round by round in turn so that the three see the same load.
// scripts/bench-cgroup-placement.sh starts the load. The work is a fixed
// shell loop calibrated to about a second of CPU; each figure is wall
// seconds per CPU second.
func BenchmarkCgroupPlacement(b *testing.B) {
	s := needSandbox(b)
	ctx := context.Background()
	loop := func(n int) string {
		return "i=0; while [ $i -lt " + strconv.Itoa(n) + " ]; do i=$((i+1)); done"
	}
	host := func(n int) (wall, cpu time.Duration) {
		cmd := exec.Command("/bin/sh", "-c", loop(n))
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	task := func(n int) (wall, cpu time.Duration) {
		res, err := s.Run(ctx, sandbox.Spec{Command: loop(n)})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
		return res.Duration, res.CPU
	}
	// Calibrated by CPU time, which the load does not change.
	const probe = 200_000
	_, c := host(probe)
	n := int(float64(probe) * float64(time.Second) / float64(max(c, time.Millisecond)))
	modes := []struct {
		name string
		run  func(int) (time.Duration, time.Duration)
	}{
		{"own", task},
		{"shared", func(n int) (time.Duration, time.Duration) {
			restore := sandbox.SharedCgroupUnsafe()
			defer restore()
			return task(n)
		}},
		{"beside", host},
	}
	total := make([][2]time.Duration, len(modes))
	round := 0
	for b.Loop() {
		round++
		line := fmt.Sprintf("round %d:", round)
		for i, m := range modes {
			wall, cpu := m.run(n)
			total[i][0] += wall
			total[i][1] += cpu
			line += fmt.Sprintf(" %s %.2f s/cpu-s (%.2f s wall, %.2f s cpu)", m.name, wall.Seconds()/cpu.Seconds(), wall.Seconds(), cpu.Seconds())
		}
		b.Log(line)
	}
	for i, m := range modes {
		b.ReportMetric(total[i][0].Seconds()/total[i][1].Seconds(), m.name+"-s/cpu-s")
	}
}
