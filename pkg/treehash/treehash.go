// Package treehash computes the deterministic digest of a directory tree: the
// measure spec/verification.md § 3 (Freshness) uses to decide whether a check's
// tree "did not move". It is runmill's one tree walker.
//
// # Encoding (version 1)
//
// The digest is SHA-256 over a fixed header followed by one record per entry
// of the tree. Integers are big-endian and fixed width; every variable-length
// field is length-prefixed, so the stream parses in exactly one way.
//
//	digest = SHA-256( header || record* )
//	header = "runmill-treehash/v1" 0x0A                   (20 bytes)
//	record = kind:u8  pathlen:u32  path  body
//	  kind 'd' (0x64) directory       body = (empty)
//	  kind 'f' (0x66) regular file    body = exec:u8  size:u64  sha256(content):32 bytes
//	  kind 'l' (0x6C) symbolic link   body = targetlen:u32  target
//
// The fields:
//
//   - path is relative to the root, components separated by '/', with no
//     leading "./" and no trailing '/'; its bytes are the file names' bytes
//     as the kernel returns them (no Unicode normalisation). The root itself
//     has no record.
//   - exec is 0x01 when the owner-execute bit (0100) is set and 0x00
//     otherwise: git's notion of an executable file. No other mode bit,
//     owner, timestamp or inode number is part of the digest.
//   - size is the file's length in bytes; the content digest covers exactly
//     those bytes.
//   - target is what readlink(2) returns, unchanged. Symbolic links are
//     hashed as links and never followed, whether they point inside the tree,
//     outside it (/etc/passwd) or nowhere.
//
// The records:
//
//   - Records appear in depth-first pre-order with siblings sorted by the
//     bytes of their names; equivalently, sorted by path where paths are
//     compared component by component. A directory precedes its contents, so
//     an empty directory has a record and is part of the digest.
//   - The entry ".git" directly under the root (the checkout's own git
//     metadata, whose contents differ from checkout to checkout) and every
//     path in Options.Exclude are omitted together with everything below
//     them. Nothing records that they were omitted: digests are comparable
//     only when computed with the same Options.
//   - FIFOs, sockets and device files have no content to hash; Sum fails
//     with RM-TREE-001 instead of skipping them.
//
// docs/treehash.md restates this encoding for implementers outside Go; the
// golden test in this package pins it.
//
// Sum reads files in parallel (a bounded pool of workers, one pooled buffer
// each), streams every file through SHA-256 and never holds a whole file in
// memory. The tree must be quiescent while it is hashed: a file that vanishes,
// changes type, or is found shorter or longer than its size is an error
// (RM-TREE-002) rather than a digest of something that never existed.
package treehash

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/runmill/verify/pkg/rmerr"
)

// Header starts the hashed stream; a new encoding gets a new header.
const Header = "runmill-treehash/v1\n"

// Record kinds of the encoding.
const (
	kindDir     = 'd'
	kindFile    = 'f'
	kindSymlink = 'l'
)

// Digest is the SHA-256 tree digest. Its text form is "sha256:<64 hex digits>".
type Digest [sha256.Size]byte

// String returns "sha256:<hex>".
func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// MarshalText implements encoding.TextMarshaler with the String form.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only the
// String form.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDigest parses the String form "sha256:<64 lowercase hex digits>".
func ParseDigest(s string) (Digest, error) {
	var d Digest
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hexPart) != 2*len(d) || strings.ToLower(hexPart) != hexPart {
		return Digest{}, fmt.Errorf("parsing tree digest %q: want sha256:<64 lowercase hex digits>", s)
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil {
		return Digest{}, fmt.Errorf("parsing tree digest %q: %w", s, err)
	}
	return d, nil
}

// Options configure Sum. The zero value hashes everything but the root's
// ".git".
type Options struct {
	// Exclude lists paths relative to the root ('/'-separated, clean, no
	// "..") that are omitted with everything below them, such as the mount
	// point of prepared dependencies ("node_modules"). Paths that do not exist
	// are ignored.
	Exclude []string
	// Workers bounds how many files are read at once; 0 picks a default
	// suited to GOMAXPROCS.
	Workers int
}

// Stats describe what a digest covers.
type Stats struct {
	Files    int   // regular files
	Dirs     int   // directories below the root
	Symlinks int   // symbolic links
	Bytes    int64 // total size of the regular files
}

// entry is one record. Workers fill exec, size and sum of file entries; the
// walker owns everything else.
type entry struct {
	path   string // relative, '/'-separated
	kind   byte
	exec   bool
	size   int64
	sum    [sha256.Size]byte
	target string // symlink target
}

