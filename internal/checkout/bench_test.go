package checkout_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/pkg/treehash"
)

// Benchmarks of the Freshness overhead (docs/benchmarks.md § Checkout and
// tree hash). Run side by side in one process:
//
//	go test -run '^$' -bench . -benchtime 5x ./internal/checkout
//
// The repositories and the state directory are generated once per process
// in a temporary directory outside this repository (under $RUNMILL_BENCH_DIR
// when set, to compare filesystems; the default is os.TempDir()): source-like Go text (about 3x compressible, like
// real code), a few executables and a symlink, in ~220 directories, written
// as one packfile by git fast-import, as a fresh clone has it.

type benchRepo struct {
	dir    string
	commit string
}

var (
	benchMu    sync.Mutex
	benchRepos = map[int]benchRepo{}
	benchRoot  string
)

// benchSizes are the two sizes: files and total bytes.
var benchSizes = []struct{ files, bytes int }{
	{1000, 6_000_000},
	{20000, 120_000_000},
}

func benchRepoFor(b *testing.B, files, bytes int) benchRepo {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if r, ok := benchRepos[files]; ok {
		return r
	}
	if benchRoot == "" {
		dir, err := os.MkdirTemp(os.Getenv("RUNMILL_BENCH_DIR"), "runmill-checkout-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchRoot = dir
	}
	dir := filepath.Join(benchRoot, fmt.Sprintf("repo-%d", files))
	if err := generateRepo(dir, files, bytes); err != nil {
		b.Fatal(err)
	}
	r := benchRepo{dir: dir, commit: strings.TrimSpace(git(b, dir, "rev-parse", "main"))}
	benchRepos[files] = r
	return r
}

func cleanupBench() {
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
}

var words = strings.Fields(`ctx err value index count buffer reader writer config options request
response handler client server manager store cache entry record digest path name status result items
list map key token parse format encode decode open close read write flush sync update create delete
insert select check verify`)

// sourceFile writes about size bytes of Go-like text.
func sourceFile(r *rand.Rand, size int) string {
	var b strings.Builder
	w := func() string { return words[r.IntN(len(words))] }
	W := func() string { s := w(); return strings.ToUpper(s[:1]) + s[1:] }
	for b.Len() < size {
		ind := strings.Repeat("\t", r.IntN(4))
		switch r.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "%sfunc %s%s(%s %s, %s int) (%s, error) {\n", ind, w(), W(), w(), W(), w(), w())
		case 1:
			fmt.Fprintf(&b, "%sif %s != nil {\n%s\treturn fmt.Errorf(\"%s %s: %%w\", %s)\n%s}\n", ind, w(), ind, w(), w(), w(), ind)
		case 2:
			fmt.Fprintf(&b, "%s// %s %s %s the %s when %s is %d.\n", ind, W(), w(), w(), w(), w(), r.IntN(1000))
		case 3:
			fmt.Fprintf(&b, "%s%s := %s.%s(%s, %d)\n", ind, w(), w(), W(), w(), r.IntN(100))
		case 4:
			fmt.Fprintf(&b, "%sfor i := 0; i < len(%s); i++ {\n%s\t%s[i] = %s(%s[i])\n%s}\n", ind, w(), ind, w(), w(), w(), ind)
		default:
			fmt.Fprintf(&b, "%s%s.%s = append(%s.%s, %q)\n", ind, w(), W(), w(), W(), w()+"-"+w())
		}
	}
	return b.String()
}

