// Package bounded reads and keeps at most a fixed number of bytes: runmill's
// one bounded reader (bundles, trust documents, stored records), one capped
// buffer (a child process's stderr folded into an error), and the one open
// of a file that must be regular (OpenRegular), which never waits on a FIFO.
package bounded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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

// ReadFile reads path, which must be a regular file (OpenRegular: not a
// symlink, nothing that can make it wait) of at most max bytes; anything
// else, or a file that grew past max while it was read, is an error rather
// than a truncation.
func ReadFile(path string, max int64) ([]byte, error) {
	refused := fmt.Errorf("%s is not a regular file of at most %d bytes", path, max)
	f, fi, err := OpenRegular(path)
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", refused, err)
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
