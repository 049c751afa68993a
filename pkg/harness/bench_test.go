package harness_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/rmerr"
)

// wideTrees is a base and a candidate tree of n files each matching the
// harness glob `conftest.py` (pkg/pathglob: the last segment at any depth),
// spread over n/1000 directories, the candidate editing every file: the
// shape of issue 23's attack, where a change adds or edits as many files
// matching a base-declared glob as it likes.
func wideTrees(n int) (base, cand harness.Tree) {
	base, cand = harness.Tree{}, harness.Tree{}
	for i := range n {
		p := fmt.Sprintf("pkg%04d/sub%03d/conftest.py", i/1000, i%1000)
		base[p] = entry("a")
		cand[p] = entry("b")
	}
	return base, cand
}

// BenchmarkResolve: a harness up to MaxFiles resolves; above it, the
// refusal (RM-LIMIT-001) is the answer (docs/benchmarks.md § Bounds).
func BenchmarkResolve(b *testing.B) {
	for _, n := range []int{5_000, harness.MaxFiles, 40_000, 200_000} {
		b.Run(fmt.Sprintf("matched=%d", n), func(b *testing.B) {
			base, cand := wideTrees(n)
			cpu := cpuTime()
			for b.Loop() {
				_, err := harness.Resolve(context.Background(), harness.Discovery{}, []string{"conftest.py"}, base, cand, true, strings.Repeat("f", 40))
				if (n > harness.MaxFiles) != (rmerr.CodeOf(err) == rmerr.LimitHarnessFiles) {
					b.Fatal(err)
				}
			}
			// The machine is shared: wall-clock time grows with its load,
			// CPU time much less.
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkResolveDiscovered: what every check run now pays when its
// command names a runner (issue 25) — a pytest or npm discovery's globs
// (conftest.py, *.pth, pytest/**, .npmrc, node_modules/.bin/**) matched
// over the base and the candidate of an ordinary 500 000-file repository
// (the default checkout limit), none of whose files match.
func BenchmarkResolveDiscovered(b *testing.B) {
	base, cand := harness.Tree{}, harness.Tree{}
	for i := range 500_000 {
		p := fmt.Sprintf("src/pkg%03d/mod%03d/file%d.py", i/5000, (i/50)%100, i%50)
		base[p], cand[p] = entry("a"), entry("b")
	}
	for _, command := range []string{"python3 -m pytest -q", "npm test"} {
		b.Run(strings.Fields(command)[len(strings.Fields(command))-2], func(b *testing.B) {
			d, err := harness.Discover(command, base, nil)
			if err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime()
			for b.Loop() {
				if _, err := harness.Resolve(context.Background(), d, nil, base, cand, true, strings.Repeat("f", 40)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
