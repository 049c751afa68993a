package deps

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/lastuse"
)

// objects is the content-addressed file store shared by every cache entry
// (StateDir/deps/objects): an entry's tree is made of hard links to it, so
// two installs that hold the same package at the same version — the base's
// and the candidate's of a change that bumps one library — store its bytes
// once (issue 15: "preparing both sides does not copy a package twice").
// An object's name is the SHA-256 of its bytes and its exec bit, so a link
// to it can never show other bytes without every entry holding it failing
// its receipt's fingerprint on reuse.
//
// It also carries the cache entries the preparation or import using it
// holds (uses), released when that ends (Prepared.Close).
type objects struct {
	dir  string
	uses *lastuse.Set
	// Copied and Linked count the bytes this store wrote and the bytes it
	// reused by linking, for Stats.
	copied, linked atomic.Int64
}

func newObjects(stateDir string) *objects {
	return &objects{dir: filepath.Join(stateDir, "deps", "objects"), uses: &lastuse.Set{}}
}

// fill holds the store and the import's own directory tmp while an import
// fills it (a shared lock each): Tidy removes an object no entry links
// only while no import holds the store — a new object has no link yet
// until the import links it — and a crashed import's directory only when
// no live import holds it. Call the returned release when the import is
// in place or has failed.
func (o *objects) fill(tmp string) (release func(), err error) {
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	store, err := lastuse.Hold(o.dir)
	if err != nil {
		return nil, fmt.Errorf("holding the object store %s: %w", o.dir, err)
	}
	own, err := lastuse.Hold(tmp)
	if err != nil {
		store.Close()
		return nil, err
	}
	return func() { own.Close(); store.Close() }, nil
}

// CopyStats are the bytes an import wrote into the object store and the
// bytes it found there already (hard-linked, not copied).
type CopyStats struct {
	CopiedBytes int64 `json:"copied_bytes"`
	LinkedBytes int64 `json:"linked_bytes"`
}

func (o *objects) stats() CopyStats {
	return CopyStats{CopiedBytes: o.copied.Load(), LinkedBytes: o.linked.Load()}
}

// file is mirror's file function: dst becomes a hard link to the object
// holding src's bytes, stored first when it is new. src is hashed before
// anything is written, so a file already stored costs a read and a link;
// a new one is hashed again while it is copied, and a file that changed
// in between is refused.
func (o *objects) file(src, dst string, mode fs.FileMode) error {
	// An object can go between the moment it is found (or stored) and the
	// link to it: a concurrent import that judged it mutated removes it
	// (valid). CI saw this twice as "link …: no such file or directory"
	// while imports linked many files of one content (LICENSE files).
	// Storing it again is always right: the bytes are src's.
	var err error
	for range 3 {
		if err = o.storeAndLink(src, dst, mode); !errors.Is(err, fs.ErrNotExist) || !objectGone(dst) {
			return err
		}
	}
	return err
}

// objectGone: a link's ENOENT came from the object, not from dst's
// directory (which mirror makes before any file in it).
func objectGone(dst string) bool {
	_, err := os.Lstat(filepath.Dir(dst))
	return err == nil
}

func (o *objects) storeAndLink(src, dst string, mode fs.FileMode) error {
	exec := mode&0o100 != 0
	sum, size, err := hashFile(src)
	if err != nil {
		return err
	}
	kind := "r"
	if exec {
		kind = "x"
	}
	obj := filepath.Join(o.dir, sum[:2], sum+"-"+kind)
	if ok, err := o.valid(obj, sum); err != nil {
		return err
	} else if ok {
		if err := os.Link(obj, dst); err == nil {
			o.linked.Add(size)
			return nil
		} else if !errors.Is(err, syscall.EMLINK) {
			return err
		}
		// The filesystem's link limit (ext4: 65 000) is reached for this
		// object — a common LICENSE, say: this file gets its own copy.
		o.copied.Add(size)
		return copyFile(src, dst, mode)
	}
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(obj), ".tmp-"+fsname.Random(8))
	if err := copyFile(src, tmp, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	got, _, err := hashFile(tmp)
	if err == nil && got != sum {
		err = fmt.Errorf("%s changed while it was imported", src)
	}
	if err == nil {
		// A concurrent import may have stored the same object: either
		// inode holds the same bytes.
		err = os.Rename(tmp, obj)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	o.copied.Add(size)
	return os.Link(obj, dst)
}

// valid reports whether the object exists with the bytes its name says;
// a mutated object is removed (entries linking it fail their fingerprint
// on reuse and are imported afresh).
func (o *objects) valid(obj, sum string) (bool, error) {
	st, err := os.Lstat(obj)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.Mode().IsRegular() {
		got, _, err := hashFile(obj)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // removed meanwhile: stored afresh
		}
		if err != nil {
			// Unreadable is not mutated: removing it would pull it from
			// under every import about to link it.
			return false, fmt.Errorf("reading the object %s: %w", obj, err)
		}
		if got == sum {
			return true, nil
		}
	}
	if err := os.Remove(obj); err != nil {
		return false, fmt.Errorf("removing the mutated object %s: %w", obj, err)
	}
	return false, nil
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
