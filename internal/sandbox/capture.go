package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"sync"
)

// Capture is what was seen on one output stream of a task. The digest and
// size cover every byte the task wrote; only the first bytes (up to the cap)
// are kept, so a check printing gigabytes costs a hash, not memory.
type Capture struct {
	SHA256    string // hex SHA-256 of all bytes seen
	Size      int64  // number of bytes seen
	Kept      []byte // the first min(Size, cap) bytes
	Truncated bool   // Size > len(Kept)
}

// captureWriter hashes everything written to it and keeps a bounded prefix.
// Writes never fail: refusing bytes would block the task on a full pipe and
// turn an over-talkative check into a hang instead of a recorded result.
type captureWriter struct {
	mu   sync.Mutex
	h    hash.Hash
	max  int64
	n    int64
	kept []byte
	// observer sees every byte (Spec.Observer).
	observer io.Writer
}

var _ io.Writer = (*captureWriter)(nil)

func newCaptureWriter(max int64) *captureWriter {
	return &captureWriter{h: sha256.New(), max: max}
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.h.Write(p) // hash.Hash.Write never returns an error
	if w.observer != nil {
		w.observer.Write(p)
	}
	w.n += int64(len(p))
	if room := w.max - int64(len(w.kept)); room > 0 {
		k := p
		if int64(len(k)) > room {
			k = k[:room]
		}
		w.kept = append(w.kept, k...)
	}
	return len(p), nil
}

// capture returns the stream's record; call it after the stream is closed.
func (w *captureWriter) capture() Capture {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Capture{
		SHA256:    hex.EncodeToString(w.h.Sum(nil)),
		Size:      w.n,
		Kept:      append([]byte(nil), w.kept...),
		Truncated: w.n > int64(len(w.kept)),
	}
}
