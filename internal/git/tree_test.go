package git

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/rmerr"
)

// bigTrees is one repository holding issue 23's trees, made of a few small
// objects: a commit of 1 000 000 paths (1 000 directories of 1 000
// references to one blob) and one of 3 GB (3 000 references to a blob of
// 1 MiB of zeros), each a child of an ordinary base.
type bigTrees struct {
	repo                    *gittest.Repo
	base, paths, bytes, mix string
}

func newBigTrees(t *testing.T) bigTrees {
	t.Helper()
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	r.Write("dir/run.sh", "#!/bin/sh\n")
	r.Git("update-index", "--add", "--chmod=+x", "dir/run.sh")
	base := r.Commit("base")
	x := r.Blob(strings.NewReader("x"))
	dir := r.Fanout("f%03d", 1000, "100644", x)
	paths := r.Tree(gittest.TreeEntry{Mode: "040000", ID: r.Fanout("d%03d", 1000, "040000", dir), Name: "many"})
	z := r.Zeros(1 << 20)
	bytes := r.Tree(gittest.TreeEntry{Mode: "040000", ID: r.Fanout("zeros%04d", 3000, "100644", z), Name: "big"})
	// mix: a file, an executable, a symlink, a submodule, a directory
	// and an empty tree.
	empty := r.Tree()
	mix := r.Tree(
		gittest.TreeEntry{Mode: "100644", ID: r.Blob(strings.NewReader("hello\n")), Name: "a.txt"},
		gittest.TreeEntry{Mode: "040000", ID: r.Tree(
			gittest.TreeEntry{Mode: "100755", ID: r.Blob(strings.NewReader("#!/bin/sh\nexit 0\n")), Name: "run.sh"},
			gittest.TreeEntry{Mode: "120000", ID: r.Blob(strings.NewReader("../a.txt")), Name: "link"},
		), Name: "bin"},
		gittest.TreeEntry{Mode: "160000", ID: base, Name: "sub"},
		gittest.TreeEntry{Mode: "040000", ID: empty, Name: "empty"},
	)
	return bigTrees{repo: r, base: base,
		paths: r.CommitTree(paths, base, "1 000 000 paths"),
		bytes: r.CommitTree(bytes, base, "3 GB"),
		mix:   r.CommitTree(mix, base, "mix")}
}

// TestTreeSize measures a tree from its objects: entries, directories,
// bytes, and what 4 KiB blocks and git's index allocate.
func TestTreeSize(t *testing.T) {
	b := newBigTrees(t)
	repo := &Repo{Dir: b.repo.Dir}
	s, err := repo.TreeSize(context.Background(), b.mix)
	if err != nil {
		t.Fatal(err)
	}
	// a.txt, bin/run.sh, bin/link, sub; bin and empty.
	want := TreeSize{Entries: 4, Dirs: 2, Bytes: 6 + 17 + 8,
		Allocated: 3*4096 + 4*64 + int64(len("a.txt")+len("bin/run.sh")+len("bin/link")+len("sub"))}
	if s != want {
		t.Fatalf("TreeSize = %+v, want %+v", s, want)
	}
}