// generateRepo writes a one-commit repository of n files totalling about
// total bytes (sizes exponentially distributed, as in real trees) straight
// into a packfile with git fast-import.
func generateRepo(dir string, n, total int) error {
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(in, 1<<20)
	r := rand.New(rand.NewPCG(uint64(n), 2))
	mean := float64(total) / float64(n)
	var tree strings.Builder
	for i := range n {
		data := sourceFile(r, int(mean*r.ExpFloat64()))
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(data), data)
		p, mode := fmt.Sprintf("pkg%02d/sub%d/file%05d.go", r.IntN(20), r.IntN(10), i), "100644"
		if i%7 == 0 {
			p = fmt.Sprintf("pkg%02d/file%05d.go", r.IntN(20), i)
		}
		if i%50 == 0 {
			p, mode = strings.TrimSuffix(p, ".go")+".sh", "100755"
		}
		fmt.Fprintf(&tree, "M %s :%d %s\n", mode, i+1, p)
	}
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@runmill.invalid> 1700000000 +0000\ndata 6\nbench\n%s", tree.String())
	fmt.Fprintf(w, "M 120000 inline link-to-first\ndata 18\npkg00/file00000.go\n\n")
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git fast-import: %w", err)
	}
	return nil
}

func benchManager(b *testing.B, r benchRepo) *checkout.Manager {
	b.Helper()
	return benchManagerIn(b, r, filepath.Join(benchRoot, "state"))
}

// tmpfsState returns a state directory on tmpfs (/dev/shm), or "" when there
// is none: the figure shows what a memory-backed state directory would buy.
func tmpfsState(b *testing.B) string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fs); err != nil || fs.Type != 0x01021994 { // TMPFS_MAGIC
		return ""
	}
	dir, err := os.MkdirTemp("/dev/shm", "runmill-checkout-bench-")
	if err != nil {
		return ""
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func benchManagerIn(b *testing.B, r benchRepo, state string) *checkout.Manager {
	b.Helper()
	m, err := checkout.NewManager(context.Background(), r.dir, state)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return m
}

// cpuMeter measures the CPU time (user and system, of this process and of
// the children it waited for: git, tar, sha256sum) the timed parts of a
// benchmark use. On a machine shared with other work, wall-clock time grows
// with the load; CPU time much less, so both are reported.
type cpuMeter struct {
	b           *testing.B
	total, mark time.Duration
}

func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

func newCPUMeter(b *testing.B) *cpuMeter { return &cpuMeter{b: b, mark: cpuTime()} }

func (m *cpuMeter) stop() {
	m.b.StopTimer()
	m.total += cpuTime() - m.mark
}

func (m *cpuMeter) start() {
	m.mark = cpuTime()
	m.b.StartTimer()
}

func (m *cpuMeter) report() {
	m.total += cpuTime() - m.mark
	m.b.ReportMetric(float64(m.total.Microseconds())/1000/float64(m.b.N), "cpu-ms/op")
}

func reportPerFile(b *testing.B, files int) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(files), "µs/file")
}

// BenchmarkCheckoutHashRemove is runmill's per-check Freshness overhead:
// a fresh checkout, the tree hash before and after the check, and removal.
//
//	drained:       every removal finished (Wait) before the iteration ends:
//	               the whole cost, nothing deferred.
//	pipelined:     the engine's sequential case: the removal of one check's
//	               checkout runs in the background while the next is created;
//	               one Wait at the end is included.
//	drained-tmpfs: drained, with the state directory on tmpfs (/dev/shm).
func BenchmarkCheckoutHashRemove(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("files=%d", size.files), func(b *testing.B) {
			r := benchRepoFor(b, size.files, size.bytes)
			for _, mode := range []string{"drained", "pipelined", "drained-tmpfs"} {
				b.Run(mode, func(b *testing.B) {
					state := filepath.Join(benchRoot, "state")
					if mode == "drained-tmpfs" {
						if state = tmpfsState(b); state == "" {
							b.Skip("no tmpfs at /dev/shm")
						}
					}
					m := benchManagerIn(b, r, state)
					ctx := context.Background()
					cpu := newCPUMeter(b)
					for b.Loop() {
						c, err := m.Create(ctx, r.commit)
						if err != nil {
							b.Fatal(err)
						}
						before, _, err := treehash.Sum(ctx, c.Dir, treehash.Options{})
						if err != nil {
							b.Fatal(err)
						}
						after, _, err := treehash.Sum(ctx, c.Dir, treehash.Options{})
						if err != nil || after != before {
							b.Fatal(err, before, after)
						}
						if err := c.Remove(); err != nil {
							b.Fatal(err)
						}
						if mode != "pipelined" {
							if err := m.Wait(ctx); err != nil {
								b.Fatal(err)
							}
						}
					}
					if err := m.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					cpu.report()
				})
			}
		})
	}
}

