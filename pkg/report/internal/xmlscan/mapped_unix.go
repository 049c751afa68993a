//go:build unix

package xmlscan

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapping is a report file mapped read-only: the scanner reads the page
// cache in place rather than copying every byte into its buffer, which was
// a tenth of the CPU time of a 100 MB report.
type mapping struct {
	m    []byte // the whole mapping, from a page boundary
	lead int    // bytes of m before the file's offset
	done int    // pages of m already released
}

// minMapped is the smallest rest of a file worth mapping: below it a few
// reads cost less than setting up a mapping.
const minMapped = 1 << 20

// releaseStep is how far the scanner gets past bytes before their pages
// are released, so the mapping adds a few megabytes to the resident set,
// not the size of the report.
const releaseStep = 4 << 20

// mapFile maps the rest of r, at most limit bytes, when r is a regular file
// with at least minMapped bytes left. It returns the mapping and those
// bytes, or nil to read r instead.
func mapFile(r io.Reader, limit int64) (*mapping, []byte) {
	f, ok := r.(*os.File)
	if !ok {
		return nil, nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || st.Size()-off < minMapped {
		return nil, nil
	}
	start := off &^ int64(os.Getpagesize()-1)
	n := min(st.Size()-start, off-start+limit)
	if n != int64(int(n)) {
		return nil, nil
	}
	m, err := unix.Mmap(int(f.Fd()), start, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
	mp := &mapping{m: m, lead: int(off - start)}
	return mp, m[mp.lead:]
}

// release drops the pages wholly before data[upTo] from the process, once
// they add up to releaseStep: they stay in the page cache, and the scanner
// reads behind itself only to count lines for an error.
func (mp *mapping) release(upTo int) {
	end := (mp.lead + upTo) &^ (os.Getpagesize() - 1)
	if end-mp.done >= releaseStep {
		_ = unix.Madvise(mp.m[mp.done:end], unix.MADV_DONTNEED)
		mp.done = end
	}
}

// contains reports whether addr lies in the mapping.
func (mp *mapping) contains(addr uintptr) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mp.m)))
	return addr >= base && addr-base < uintptr(len(mp.m))
}

func (mp *mapping) close() { _ = unix.Munmap(mp.m) }