// TestTreeLimits (issue 23): a listing past a limit is refused with the
// limit's code, the measured value and the setting that raises it, and
// stops there — the 1 000 000-path tree is never listed whole, the 3 GB one
// never read. Every listing of a tree holds to the same limits.
func TestTreeLimits(t *testing.T) {
	b := newBigTrees(t)
	ctx := context.Background()
	// 80 files of 754-byte paths in 2 directories: 82 entries, 61 000
	// bytes of paths.
	long := b.repo.CommitTree(b.repo.Tree(gittest.TreeEntry{Mode: "040000", Name: strings.Repeat("d", 250),
		ID: b.repo.Tree(gittest.TreeEntry{Mode: "040000", Name: strings.Repeat("f", 250),
			ID: b.repo.Fanout(strings.Repeat("g", 250)+"%02d", 80, "100644", b.repo.Blob(strings.NewReader("x")))})}), b.base, "long paths")
	for _, c := range []struct {
		name   string
		limits Limits
		commit string
		code   rmerr.Code
		says   []string
	}{
		{"1 000 000 paths", Limits{}, b.paths, rmerr.LimitTreeEntries, []string{"more than 500000 entries", "budgets.checkout_entries"}},
		{"3 GB", Limits{}, b.bytes, rmerr.LimitTreeBytes, []string{"more than 2147483648 bytes (a blob of 1048576 bytes named 3000 times", "budgets.checkout_bytes"}},
		{"3 GB under a raised limit", Limits{Bytes: 4 << 30}, b.bytes, "", nil},
		{"paths longer than 512 bytes each", Limits{Entries: 100}, long, rmerr.LimitTreePaths, []string{"more than 51200 bytes together"}},
		{"the same within the default", Limits{}, long, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := &Repo{Dir: b.repo.Dir, Limits: c.limits}
			s, err := repo.TreeSize(ctx, c.commit)
			if rmerr.CodeOf(err) != c.code || (c.code == "" && err != nil) {
				t.Fatalf("TreeSize: %+v, %v; want code %q", s, err, c.code)
			}
			for _, w := range c.says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
			if c.code == rmerr.LimitTreeBytes {
				return // the listings that hold no sizes are not refused for them
			}
			_, ferr := repo.Files(ctx, c.commit)
			_, terr := repo.TrackedFiles(ctx, c.commit)
			_, _, serr := repo.Symlinks(ctx, c.commit)
			for _, err := range []error{ferr, terr, serr} {
				if rmerr.CodeOf(err) != c.code || (c.code == "" && err != nil) {
					t.Errorf("listing: %v; want code %q", err, c.code)
				}
			}
		})
	}
	t.Run("a change touching more than twice the entry limit", func(t *testing.T) {
		repo := &Repo{Dir: b.repo.Dir, Limits: Limits{Entries: 400_000}}
		_, err := repo.ChangedPaths(ctx, b.base, b.paths)
		if rmerr.CodeOf(err) != rmerr.LimitTreeEntries || !strings.Contains(err.Error(), "more than 800000") {
			t.Fatalf("ChangedPaths: %v", err)
		}
	})
	t.Run("a path longer than PATH_MAX", func(t *testing.T) {
		deep := b.repo.Blob(strings.NewReader("x"))
		mode, name := "100644", "f"
		for range 20 {
			deep = b.repo.Tree(gittest.TreeEntry{Mode: mode, ID: deep, Name: strings.Repeat("d", 250) + name})
			mode, name = "040000", ""
		}
		commit := b.repo.CommitTree(deep, b.base, "a 5 000-byte path")
		repo := &Repo{Dir: b.repo.Dir}
		for _, f := range []func() error{
			func() error { _, err := repo.TreeSize(ctx, commit); return err },
			func() error { _, err := repo.Files(ctx, commit); return err },
			func() error { _, _, err := repo.Symlinks(ctx, commit); return err },
			func() error { _, err := repo.ChangedPaths(ctx, b.base, commit); return err },
		} {
			if err := f(); rmerr.CodeOf(err) != rmerr.LimitTreePaths || !strings.Contains(err.Error(), "4096") {
				t.Errorf("%v; want RM-LIMIT-004", err)
			}
		}
	})
}