// batch is the unit of work of the file workers: up to batchMax files of one
// directory, opened relative to that directory's descriptor so the kernel
// resolves the directory's path once per batch rather than once per file.
type batch struct {
	dir   string // relative directory, "" for the root
	files []*entry
}

const batchMax = 64

// bufSize is the read buffer of one worker: large enough that most source
// files are read by a single read(2), small enough to stay in cache.
const bufSize = 128 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// DefaultWorkers is the file-reading parallelism Sum uses when
// Options.Workers is 0: GOMAXPROCS plus one, so a worker blocked in a read
// that misses the page cache does not leave a CPU idle.
func DefaultWorkers() int { return runtime.GOMAXPROCS(0) + 1 }

// Sum walks dir and returns its digest (see the package documentation for
// the exact encoding) and what it covered. dir itself may be reached through
// a symbolic link; nothing below it is followed.
func Sum(ctx context.Context, dir string, opts Options) (Digest, Stats, error) {
	excluded, err := excludeSet(opts.Exclude)
	if err != nil {
		return Digest{}, Stats{}, err
	}
	workers := opts.Workers
	if workers < 0 {
		return Digest{}, Stats{}, fmt.Errorf("treehash: Workers must not be negative (got %d)", workers)
	}
	if workers == 0 {
		workers = DefaultWorkers()
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return Digest{}, Stats{}, rmerr.Wrap(rmerr.TreeUnreadable, err, "resolving tree root %s", dir)
	}
	if st, err := os.Stat(root); err != nil {
		return Digest{}, Stats{}, rmerr.Wrap(rmerr.TreeUnreadable, err, "reading tree root %s", root)
	} else if !st.IsDir() {
		return Digest{}, Stats{}, rmerr.New(rmerr.TreeUnreadable, "tree root %s is not a directory", root)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &walk{root: root, excluded: excluded, jobs: make(chan batch, 4*workers), cancel: cancel}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.hashFiles(ctx)
		}()
	}
	walkErr := w.dir(ctx, "")
	close(w.jobs)
	wg.Wait()
	if walkErr != nil {
		w.fail(walkErr)
	}
	if err := w.firstErr(); err != nil {
		return Digest{}, Stats{}, err
	}
	if err := ctx.Err(); err != nil {
		return Digest{}, Stats{}, fmt.Errorf("hashing tree %s: %w", root, err)
	}
	d, st := encode(w.entries)
	return d, st, nil
}

// excludeSet validates Options.Exclude and adds the root's ".git".
func excludeSet(paths []string) (map[string]struct{}, error) {
	set := map[string]struct{}{".git": {}}
	for _, p := range paths {
		if p == "" || p == "." || strings.HasPrefix(p, "/") || path.Clean(p) != p ||
			p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("treehash: excluded path %q must be relative, clean and inside the tree", p)
		}
		set[p] = struct{}{}
	}
	return set, nil
}

// walk is the state of one Sum.
type walk struct {
	root     string
	excluded map[string]struct{}
	entries  []*entry // in record order; appended by the walker only
	jobs     chan batch
	cancel   context.CancelFunc

	mu  sync.Mutex
	err error
}

func (w *walk) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel()
}

func (w *walk) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *walk) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return w.root + "/" + rel
}

// dir appends the records below the directory rel ("" is the root) in record
// order and queues its files for the workers before descending, so hashing
// starts while the walk goes on.
func (w *walk) dir(ctx context.Context, rel string) error {
	if ctx.Err() != nil {
		return nil // the cause is recorded by whoever cancelled
	}
	// os.ReadDir returns names sorted bytewise and the type from the
	// directory entry, so the walk needs no stat per entry.
	list, err := os.ReadDir(w.abs(rel))
	if err != nil {
		return rmerr.Wrap(rmerr.TreeUnreadable, err, "reading directory %s", w.abs(rel))
	}
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	records := make([]entry, 0, len(list))
	var files []*entry
	for _, de := range list {
		p := prefix + de.Name()
		if _, skip := w.excluded[p]; skip {
			continue
		}
		switch t := de.Type(); {
		case t.IsDir():
			records = append(records, entry{path: p, kind: kindDir})
		case t.IsRegular():
			records = append(records, entry{path: p, kind: kindFile})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(w.root + "/" + p)
			if err != nil {
				return rmerr.Wrap(rmerr.TreeUnreadable, err, "reading symbolic link %s", p)
			}
			records = append(records, entry{path: p, kind: kindSymlink, target: target})
		default:
			return specialFile(p, t)
		}
	}
	for i := range records {
		if records[i].kind == kindFile {
			files = append(files, &records[i])
		}
	}
	for len(files) > 0 {
		n := min(len(files), batchMax)
		select {
		case w.jobs <- batch{dir: rel, files: files[:n:n]}:
		case <-ctx.Done():
			return nil
		}
		files = files[n:]
	}
	for i := range records {
		e := &records[i]
		w.entries = append(w.entries, e)
		if e.kind == kindDir {
			if err := w.dir(ctx, e.path); err != nil {
				return err
			}
		}
	}
	return nil
}

