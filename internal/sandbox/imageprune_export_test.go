package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"

	"github.com/containerd/errdefs"
)

// ImageImported reports whether the image tarball at path is imported
// (under its content name), for the pruning test.
func (s *Sandbox) ImageImported(ctx context.Context, path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(b)
	_, err = s.client.GetImage(s.ctx(ctx), imageNamePrefix+hex.EncodeToString(sum[:]))
	if errdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
