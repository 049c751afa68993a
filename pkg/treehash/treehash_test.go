package treehash_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/treehash"
)

// node is one entry of a test tree.
type node struct {
	path    string
	content string // regular file content
	mode    os.FileMode
	dir     bool
	link    string // symlink target
}

func build(t testing.TB, nodes []node) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range nodes {
		p := filepath.Join(root, n.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case n.dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case n.link != "":
			if err := os.Symlink(n.link, p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(n.content), 0o644); err != nil {
				t.Fatal(err)
			}
			mode := n.mode
			if mode == 0 {
				mode = 0o644
			}
			// Chmod after writing: the umask must not decide the golden.
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// goldenTree covers every record kind and the ordering rule: "a" < "a/b" <
// "a-b" < "a.txt" component by component, although '-' and '.' sort before
// '/' as bytes.
var goldenTree = []node{
	{path: "a.txt", content: "alpha\n"},
	{path: "a-b", content: "dash\n"},
	{path: "a/b", content: "nested\n"},
	{path: "bin/run.sh", content: "#!/bin/sh\necho hi\n", mode: 0o755},
	{path: "empty", dir: true},
	{path: "link", link: "a.txt"},
	{path: "sub/.git", content: "gitdir: elsewhere\n"}, // only the root's .git is excluded
	{path: "zero", content: ""},
	{path: ".git/HEAD", content: "ref: refs/heads/main\n"},
	{path: ".git/objects/xx", content: "ignored"},
}

// goldenDigest pins encoding v1. If this changes, the encoding changed: that
// needs a new header version, docs/treehash.md and a note in the changelog,
// never a silent update of this constant.
const goldenDigest = "sha256:8b1748d0e17ad0ff15bd485454d3521b919daefb310794921c67c8a67a924298"

// Hand encoding of the records, written from the documented format rather
// than from the implementation.
func rec(kind byte, path string) []byte {
	b := []byte{kind}
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	return append(b, path...)
}

func dirRec(path string) []byte { return rec('d', path) }

func fileRec(path, content string, exec bool) []byte {
	b := rec('f', path)
	if exec {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(len(content)))
	sum := sha256.Sum256([]byte(content))
	return append(b, sum[:]...)
}

func linkRec(path, target string) []byte {
	b := rec('l', path)
	b = binary.BigEndian.AppendUint32(b, uint32(len(target)))
	return append(b, target...)
}

func digestOf(records ...[]byte) string {
	h := sha256.New()
	h.Write([]byte("runmill-treehash/v1\n"))
	for _, r := range records {
		h.Write(r)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

func sum(t *testing.T, dir string, opts treehash.Options) (treehash.Digest, treehash.Stats) {
	t.Helper()
	d, st, err := treehash.Sum(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Sum(%s): %v", dir, err)
	}
	return d, st
}

func TestGolden(t *testing.T) {
	root := build(t, goldenTree)
	want := digestOf(
		dirRec("a"),
		fileRec("a/b", "nested\n", false),
		fileRec("a-b", "dash\n", false),
		fileRec("a.txt", "alpha\n", false),
		dirRec("bin"),
		fileRec("bin/run.sh", "#!/bin/sh\necho hi\n", true),
		dirRec("empty"),
		linkRec("link", "a.txt"),
		dirRec("sub"),
		fileRec("sub/.git", "gitdir: elsewhere\n", false),
		fileRec("zero", "", false),
	)
	if want != goldenDigest {
		t.Fatalf("hand encoding = %s, golden constant = %s: the test and the documented format disagree", want, goldenDigest)
	}
	for _, workers := range []int{0, 1, 3} {
		d, st := sum(t, root, treehash.Options{Workers: workers})
		if d.String() != goldenDigest {
			t.Errorf("Workers=%d: Sum = %s, want golden %s", workers, d, goldenDigest)
		}
		wantStats := treehash.Stats{Files: 6, Dirs: 4, Symlinks: 1, Bytes: int64(len("alpha\ndash\nnested\n#!/bin/sh\necho hi\ngitdir: elsewhere\n"))}
		if st != wantStats {
			t.Errorf("Workers=%d: Stats = %+v, want %+v", workers, st, wantStats)
		}
	}
}

// TestChanges: every change a check could make to its tree moves the digest;
// what the encoding deliberately leaves out does not.
func TestChanges(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []node{
		{path: "src/main.go", content: "package main\n"},
		{path: "src/util.go", content: "package main // util\n"},
		{path: "script.sh", content: "#!/bin/sh\n", mode: 0o755},
		{path: "out", link: outside},
		{path: "node_modules/dep/index.js", content: "module.exports = 1\n"},
		{path: ".git/index", content: "index"},
	}
	opts := treehash.Options{Exclude: []string{"node_modules"}}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		moves  bool
	}{
		{"content, same size", func(t *testing.T, r string) { write(t, r, "src/main.go", "package mian\n") }, true},
		{"content, appended", func(t *testing.T, r string) { write(t, r, "src/main.go", "package main\n\n") }, true},
		{"exec bit set", func(t *testing.T, r string) { chmod(t, r, "src/main.go", 0o744) }, true},
		{"exec bit cleared", func(t *testing.T, r string) { chmod(t, r, "script.sh", 0o644) }, true},
		{"file added", func(t *testing.T, r string) { write(t, r, "src/new.go", "") }, true},
		{"empty dir added", func(t *testing.T, r string) { mkdir(t, r, "src/gen") }, true},
		{"file removed", func(t *testing.T, r string) { remove(t, r, "src/util.go") }, true},
		{"file renamed", func(t *testing.T, r string) { rename(t, r, "src/util.go", "src/utils.go") }, true},
		{"file moved between dirs", func(t *testing.T, r string) { mkdir(t, r, "lib"); rename(t, r, "src/util.go", "lib/util.go") }, true},
		{"file replaced by symlink to its own content", func(t *testing.T, r string) {
			write(t, r, "copy", "package main // util\n")
			remove(t, r, "src/util.go")
			symlink(t, r, "../copy", "src/util.go")
		}, true},
		{"symlink retargeted", func(t *testing.T, r string) { remove(t, r, "out"); symlink(t, r, outside+"2", "out") }, true},
		{"timestamps touched", func(t *testing.T, r string) {
			ts := time.Now().Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(r, "src/main.go"), ts, ts); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"non-owner mode bits", func(t *testing.T, r string) { chmod(t, r, "src/main.go", 0o666) }, false},
		{"group exec bit alone", func(t *testing.T, r string) { chmod(t, r, "src/main.go", 0o654) }, false},
		{"symlink target's content (not followed)", func(t *testing.T, r string) {
			if err := os.WriteFile(outside, []byte("changed outside\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"excluded path changed", func(t *testing.T, r string) { write(t, r, "node_modules/dep/index.js", "module.exports = 2\n") }, false},
		{"excluded path added to", func(t *testing.T, r string) { write(t, r, "node_modules/other.js", "x") }, false},
		{".git changed", func(t *testing.T, r string) { write(t, r, ".git/index", "another index") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			root := build(t, base)
			before, _ := sum(t, root, opts)
			tc.change(t, root)
			after, _ := sum(t, root, opts)
			if moved := before != after; moved != tc.moves {
				t.Errorf("digest moved = %v, want %v (before %s, after %s)", moved, tc.moves, before, after)
			}
		})
	}
}

func write(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, p)
	mode := os.FileMode(0o644)
	if st, err := os.Stat(full); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, root, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, root, p string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, root, p string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, root, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, root, target, p string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkNotFollowed: a link to /etc/passwd is hashed as a link; the
// file it names is neither read nor counted.
func TestSymlinkNotFollowed(t *testing.T) {
	for _, tc := range []struct{ name, target string }{
		{"absolute outside the tree", "/etc/passwd"},
		{"escaping upwards", "../../../../etc/passwd"},
		{"dangling", "does/not/exist"},
		{"to a directory outside", "/etc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := build(t, []node{{path: "l", link: tc.target}})
			d, st := sum(t, root, treehash.Options{})
			if want := digestOf(linkRec("l", tc.target)); d.String() != want {
				t.Errorf("Sum = %s, want the link record only %s", d, want)
			}
			if st != (treehash.Stats{Symlinks: 1}) {
				t.Errorf("Stats = %+v: the target was followed", st)
			}
		})
	}
}

// TestSpecialFilesRejected: a FIFO would block a reader forever and a socket
// has no content; both are coded errors, returned promptly.
func TestSpecialFilesRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Skipf("cannot create a unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A short socket path: sun_path holds about 100 bytes.
			root, err := os.MkdirTemp("", "th")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(root) })
			if err := os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.make(t, filepath.Join(root, "special"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, err = treehash.Sum(ctx, root, treehash.Options{})
			if code := rmerr.CodeOf(err); code != rmerr.TreeSpecialFile {
				t.Fatalf("Sum error = %v (code %q), want %s", err, code, rmerr.TreeSpecialFile)
			}
			if !strings.Contains(err.Error(), "special") {
				t.Errorf("error %q does not name the path", err)
			}
			// Excluding the special file's path is the caller's way out.
			if _, _, err := treehash.Sum(ctx, root, treehash.Options{Exclude: []string{"special"}}); err != nil {
				t.Errorf("with the special file excluded: %v", err)
			}
		})
	}
}

// TestLargeTreeAcrossWorkers: files larger than one read buffer and many
// directories give the same digest at every parallelism.
func TestLargeTreeAcrossWorkers(t *testing.T) {
	var nodes []node
	for i := range 300 {
		size := (i * 7919) % 5000
		if i%50 == 0 {
			size = 300_000 + i // spans several 128 KiB reads
		}
		nodes = append(nodes, node{
			path:    fmt.Sprintf("d%02d/e%d/f%03d", i%17, i%3, i),
			content: strings.Repeat(string(rune('a'+i%26)), size),
			mode:    os.FileMode(0o644 | (i%5/4)*0o100),
		})
	}
	root := build(t, nodes)
	want, st := sum(t, root, treehash.Options{Workers: 1})
	if st.Files != 300 {
		t.Fatalf("Files = %d, want 300", st.Files)
	}
	for _, workers := range []int{2, 3, 16} {
		if got, _ := sum(t, root, treehash.Options{Workers: workers}); got != want {
			t.Errorf("Workers=%d: %s, want %s", workers, got, want)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	root := t.TempDir()
	for _, opts := range []treehash.Options{
		{Exclude: []string{""}},
		{Exclude: []string{"."}},
		{Exclude: []string{"/abs"}},
		{Exclude: []string{"../up"}},
		{Exclude: []string{".."}},
		{Exclude: []string{"a/../b"}},
		{Exclude: []string{"a/"}},
		{Exclude: []string{"./a"}},
		{Workers: -1},
	} {
		if _, _, err := treehash.Sum(context.Background(), root, opts); err == nil {
			t.Errorf("Sum accepted %+v", opts)
		}
	}
}

func TestRootErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, _, err := treehash.Sum(context.Background(), dir, treehash.Options{}); rmerr.CodeOf(err) != rmerr.TreeUnreadable {
			t.Errorf("Sum(%s) = %v, want %s", dir, err, rmerr.TreeUnreadable)
		}
	}
}

func TestCancelled(t *testing.T) {
	root := build(t, goldenTree)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := treehash.Sum(ctx, root, treehash.Options{}); err == nil {
		t.Fatal("Sum with a cancelled context returned a digest")
	}
}

func TestDigestText(t *testing.T) {
	d, err := treehash.ParseDigest(goldenDigest)
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != goldenDigest {
		t.Errorf("round trip: %s", d)
	}
	b, err := json.Marshal(map[string]treehash.Digest{"tree": d})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tree":"` + goldenDigest + `"}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var back map[string]treehash.Digest
	if err := json.Unmarshal(b, &back); err != nil || back["tree"] != d {
		t.Errorf("JSON round trip: %v %v", back, err)
	}
	for _, bad := range []string{
		"", "sha256:", "sha1:" + goldenDigest[7:], strings.ToUpper(goldenDigest),
		goldenDigest[:len(goldenDigest)-1], goldenDigest + "0", "sha256:" + strings.Repeat("g", 64),
	} {
		if _, err := treehash.ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
	}
}
