package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrArtifactOverCap is PutArtifact's refusal of a stream longer than its
// cap.
var ErrArtifactOverCap = errors.New("longer than its cap")

// PutArtifact streams r into the artifacts directory dir without holding
// it: through the hash into a temporary file in the store, renamed to its
// address once the digest is known. More than max bytes is refused
// (ErrArtifactOverCap) and nothing is kept, so a file that grew after it was
// measured is never stored. It returns the address and the bytes stored.
func PutArtifact(dir string, r io.Reader, max int64) (addr string, n int64, err error) {
	sub := filepath.Join(dir, artifactSub)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", 0, fmt.Errorf("storing artifact: %w", err)
	}
	tmp, err := os.CreateTemp(sub, ".tmp-*")
	if err != nil {
		return "", 0, fmt.Errorf("storing artifact: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err = io.Copy(io.MultiWriter(h, tmp), io.LimitReader(r, max+1))
	if err != nil {
		return "", n, fmt.Errorf("storing artifact: %w", err)
	}
	if n > max {
		return "", n, ErrArtifactOverCap
	}
	if err = tmp.Close(); err != nil {
		return "", n, fmt.Errorf("storing artifact: %w", err)
	}
	addr = ArtifactAddress(hex.EncodeToString(h.Sum(nil)))
	// Renaming over an existing body of the same digest replaces equal
	// bytes with equal bytes.
	path, _ := ArtifactPath(dir, addr)
	if err = os.Rename(tmp.Name(), path); err != nil {
		return "", n, fmt.Errorf("storing artifact: %w", err)
	}
	return addr, n, nil
}
