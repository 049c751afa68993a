// Package bounded reads and keeps at most a fixed number of bytes: runmill's
// one bounded reader (bundles, trust documents, stored records), its one
// non-blocking open of a file others may have planted (OpenRegular), and one
// capped buffer (a child process's stderr folded into an error).
package bounded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadAll reads r up to max+1 bytes, so a result longer than max shows the
// input was over the cap (or grew) without reading all of it. A regular
// *os.File is read into one buffer of its size: growing a buffer would copy
// a 100 MB bundle several times.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			buf := make([]byte, min(st.Size(), max)+1)
			n, err := io.ReadFull(f, buf)
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return buf[:n], nil
		}
	}
	return io.ReadAll(io.LimitReader(r, max+1))
}

// ErrNotRegular is OpenRegular's refusal of anything but a regular file.
var ErrNotRegular = errors.New("is not a regular file (symlinks, FIFOs and devices are refused)")

// OpenRegular opens path for reading only when it is a regular file, and
// never blocks doing so: O_NOFOLLOW refuses a symlink as the last component,
// O_NONBLOCK makes the open of a FIFO or device planted there return at once
// (a FIFO without a writer would block open(2) forever), and fstat of what was
// opened — not a stat of the name beforehand, which a swap would outrun —
// refuses anything that is not a regular file. O_NONBLOCK does not affect
// reads of a regular file.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s %w", path, ErrNotRegular)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s %w", path, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadFile reads path, which must be a regular file (opened by
// OpenRegular: no symlink, nothing that blocks) of at most max bytes;
// anything else, or a file that grew past max while it was read, is an
// error rather than a truncation.
func ReadFile(path string, max int64) ([]byte, error) {
	refused := fmt.Errorf("%s is not a regular file of at most %d bytes", path, max)
	f, fi, err := OpenRegular(path)
	if errors.Is(err, ErrNotRegular) {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, refused
	}
	b, err := ReadAll(f, max)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, refused
	}
	return b, nil
}

// Buffer keeps the first Max bytes written to it and discards the rest
// while reporting every write complete, so a chatty child never blocks on
// a full pipe and never fills memory.
type Buffer struct {
	bytes.Buffer
	Max int
}

func (b *Buffer) Write(p []byte) (int, error) {
	if room := b.Max - b.Buffer.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
