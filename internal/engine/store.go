package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/evidence"
)

// StateDir picks runmill's state directory: the flag, else
// $RUNMILL_STATE_DIR, else /var/lib/runmill for root and
// $XDG_STATE_HOME/runmill (~/.local/state/runmill) otherwise.
//
// A relative directory is made absolute against the working directory: the
// sandbox binds state paths into tasks and containerd resolves them from
// its own directory, so a relative one would name another place.
func StateDir(flag string, getenv func(string) string) string {
	if flag != "" {
		return absolute(flag)
	}
	if d := getenv("RUNMILL_STATE_DIR"); d != "" {
		return absolute(d)
	}
	if os.Geteuid() == 0 {
		return "/var/lib/runmill"
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "runmill")
	}
	return filepath.Join(getenv("HOME"), ".local", "state", "runmill")
}

func absolute(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// store keeps a run's artifacts content-addressed in dir, in the layout
// pkg/evidence defines (the one `runmill evidence verify --artifacts-dir`
// re-hashes). ids is the run's account of admitted test ids (pkg/budget):
// the budget a run's reports share, kept with the run's other per-run
// bookkeeping.
type store struct {
	dir string
	ids *budget.Run
}

// newStore is the store of one run, with an empty id account.
func newStore(dir string) store { return store{dir: dir, ids: &budget.Run{}} }

// put stores b and returns its address "sha256/<hex>".
func (s store) put(b []byte) (string, error) {
	addr, _, err := s.putFrom(bytes.NewReader(b), int64(len(b)))
	return addr, err
}

// errOverCap is putFrom's refusal of a stream longer than its cap.
var errOverCap = evidence.ErrArtifactOverCap

// putFrom streams r into the store without holding it (evidence.PutArtifact):
// more than max bytes is refused (errOverCap) and nothing is kept, so a file
// that grew after it was measured is never stored.
func (s store) putFrom(r io.Reader, max int64) (addr string, n int64, err error) {
	return evidence.PutArtifact(s.dir, r, max)
}

// link stores the body of addr from the file at path, which must be a
// regular file (bounded.OpenRegular: nothing planted there blocks the
// open) of size bytes hashing to addr: as a hard link to that file where
// one can be made — a body reused run after run is then stored once per
// filesystem — else as a copy. trusted, when set, is what the file was when
// its bytes were last hashed: while it is unchanged (ctime included, which
// no write can set back) it is linked without reading it again.
func (s store) link(path, addr string, size int64, trusted *fileStamp) error {
	dst := s.path(addr)
	if dst == "" {
		return fmt.Errorf("%q is not an artifact address", addr)
	}
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		return nil // this run stored it already
	}
	f, fi, err := bounded.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.Size() != size {
		return fmt.Errorf("is %d bytes, not the recorded %d", fi.Size(), size)
	}
	if stamp, ok := stampOf(fi); trusted == nil || !ok || stamp != *trusted {
		h := sha256.New()
		if n, err := io.Copy(h, io.LimitReader(f, size+1)); err != nil || n != size || evidence.ArtifactAddress(hex.EncodeToString(h.Sum(nil))) != addr {
			return fmt.Errorf("is not the recorded %d bytes hashing to its address", size)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Only a file no one else can write is shared: a link to a file of
	// another user (a restored --reuse directory) would let that user
	// rewrite this run's evidence afterwards. Linked through the open
	// descriptor, so the file linked is the one checked, whatever the name
	// points at by now.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == uint32(os.Geteuid()) && fi.Mode().Perm()&0o022 == 0 {
		err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, dst, unix.AT_SYMLINK_FOLLOW)
		if err == nil || errors.Is(err, unix.EEXIST) {
			return nil
		}
	}
	// Another owner, another filesystem (--reuse DIR elsewhere), no /proc,
	// or a link the kernel refuses (fs.protected_hardlinks): a copy, hashed
	// again.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	got, n, err := s.putFrom(f, size)
	if err != nil || got != addr || n != size {
		return fmt.Errorf("is not the recorded %d bytes hashing to its address", size)
	}
	return nil
}

// path is where the body of addr lives ("" for what is not an address,
// which the store never returns).
func (s store) path(addr string) string {
	p, _ := evidence.ArtifactPath(s.dir, addr)
	return p
}

// holeAt reports whether f (of size bytes) has a hole before size: where a
// sparse file's allocated blocks fall short of its size, SEEK_HOLE says
// whether that is a hole or a filesystem that compresses (btrfs, zfs), whose
// honest files also use fewer blocks than bytes.
func holeAt(f *os.File, st os.FileInfo) (bool, int64, error) {
	size := st.Size()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Blocks*512 >= size {
		return false, 0, nil
	}
	off, err := f.Seek(0, unix.SEEK_HOLE)
	if err != nil {
		return false, 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, 0, err
	}
	return off < size, off, nil
}

// safeJoin joins a validated relative report path to root and refuses any
// existing component that is a symlink or not a directory: the report must
// resolve inside the checkout without following links (spec § 3).
func safeJoin(root, rel string) (string, []string, error) {
	parts := strings.Split(rel, "/")
	cur := root
	var missing []string
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		st, err := os.Lstat(cur)
		if os.IsNotExist(err) {
			if i < len(parts)-1 {
				missing = append(missing, cur)
			}
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if len(missing) > 0 {
			continue
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("report path %q passes through the symlink %s", rel, strings.Join(parts[:i+1], "/"))
		}
		if i < len(parts)-1 && !st.IsDir() {
			return "", nil, fmt.Errorf("report path %q: %s is not a directory", rel, strings.Join(parts[:i+1], "/"))
		}
	}
	return cur, missing, nil
}
