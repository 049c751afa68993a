package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/runmill/verify/pkg/rmerr"
)

// imageNamePrefix names imported tarballs by content: the same bytes are
// the same image, whatever file they came from.
const imageNamePrefix = "import.runmill.dev/image:sha256-"

// importImage imports an OCI image tarball (oci-layout or docker save) once
// per content digest and unpacks it into the default snapshotter.
func (s *Sandbox) importImage(ctx context.Context, path string) (containerd.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "opening image tarball").InField("image")
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "reading image tarball %s", path)
	}
	name := imageNamePrefix + hex.EncodeToString(h.Sum(nil))

	// One import at a time: two checks naming the same tarball must not
	// race to create the same image record.
	s.imageMu.Lock()
	defer s.imageMu.Unlock()
	if img, err := s.client.GetImage(ctx, name); err == nil {
		if ok, err := img.IsUnpacked(ctx, ""); err == nil && ok {
			s.stampImage(ctx, name)
			return img, nil
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "rewinding %s", path)
	}
	// The index gets our content name; the platform manifest inside it is
	// chosen at unpack time.
	if _, err := s.client.Import(ctx, f, containerd.WithIndexName(name)); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "importing image tarball %s", path)
	}
	img, err := s.client.GetImage(ctx, name)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "looking up imported image %s", name)
	}
	if err := img.Unpack(ctx, ""); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxImage, err, "unpacking image tarball %s", path)
	}
	s.stampImage(ctx, name)
	return img, nil
}
