package deps

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"github.com/runmill/verify/internal/rmtree"
)

// importTree mirrors src into dst (file imports each regular file) and
// refuses an import whose source changed meanwhile: src is hashed before
// and the copy after, so what the cache holds is what was verified. It
// refuses a copy with a link that leaves it (checkLinks: checked on the
// copy, which nothing but runmill writes, so a link swapped in the source
// after a check cannot pass). what names src in the refusal.
func importTree(ctx context.Context, strategy, what, src, dst string, file func(src, dst string, mode fs.FileMode) error) error {
	before, _, err := hashTree(ctx, src)
	if err != nil {
		return refuse(strategy, "hashing %s: %v", what, err)
	}
	if err := mirror(ctx, src, dst, file); err != nil {
		return refuse(strategy, "importing %s: %v", what, err)
	}
	if err := checkLinks(strategy, dst, src); err != nil {
		return err
	}
	after, _, err := hashTree(ctx, dst)
	if err != nil {
		return err
	}
	if before != after {
		return refuse(strategy, "%s changed while it was imported", what)
	}
	return nil
}

// mirror recreates the tree at src under dst (which must not exist):
// directories are made, symlinks recreated with the same target, and each
// regular file handed to file(srcPath, dstPath, mode). Anything else (FIFO,
// socket, device) is an error, and so is a file or directory not every
// user may read (readableByAll): the copy never widens what src allowed.
// Directories are processed by a bounded pool of goroutines: creating
// 40 000 links is metadata work the kernel does in parallel on separate
// directories.
func mirror(ctx context.Context, src, dst string, file func(src, dst string, mode fs.FileMode) error) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := readableByAll(src, st); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	m := &mirrorer{file: file, slots: make(chan struct{}, runtime.GOMAXPROCS(0)*2)}
	m.dir(ctx, src, dst)
	m.wg.Wait()
	return m.err
}

type mirrorer struct {
	file  func(src, dst string, mode fs.FileMode) error
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

func (m *mirrorer) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	m.mu.Unlock()
}

func (m *mirrorer) failed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err != nil
}

// dir mirrors the contents of one directory; subdirectories go to another
// goroutine when a slot is free and are done inline otherwise.
func (m *mirrorer) dir(ctx context.Context, src, dst string) {
	if ctx.Err() != nil {
		m.fail(ctx.Err())
		return
	}
	if m.failed() {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		m.fail(err)
		return
	}
	ents, err := f.ReadDir(-1) // unsorted: the order does not matter here
	f.Close()
	if err != nil {
		m.fail(err)
		return
	}
	for _, e := range ents {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			info, err := e.Info()
			if err == nil {
				err = readableByAll(s, info)
			}
			if err == nil {
				err = os.Mkdir(d, 0o755)
			}
			if err != nil {
				m.fail(err)
				return
			}
			select {
			case m.slots <- struct{}{}:
				m.wg.Add(1)
				go func() {
					defer func() { <-m.slots; m.wg.Done() }()
					m.dir(ctx, s, d)
				}()
			default:
				m.dir(ctx, s, d)
			}
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(s)
			if err == nil {
				err = os.Symlink(target, d)
			}
			if err != nil {
				m.fail(err)
				return
			}
		case t.IsRegular():
			info, err := e.Info()
			if err == nil {
				err = readableByAll(s, info)
			}
			if err == nil {
				err = m.file(s, d, info.Mode())
			}
			if err != nil {
				m.fail(err)
				return
			}
		default:
			m.fail(fmt.Errorf("%s is a %s; only files, directories and symlinks can be prepared", s, t))
			return
		}
	}
}

// readableByAll refuses a source file every user may not read, or a
// directory every user may not list and enter. Whatever is imported
// becomes root's and readable by all (files 0444/0555, directories 0755:
// the checks run as nobody, who owns none of it and is in none of its
// groups, so "others" is what it needs), so copying a private file would
// widen it: to the checks of every later pull request and to every user of
// the host. Refusing keeps modes honest without keeping them: a refusal
// names the file and the fix, where a copy kept private would fail a check
// with a bare EACCES.
func readableByAll(p string, info fs.FileInfo) error {
	need := fs.FileMode(0o004)
	if info.IsDir() {
		need = 0o005
	}
	if info.Mode().Perm()&need == need {
		return nil
	}
	owner := ""
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf(" (owner uid %d, gid %d)", st.Uid, st.Gid)
	}
	what, fix := "file", "chmod o+r"
	if info.IsDir() {
		what, fix = "directory", "chmod o+rx"
	}
	return fmt.Errorf("the %s %s is mode %04o%s, not readable by every user: runmill does not widen its permissions to import it (the checks run as nobody, and the cached copy would be readable by all); %s it if the checks need it, or remove it from the install",
		what, p, info.Mode().Perm(), owner, fix)
}

// copyFile copies one file into the cache, read-only (the exec bit kept):
// cached bytes are never written again, whoever links them.
func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	perm := fs.FileMode(0o444)
	if mode&0o100 != 0 {
		perm = 0o555
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linkFile is the view's file: a hard link to the cached inode.
func linkFile(src, dst string, _ fs.FileMode) error { return os.Link(src, dst) }

// removeTree deletes a tree runmill made read-only, with the remover the
// checkouts use (one walk for both). Measured on the benchmark's view
// (benchCache, hard links), 2 cores under load 22–27: 2.1–2.7 s per tree,
// against 3.3–6.2 s for the chmod walk and os.RemoveAll it replaced.
func removeTree(dir string) error { return treeRemover.Tree(dir) }

// treeRemover is shared by every removal of the package, so concurrent
// removals together stay within its bound.
var treeRemover = rmtree.New(runtime.GOMAXPROCS(0))
