package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
)

// benchRepo commits files source-like files totalling about bytes.
func benchRepo(b testing.TB, files int, bytes int) (*gittest.Repo, string) {
	r := gittest.New(b)
	line := "func example(a, b int) int { return a*b + a - b } // padding padding padding\n"
	per := bytes / files
	body := strings.Repeat(line, per/len(line)+1)[:per]
	for i := 0; i < files; i++ {
		p := filepath.Join(r.Dir, fmt.Sprintf("pkg%03d", i%200), fmt.Sprintf("f%05d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	return r, r.Commit("bench")
}

// BenchmarkCheckRun is the whole per-check-run cost runmill adds around a
// command (fresh checkout, two tree hashes, sandbox start and stop, report
// handling, removal); BenchmarkBareSh is the same command run bare. The
// difference is the overhead docs/benchmarks.md reports. "full" writes a
// whole checkout per run; "layered" is what Verify does as root: the
// commit's tree is written once (in the warm-up run, outside the timer; its
// cost is Create's in internal/checkout's benchmarks) and each run mounts an
// overlay over it.
func BenchmarkCheckRun(b *testing.B) {
	for _, size := range []struct {
		name         string
		files, bytes int
	}{{"1k-files", 1000, 4 << 20}, {"20k-files-120MB", 20000, 120 << 20}} {
		// The yardstick, on the same repository in the same run.
		b.Run(size.name+"/git-worktree-add", func(b *testing.B) {
			r, commit := benchRepo(b, size.files, size.bytes)
			parent := b.TempDir()
			i := 0
			for b.Loop() {
				i++
				dir := filepath.Join(parent, fmt.Sprint(i))
				r.Git("worktree", "add", "-q", "--detach", dir, commit)
				b.StopTimer()
				r.Git("worktree", "remove", "--force", dir)
				b.StartTimer()
			}
		})
		for _, layered := range []bool{false, true} {
			mode := map[bool]string{false: "full", true: "layered"}[layered]
			b.Run(size.name+"/"+mode, func(b *testing.B) {
				r, commit := benchRepo(b, size.files, size.bytes)
				state, _ := os.MkdirTemp("", "rmbench-")
				defer os.RemoveAll(state)
				ctx := context.Background()
				sb, err := sandbox.Connect(ctx, sandbox.Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: filepath.Join(state, "sb")})
				if err != nil {
					b.Skip("no containerd: ", err)
				}
				defer sb.Close()
				co, err := checkout.NewManager(ctx, r.Dir, filepath.Join(state, "co"))
				if err != nil {
					b.Fatal(err)
				}
				defer co.Close(ctx)
				if layered {
					if shared, err := sb.SeesHostMounts(); err != nil || !shared {
						b.Fatal("containerd does not see this process's mounts: ", err)
					}
					if err := co.EnableLayers(); err != nil {
						b.Fatal(err)
					}
				}
				e := &executor{sb: sb, checkouts: co, store: newStore(filepath.Join(state, "artifacts")),
					logf: func(string, ...any) {}, event: func(string, any) {}}
				c := discovery.Check{ID: "bench", Command: "true"}
				run := func() {
					rec, _, err := e.runOne(ctx, c, record.Candidate, commit)
					if err != nil || rec.ExitCode != 0 || rec.Status != record.Passed {
						b.Fatal(err, rec.ExitCode, rec.Findings)
					}
				}
				run() // warm-up: the shim keeper; in layered mode, the layer
				co.Wait(ctx)
				b.ResetTimer()
				for b.Loop() {
					run()
				}
			})
		}
	}
}

func BenchmarkBareSh(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("sh", "-c", "true")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallel: two independent CPU-bound checks with --parallel 1
// and 2 (the figure: 2 at most 0.6x of 1 on 2 cores), for checks of
// about 0.4, 0.8 and 1.6 seconds of CPU (the shell loop's count): a run's serial part
// (Discovery, the sandbox probe, the evidence) weighs more the shorter the
// checks are.
func BenchmarkParallel(b *testing.B) {
	for _, length := range []struct {
		name  string
		loops int
	}{{"check-0.4s", 400_000}, {"check-0.8s", 800_000}, {"check-1.6s", 1_600_000}} {
		r := gittest.New(b)
		spin := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do i=$((i+1)); done`, length.loops)
		r.Write(".runmill/checks.yaml", fmt.Sprintf("checks:\n  - id: a\n    run: '%s'\n  - id: b\n    run: '%s'\n", spin, spin))
		commit := r.Commit("two checks")
		state, _ := os.MkdirTemp("", "rmbench-")
		defer os.RemoveAll(state)
		ctx := context.Background()
		sb, err := sandbox.Connect(ctx, sandbox.Options{Address: os.Getenv("RUNMILL_CONTAINERD_ADDRESS"), StateDir: filepath.Join(state, "sb")})
		if err != nil {
			b.Skip("no containerd: ", err)
		}
		defer sb.Close()
		// Alternate the two settings so the machine's moods hit both.
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/parallel-%d", length.name, p), func(b *testing.B) {
				for b.Loop() {
					run, err := Verify(ctx, VerifyOptions{
						Discover: DiscoverOptions{RepoDir: r.Dir, Base: commit, Candidate: commit},
						StateDir: filepath.Join(state, "runs"), ContainerdAddress: sb.Address(), Parallel: p,
					})
					if err != nil || len(run.Delivery.Checks) != 2 {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
