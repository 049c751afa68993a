package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"

	"github.com/runmill/verify/internal/bounded"
)

// Toolchain identity by content (issue 16). A runner that extracts its
// toolchain afresh for every job (actions/setup-go, setup-node) gives every
// file a new modification time, so an identity made of path, size and
// mtime never repeats and nothing keyed by it — a reused baseline, the
// prepared toolchain cache — is ever found again. The files that identify a
// toolchain are therefore named by the SHA-256 of their bytes.
//
// Hashing costs: the Go toolchain's go binary and pkg/tool programs are
// about 70 MB (≈ 40 ms of SHA-256 from the page cache, 1–2 s cold from
// disk). fileDigests memoises each digest in the state dir by what any
// rewrite of the file changes — device, inode, size, mtime and ctime (ctime
// cannot be set back from user space) — so a warm run only stats them.

// fileDigestsName is the memo file in the toolchain cache directory (not a
// 64-hex key, so never taken for a cache).
const fileDigestsName = "file-digests.json"

// maxFileDigests bounds the memo: a state dir sees a few toolchains.
const maxFileDigests = 512

// fileDigests memoises content digests of files; safe for concurrent use.
// A nil *fileDigests hashes every time.
type fileDigests struct {
	path string // the memo file; "" keeps it in memory
	once sync.Once
	mu   sync.Mutex
	m    map[string]fileStamp
}

// fileStamp is what a file looked like when it hashed to SHA256.
type fileStamp struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64 // nanoseconds
	SHA256       string
}

func stampOf(fi os.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileStamp{}, false
	}
	return fileStamp{Dev: uint64(st.Dev), Ino: st.Ino, Size: fi.Size(),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
}

func (d *fileDigests) load() {
	d.m = map[string]fileStamp{}
	if d.path == "" {
		return
	}
	b, err := bounded.ReadFile(d.path, 1<<20)
	if err != nil {
		return
	}
	// A damaged memo only costs a re-hash.
	if json.Unmarshal(b, &d.m) != nil {
		d.m = map[string]fileStamp{}
	}
}

// sum is "sha256:<hex>" of the regular file at p (symlinks resolved), ""
// when it cannot be read.
func (d *fileDigests) sum(p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ""
	}
	stamp, ok := stampOf(fi)
	if !ok {
		return ""
	}
	if d == nil {
		s, _ := hashFile(real)
		return s
	}
	d.once.Do(d.load)
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.m[real]; ok && m.SHA256 != "" {
		want := m
		want.SHA256 = ""
		if want == stamp {
			return m.SHA256
		}
	}
	s, err := hashFile(real)
	if err != nil {
		return ""
	}
	// Stat again: a file rewritten while it was read is not memoised.
	if fi2, err := os.Stat(real); err == nil {
		if again, ok := stampOf(fi2); ok && again == stamp {
			stamp.SHA256 = s
			d.m[real] = stamp
			d.save()
		}
	}
	return s
}

// save writes the memo (called with mu held): a temporary file renamed
// over the old one, so a concurrent runmill reads one or the other.
func (d *fileDigests) save() {
	if d.path == "" {
		return
	}
	for len(d.m) > maxFileDigests {
		for k := range d.m {
			delete(d.m, k)
			break
		}
	}
	b, err := json.Marshal(d.m)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(d.path), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), ".digests-")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// goToolchainIdentity names the Go toolchain whose go binary is goBin (its
// real path) by content: GOROOT/VERSION and the digests of bin/go and of
// every program in pkg/tool/<goos>_<goarch> (compile, link, asm, vet, cgo,
// cover…: what the go command runs to build and test). Not its path: a
// toolchain copied elsewhere builds the same, and where the task finds it
// is part of every key through PATH. GOROOT/src is not hashed (about 15 000
// files); a release's sources are fixed by its VERSION, and the go
// command's cache hashes every source it compiles anyway.
func (d *fileDigests) goToolchainIdentity(goBin string) string {
	root := filepath.Dir(filepath.Dir(goBin))
	h := sha256.New()
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		v = nil // a toolchain built from source has none: the binaries decide
	}
	fmt.Fprintf(h, "version %q\ngo %s\n", v, d.sum(goBin))
	tools := filepath.Join(root, "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
	ents, _ := os.ReadDir(tools)
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "tool %q %s\n", n, d.sum(filepath.Join(tools, n)))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
