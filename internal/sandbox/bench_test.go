package sandbox_test

import (
	"context"
	"os"
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
