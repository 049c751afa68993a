package checkout_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/cgrouptest"
	"github.com/runmill/verify/internal/checkout"
	gitplumbing "github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/rmerr"
)

// boundsRepo holds issue 23's commits, each a child of an ordinary base and
// made of a few small objects: 1 000 000 paths (1 000 directories of 1 000
// references to one blob), 3 GB (3 000 references to 1 MiB of zeros), and
// 2 MiB (two such references).
type boundsRepo struct {
	dir                        string
	base, paths, bytes, twoMiB string
}

func newBoundsRepo(t *testing.T) boundsRepo {
	t.Helper()
	r := gittest.New(t)
	r.Write("README", "base\n")
	base := r.Commit("base")
	top := func(name, tree string) string {
		return r.Tree(gittest.TreeEntry{Mode: "100644", ID: r.Git("rev-parse", base+":README"), Name: "README"},
			gittest.TreeEntry{Mode: "040000", ID: tree, Name: name})
	}
	x := r.Blob(strings.NewReader("x"))
	z := r.Zeros(1 << 20)
	return boundsRepo{dir: r.Dir, base: base,
		paths:  r.CommitTree(top("many", r.Fanout("d%03d", 1000, "040000", r.Fanout("f%03d", 1000, "100644", x))), base, "1 000 000 paths"),
		bytes:  r.CommitTree(top("big", r.Fanout("zeros%04d", 3000, "100644", z)), base, "3 GB"),
		twoMiB: r.CommitTree(top("two", r.Fanout("zeros%d", 2, "100644", z)), base, "2 MiB")}
}

// TestCreateRefusesOverLimits (issue 23): a commit over the Manager's
// limits is refused from its objects, with the limit's code, before a file
// of it is written (no checkout directory, no layer, on tmpfs or disk),
// and the refusal is kept for the next Create; the limits are the
// Manager's to set, and a commit within them is checked out as ever.
func TestCreateRefusesOverLimits(t *testing.T) {
	b := newBoundsRepo(t)
	modes(t, func(t *testing.T, newM func(testing.TB, string) *checkout.Manager) {
		ctx := context.Background()
		m := newM(t, b.dir)
		for _, c := range []struct {
			name   string
			commit string
			code   rmerr.Code
		}{
			{"1 000 000 paths", b.paths, rmerr.LimitTreeEntries},
			{"3 GB", b.bytes, rmerr.LimitTreeBytes},
		} {
			for range 2 { // the second time from the kept refusal
				co, err := m.Create(ctx, c.commit)
				if rmerr.CodeOf(err) != c.code {
					t.Fatalf("%s: Create = %v, %v; want %s", c.name, co, err, c.code)
				}
			}
			written, _ := filepath.Glob(filepath.Join(m.Dir(), "*"))
			layers, _ := filepath.Glob(filepath.Join(m.Dir(), "layers*", "*"))
			for _, p := range append(written, layers...) {
				if base := filepath.Base(p); base != "trash" && base != "layers" && base != "ovl" {
					t.Errorf("%s: %s was written", c.name, p)
				}
			}
		}
		co, err := m.Create(ctx, b.twoMiB)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(co.Dir, "two", "zeros1")); err != nil || fi.Size() != 1<<20 {
			t.Fatalf("two/zeros1: %v, %v", fi, err)
		}
		co.Remove()
		tight := newM(t, b.dir)
		tight.MeasureWith(&gitplumbing.Repo{Dir: b.dir, Limits: gitplumbing.Limits{Bytes: 1 << 20}})
		if _, err := tight.Create(ctx, b.twoMiB); rmerr.CodeOf(err) != rmerr.LimitTreeBytes || !strings.Contains(err.Error(), "more than 1048576 bytes") {
			t.Fatalf("2 MiB under a 1 MiB limit: %v", err)
		}
	})
}

// tmpfsChildEnv makes the test binary a runmill that enables layered
// checkouts once it is in its memory cgroup and prints the size of the
// layers' tmpfs.
const tmpfsChildEnv = "RUNMILL_CHECKOUT_TEST_TMPFS"

func tmpfsChild(spec string) {
	repo, state, _ := strings.Cut(spec, "\n")
	bufio.NewReader(os.Stdin).ReadString('\n') // moved into the cgroup
	m, err := checkout.NewManager(context.Background(), repo, state)
	if err == nil {
		err = m.EnableLayers()
	}
	var st syscall.Statfs_t
	if err == nil {
		err = syscall.Statfs(filepath.Join(m.Dir(), "layers"), &st)
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println(st.Type, st.Blocks*uint64(st.Bsize), st.Files)
	if err := m.Close(context.Background()); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestLayerTmpfsFromTheCgroup (issue 23): the layers' tmpfs is sized from
// the memory limit of runmill's own cgroup — a quarter of it, with inodes
// for a quarter again — not from the host's RAM: a runmill under a 2 GiB
// limit gets a 512 MiB tmpfs on any host.
func TestLayerTmpfsFromTheCgroup(t *testing.T) {
	testreq.Root(t, "a layered checkout")
	r := gittest.New(t)
	r.Write("README", "x\n")
	r.Commit("one")
	cg := cgrouptest.New(t, "to size the tmpfs from runmill's memory limit")
	if err := cg.SetLimit(2 << 30); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), tmpfsChildEnv+"="+r.Dir+"\n"+filepath.Join(t.TempDir(), "state"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cg.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	f := strings.Fields(out.String())
	if len(f) != 3 || f[0] != strconv.Itoa(0x01021994) { // TMPFS_MAGIC
		t.Fatalf("child said %q", out.String())
	}
	if f[1] != strconv.Itoa(512<<20) || f[2] != strconv.Itoa(512<<20/4/1024) {
		t.Fatalf("tmpfs of %s bytes and %s inodes under a 2 GiB limit; want %d and %d", f[1], f[2], 512<<20, 512<<20/4/1024)
	}
}