// BenchmarkBaselines measures, on the same repositories and in the same
// process, what the cycle is compared with and what it is made of.
func BenchmarkBaselines(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("files=%d", size.files), func(b *testing.B) {
			r := benchRepoFor(b, size.files, size.bytes)
			ctx := context.Background()

			// The reference of the issue: `git worktree add` alone.
			b.Run("git-worktree-add", func(b *testing.B) {
				cpu := newCPUMeter(b)
				for i := 0; b.Loop(); i++ {
					dir := filepath.Join(benchRoot, fmt.Sprintf("wt-%d", i))
					git(b, r.dir, "worktree", "add", "-q", "--detach", dir, r.commit)
					cpu.stop()
					os.RemoveAll(dir)
					git(b, r.dir, "worktree", "prune")
					cpu.start()
				}
				cpu.report()
			})

			// One tree both hashes read: a plain worktree (its .git is one
			// 60-byte file, which tar includes and treehash excludes).
			tree := filepath.Join(benchRoot, fmt.Sprintf("tree-%d", size.files))
			if _, err := os.Stat(tree); err != nil {
				git(b, r.dir, "worktree", "add", "-q", "--detach", tree, r.commit)
			}
			b.Run("tar-sha256sum", func(b *testing.B) {
				cpu := newCPUMeter(b)
				for b.Loop() {
					cmd := exec.Command("sh", "-c", "tar -cf - . | sha256sum >/dev/null")
					cmd.Dir = tree
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
				cpu.report()
			})
			b.Run("treehash", func(b *testing.B) {
				cpu := newCPUMeter(b)
				for b.Loop() {
					if _, _, err := treehash.Sum(ctx, tree, treehash.Options{}); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report()
				reportPerFile(b, size.files)
			})

			// Create alone: the default policy (parallel checkout from
			// 2 000 files on), and both extremes.
			for _, variant := range []string{"create", "create-serial", "create-parallel"} {
				b.Run(variant, func(b *testing.B) {
					m := benchManager(b, r)
					switch variant {
					case "create-serial":
						checkout.SetParallelCheckout(m, 1, 1)
					case "create-parallel":
						checkout.SetParallelCheckout(m, max(2, runtime.GOMAXPROCS(0)), 1)
					}
					cpu := newCPUMeter(b)
					for b.Loop() {
						c, err := m.Create(ctx, r.commit)
						if err != nil {
							b.Fatal(err)
						}
						cpu.stop()
						c.Remove()
						m.Wait(ctx)
						cpu.start()
					}
					cpu.report()
				})
			}

			// Removal: what Remove costs the caller (a rename), and the
			// whole deletion with the parallel remover, against rm -rf.
			for _, name := range []string{"remove-foreground", "remove-complete", "rm-rf"} {
				b.Run(name, func(b *testing.B) {
					m := benchManager(b, r)
					cpu := newCPUMeter(b)
					for b.Loop() {
						cpu.stop()
						c, err := m.Create(ctx, r.commit)
						if err != nil {
							b.Fatal(err)
						}
						cpu.start()
						switch name {
						case "rm-rf":
							if out, err := exec.Command("rm", "-rf", c.Dir).CombinedOutput(); err != nil {
								b.Fatalf("%v: %s", err, out)
							}
						default:
							if err := c.Remove(); err != nil {
								b.Fatal(err)
							}
							if name == "remove-foreground" {
								cpu.stop()
							}
							if err := m.Wait(ctx); err != nil {
								b.Fatal(err)
							}
							if name == "remove-foreground" {
								cpu.start()
							}
						}
					}
					cpu.report()
				})
			}
		})
	}
}
