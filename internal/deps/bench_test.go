package deps

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Benchmarks of docs/benchmarks.md § Prepared dependencies, side by side in
// one process:
//
//	go test -run '^$' -bench . -benchtime 5x ./internal/deps
//
// The tree is a generated node_modules of the size — 40 000 files,
// 300 MB, in packages of lib/ and test/ directories with .bin symlinks —
// imported once into a cache under $RUNMILL_BENCH_DIR (default
// os.TempDir()); views and copies are made beside it, on the same
// filesystem, as in a state directory.

const (
	benchFiles = 40_000
	benchBytes = 300_000_000
)

var (
	benchOnce  sync.Once
	benchState string
	benchTree  string
	benchIn    = map[string]string{"bench": "v1"}
	benchErr   error
)

func benchCache(b *testing.B) (state, tree string) {
	b.Helper()
	benchOnce.Do(func() {
		root, err := os.MkdirTemp(os.Getenv("RUNMILL_BENCH_DIR"), "runmill-deps-bench-")
		if err != nil {
			benchErr = err
			return
		}
		src := filepath.Join(root, "node_modules")
		if benchErr = generateNodeModules(src); benchErr != nil {
			return
		}
		benchState = filepath.Join(root, "state")
		objs := newObjects(benchState)
		defer objs.uses.Close()
		benchTree, _, benchErr = entry(context.Background(), benchState, "", NPM, benchIn, objs, func(dst string) error {
			return mirror(context.Background(), src, dst, copyFile)
		})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchState, benchTree
}

// generateNodeModules writes benchFiles files totalling about benchBytes:
// sizes drawn from an exponential distribution (many small files, a few
// large ones, as in real packages), 8 files per directory.
func generateNodeModules(dir string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range buf {
		const alphabet = "abcdefghijklmnopqrstuvwxyz \n{}();"
		buf[i] = alphabet[rng.IntN(len(alphabet))]
	}
	mean := float64(benchBytes) / benchFiles
	for i := 0; i < benchFiles; i++ {
		pkg := i / 40
		sub := []string{"", "lib", "lib/util", "test", "dist"}[(i/8)%5]
		d := filepath.Join(dir, fmt.Sprintf("pkg-%04d", pkg), sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		size := min(int(rng.ExpFloat64()*mean), len(buf))
		off := rng.IntN(len(buf) - size + 1)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.js", i)), buf[off:off+size], 0o644); err != nil {
			return err
		}
		if i%40 == 0 {
			bin := filepath.Join(dir, ".bin")
			os.MkdirAll(bin, 0o755)
			if err := os.Symlink(fmt.Sprintf("../pkg-%04d/f%05d.js", pkg, i), filepath.Join(bin, fmt.Sprintf("cmd-%04d", pkg))); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkView is Attach's cost: the hard-linked view of the cached tree.
func BenchmarkView(b *testing.B) {
	_, tree := benchCache(b)
	views := b.TempDir()
	for i := 0; b.Loop(); i++ {
		if err := mirror(context.Background(), tree, filepath.Join(views, fmt.Sprint(i)), linkFile); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		removeTree(filepath.Join(views, fmt.Sprint(i)))
		b.StartTimer()
	}
}

// BenchmarkCopyOnWrite is what a copy-on-write view adds to Attach and
// Close (cow.go): the upper layer's tmpfs mounted, its directories made,
// then unmounted and removed. It needs root; it does not depend on the
// tree's size.
func BenchmarkCopyOnWrite(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("a tmpfs mount needs root")
	}
	views := b.TempDir()
	for i := 0; b.Loop(); i++ {
		made := filepath.Join(views, fmt.Sprint(i))
		if err := os.Mkdir(made, 0o755); err != nil {
			b.Fatal(err)
		}
		v := &View{Mounts: []Mount{{Source: filepath.Join(made, nodeModules)}}, made: made}
		if err := v.copyOnWrite(); err != nil {
			b.Fatal(err)
		}
		if err := v.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCpA is the peer: copying the same tree with cp -a.
func BenchmarkCpA(b *testing.B) {
	_, tree := benchCache(b)
	views := b.TempDir()
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(views, fmt.Sprint(i))
		if out, err := exec.Command("cp", "-a", tree, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp -a: %v\n%s", err, out)
		}
		b.StopTimer()
		removeTree(dst)
		b.StartTimer()
	}
}

// BenchmarkReuse is a warm reuse: the receipt and every cached byte.
func BenchmarkReuse(b *testing.B) {
	state, _ := benchCache(b)
	b.SetBytes(benchBytesOf(b))
	objs := newObjects(state)
	defer objs.uses.Close()
	for b.Loop() {
		if _, r, err := entry(context.Background(), state, "", NPM, benchIn, objs, nil); err != nil || !r.Reused {
			b.Fatalf("reuse: %v", err)
		}
	}
}

// BenchmarkSha256sum is the peer: sha256sum over the same files.
func BenchmarkSha256sum(b *testing.B) {
	_, tree := benchCache(b)
	b.SetBytes(benchBytesOf(b))
	for b.Loop() {
		cmd := exec.Command("sh", "-c", `find . -type f -print0 | xargs -0 sha256sum >/dev/null`)
		cmd.Dir = tree
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("sha256sum: %v\n%s", err, out)
		}
	}
}

func benchBytesOf(b *testing.B) int64 {
	_, st, err := hashTree(context.Background(), benchTree)
	if err != nil {
		b.Fatal(err)
	}
	return st.Bytes
}