func specialFile(p string, t fs.FileMode) error {
	kind := "special file"
	switch {
	case t&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case t&fs.ModeSocket != 0:
		kind = "socket"
	case t&fs.ModeCharDevice != 0:
		kind = "character device"
	case t&fs.ModeDevice != 0:
		kind = "block device"
	}
	return rmerr.New(rmerr.TreeSpecialFile, "%s is a %s, which has no content to hash", p, kind).
		WithHint("remove it from the tree; a check tree holds only files, directories and symbolic links")
}

// hashFiles is one worker: it hashes queued batches until the queue closes,
// with one pooled buffer and one reused SHA-256 state.
func (w *walk) hashFiles(ctx context.Context) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	h := sha256.New()
	for b := range w.jobs {
		if ctx.Err() != nil {
			continue // drain so the walker never blocks
		}
		if err := w.hashBatch(b, h, *bp); err != nil {
			w.fail(err)
		}
	}
}

func (w *walk) hashBatch(b batch, h hash.Hash, buf []byte) error {
	dirfd, err := openRetry(func() (int, error) {
		return syscall.Open(w.abs(b.dir), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	})
	if err != nil {
		return rmerr.Wrap(rmerr.TreeUnreadable, err, "opening directory %s", w.abs(b.dir))
	}
	defer syscall.Close(dirfd)
	for _, e := range b.files {
		if err := hashFile(dirfd, e, h, buf); err != nil {
			return err
		}
	}
	return nil
}

func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// hashFile fills e from the file's own descriptor: the mode and size come
// from fstat of the opened file, so what is hashed is what was measured.
func hashFile(dirfd int, e *entry, h hash.Hash, buf []byte) error {
	name := e.path[strings.LastIndexByte(e.path, '/')+1:]
	// O_NOFOLLOW: a file replaced by a symbolic link is not followed.
	// O_NONBLOCK: a file replaced by a FIFO cannot block the open.
	fd, err := openRetry(func() (int, error) {
		return syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	})
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOENT) {
			return changed(e.path, err)
		}
		return rmerr.Wrap(rmerr.TreeUnreadable, err, "opening %s", e.path)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return rmerr.Wrap(rmerr.TreeUnreadable, err, "reading the status of %s", e.path)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return changed(e.path, errors.New("no longer a regular file"))
	}
	e.exec = st.Mode&0o100 != 0
	e.size = st.Size
	h.Reset()
	// Ask for one byte more than the size promises, so a file that grew
	// since fstat is noticed without an extra read(2) for small files.
	for remaining := st.Size; remaining > 0; {
		want := len(buf)
		if remaining < int64(want) {
			want = int(remaining) + 1
		}
		n, err := syscall.Read(fd, buf[:want])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return rmerr.Wrap(rmerr.TreeUnreadable, err, "reading %s", e.path)
		}
		if n == 0 {
			return changed(e.path, fmt.Errorf("shorter than its size %d", st.Size))
		}
		if int64(n) > remaining {
			return changed(e.path, fmt.Errorf("longer than its size %d", st.Size))
		}
		h.Write(buf[:n])
		remaining -= int64(n)
	}
	h.Sum(e.sum[:0])
	return nil
}

func changed(p string, err error) error {
	return rmerr.Wrap(rmerr.TreeUnreadable, err, "%s changed while the tree was being hashed", p).
		WithHint("hash a quiescent tree: nothing may write to it while it is measured")
}

// encode writes the header and the records into SHA-256.
func encode(entries []*entry) (Digest, Stats) {
	var st Stats
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, Header...)
	for _, e := range entries {
		if len(buf) > cap(buf)-(64+len(e.path)+len(e.target)) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = append(buf, e.kind)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.path)))
		buf = append(buf, e.path...)
		switch e.kind {
		case kindDir:
			st.Dirs++
		case kindFile:
			st.Files++
			st.Bytes += e.size
			x := byte(0)
			if e.exec {
				x = 1
			}
			buf = append(buf, x)
			buf = binary.BigEndian.AppendUint64(buf, uint64(e.size))
			buf = append(buf, e.sum[:]...)
		case kindSymlink:
			st.Symlinks++
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.target)))
			buf = append(buf, e.target...)
		}
	}
	h.Write(buf)
	var d Digest
	h.Sum(d[:0])
	return d, st
}
