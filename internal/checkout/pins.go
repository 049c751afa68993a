package checkout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/rmerr"
)

// maxPinBytes bounds one pinned harness file (a script or a runner config).
const maxPinBytes = 64 << 20

// pinLayerOf returns the layer holding exactly pins, writing it on first
// use; checkouts of any commit that pin the same files share it.
func (m *Manager) pinLayerOf(ctx context.Context, pins []harness.Pin) (string, error) {
	h := sha256.New()
	for _, p := range pins {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", p.Path, p.Mode, p.Blob)
	}
	key := "pins-" + hex.EncodeToString(h.Sum(nil))[:32]
	return m.layerOnce(ctx, key, "laying the harness", nil, func(dir string) error {
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = m.readable(filepath.Dir(dir), 0o755)
		}
		if err == nil {
			err = m.readable(dir, 0o755)
		}
		if err == nil {
			err = m.writePins(ctx, dir, pins)
		}
		return err
	})
}

// splitPins separates the files laid from the removals.
func splitPins(pins []harness.Pin) (files, removals []harness.Pin) {
	for _, p := range pins {
		if p.Remove {
			removals = append(removals, p)
		} else {
			files = append(files, p)
		}
	}
	return files, removals
}

// writePins writes each pin's blob at its path below root, replacing
// whatever the commit has there, and then deletes each removal's path (issue
// 25: a harness file new in the change is absent from the run with the
// base's harness). A layered checkout lays its files as a layer of their
// own and removes in its merged tree (overlay.go), where the deletion is a
// whiteout in the checkout's private upper directory. No path component is
// followed through a symlink: a candidate that made scripts/ a symlink
// cannot direct the base's script anywhere but into its own checkout, nor a
// removal at anything outside it.
func (m *Manager) writePins(ctx context.Context, root string, pins []harness.Pin) error {
	files, removals := splitPins(pins)
	if len(files) > 0 {
		blobs, err := m.readBlobs(ctx, files)
		if err != nil {
			return rmerr.Wrap(rmerr.CheckoutCreate, err, "reading the base's harness files")
		}
		for i, p := range files {
			if err := m.writePin(root, p, blobs[i]); err != nil {
				return rmerr.Wrap(rmerr.CheckoutCreate, err, "laying the base's harness file %s", p.Path).
					WithHint("the harness file must be a regular file or symlink at the base")
			}
		}
	}
	return removePins(root, removals)
}

// removePins deletes each removal's path below root; a path whose
// directory is missing or not a directory is already absent.
func removePins(root string, removals []harness.Pin) error {
	for _, p := range removals {
		if err := removePin(root, p.Path); err != nil {
			return rmerr.Wrap(rmerr.CheckoutCreate, err, "keeping the harness file %s (new in the change) out of the checkout", p.Path)
		}
	}
	return nil
}

// pinSegments splits a pin's path, refusing one that is not a clean
// repository path (or reaches into .git).
func pinSegments(name string) ([]string, error) {
	segs := strings.Split(name, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || s == ".git" {
			return nil, fmt.Errorf("not a clean repository path")
		}
	}
	return segs, nil
}

func removePin(root, name string) error {
	segs, err := pinSegments(name)
	if err != nil {
		return err
	}
	dir := root
	for _, s := range segs[:len(segs)-1] {
		dir = filepath.Join(dir, s)
		st, err := os.Lstat(dir)
		switch {
		case err == nil && st.IsDir():
			continue
		case err == nil, errors.Is(err, os.ErrNotExist):
			return nil // no directory here (a symlink is not followed): nothing lies below
		default:
			return err
		}
	}
	err = os.RemoveAll(filepath.Join(dir, segs[len(segs)-1]))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// readBlobs reads every pin's blob with one git process: a process per file
// cost more than writing it.
func (m *Manager) readBlobs(ctx context.Context, pins []harness.Pin) ([][]byte, error) {
	ids := make([]string, len(pins))
	for i, p := range pins {
		ids[i] = p.Blob
	}
	return (&git.Repo{Dir: m.repo}).ReadBlobs(ctx, ids, maxPinBytes)
}

func (m *Manager) writePin(root string, p harness.Pin, b []byte) error {
	segs, err := pinSegments(p.Path)
	if err != nil {
		return err
	}
	dir := root
	for _, s := range segs[:len(segs)-1] {
		dir = filepath.Join(dir, s)
		st, err := os.Lstat(dir)
		switch {
		case err == nil && st.IsDir():
			continue
		case err == nil: // a file or symlink where the base has a directory
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if err := m.readable(dir, 0o755); err != nil {
			return err
		}
	}
	target := filepath.Join(dir, segs[len(segs)-1])
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	var mode os.FileMode
	switch p.Mode {
	case "120000":
		return os.Symlink(string(b), target)
	case "100755":
		mode = 0o755
	case "100644":
		mode = 0o644
	default:
		return fmt.Errorf("git mode %s is not a file", p.Mode)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Under any umask the sandbox user reads it, and the exec bit is git's.
	return os.Chmod(target, mode)
}