// TestListingsStreamed: the listings say what they said when git's whole
// output was read first, records split across git's writes included.
func TestListingsStreamed(t *testing.T) {
	b := newBigTrees(t)
	ctx := context.Background()
	repo := &Repo{Dir: b.repo.Dir}
	files, err := repo.Files(ctx, b.mix)
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Tree{
		"a.txt":      {Mode: "100644", Blob: b.repo.Git("rev-parse", b.mix+":a.txt")},
		"bin/run.sh": {Mode: "100755", Blob: b.repo.Git("rev-parse", b.mix+":bin/run.sh")},
		"bin/link":   {Mode: "120000", Blob: b.repo.Git("rev-parse", b.mix+":bin/link")},
	}
	if len(files) != len(want) {
		t.Fatalf("Files = %v, want %v", files, want)
	}
	for p, e := range want {
		if files[p] != e {
			t.Errorf("Files[%s] = %v, want %v", p, files[p], e)
		}
	}
	tracked, err := repo.TrackedFiles(ctx, b.mix)
	if err != nil || !slices.Equal(tracked, []string{"a.txt", "bin/link", "bin/run.sh", "sub"}) {
		t.Fatalf("TrackedFiles = %q, %v", tracked, err)
	}
	changed, err := repo.ChangedPaths(ctx, b.base, b.mix)
	if err != nil || !slices.Equal(changed, []string{"a.txt", "bin/link", "bin/run.sh", "dir/run.sh", "sub"}) {
		t.Fatalf("ChangedPaths = %q, %v", changed, err)
	}
	// The listing counts the 1 001 directories too (many/ and its d000…d999).
	paths, err := (&Repo{Dir: b.repo.Dir, Limits: Limits{Entries: 1_001_001}}).TrackedFiles(ctx, b.paths)
	if err != nil || len(paths) != 1_000_000 || paths[0] != "many/d000/f000" || paths[len(paths)-1] != "many/d999/f999" {
		t.Fatalf("TrackedFiles of the 1 000 000 paths: %d, %v", len(paths), err)
	}
	// Records split anywhere across writes read the same.
	var got []string
	w := &recordWriter{fn: func(rec []byte) error { got = append(got, string(rec)); return nil }, stop: func() {}}
	for _, chunk := range []string{"a", "b\x00", "\x00c\x00d", "e", "f\x00"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"ab", "", "c", "def"}) || len(w.partial) != 0 {
		t.Fatalf("records %q, partial %q", got, w.partial)
	}
}

// TestListingCancelled: a listing ends with its context, git killed.
func TestListingCancelled(t *testing.T) {
	b := newBigTrees(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	repo := &Repo{Dir: b.repo.Dir}
	err := repo.records(ctx, "the 1 000 000 paths", recordOptions{}, func([]byte) error {
		if n++; n == 1000 {
			cancel()
		}
		return nil
	}, "ls-tree", "-r", "-z", "--full-tree", b.paths)
	if !errors.Is(err, context.Canceled) || n >= 1_000_000 {
		t.Fatalf("after cancel: %v (%d records)", err, n)
	}
}

// FuzzRecordWriter: however git's output is cut into writes, the records
// are its NUL-terminated pieces, and one longer than maxRecord is refused.
func FuzzRecordWriter(f *testing.F) {
	f.Add([]byte("100644 blob abc\ta\x00040000 tree def\tb\x00"), uint(7), uint(30))
	f.Add([]byte("a\x00\x00b"), uint(0), uint(1))
	f.Fuzz(func(t *testing.T, out []byte, i, j uint) {
		if len(out) > 3*maxRecord {
			return
		}
		i, j = min(i, uint(len(out))), min(j, uint(len(out)))
		if i > j {
			i, j = j, i
		}
		var got []string
		w := &recordWriter{fn: func(rec []byte) error { got = append(got, string(rec)); return nil }, stop: func() {},
			long: func() error { return errors.New("too long") }}
		var err error
		for _, chunk := range [][]byte{out[:i], out[i:j], out[j:]} {
			if _, err = w.Write(chunk); err != nil {
				break
			}
		}
		pieces := strings.Split(string(out), "\x00")
		whole, rest := pieces[:len(pieces)-1], pieces[len(pieces)-1]
		tooLong := len(rest) > maxRecord
		for _, p := range whole {
			tooLong = tooLong || len(p) > maxRecord
		}
		if tooLong {
			if err == nil {
				t.Fatalf("a record over %d bytes was accepted", maxRecord)
			}
			return
		}
		if err != nil || !slices.Equal(got, whole) || string(w.partial) != rest {
			t.Fatalf("records %q, partial %q, %v; want %q, %q", got, w.partial, err, whole, rest)
		}
	})
}
