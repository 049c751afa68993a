// Package unzip unpacks a zip archive from an untrusted source — a workflow
// run's artifact — into a new directory without letting the archive decide
// anything outside it: no path traversal, no absolute or odd names, no links
// or devices, no member written twice, and caps on the member count, each
// member's size and the total, enforced on the bytes actually inflated
// rather than on the sizes the archive claims (a zip bomb lies about them).
package unzip

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound one extraction.
type Limits struct {
	MaxFiles      int   // members (files and directories)
	MaxFileBytes  int64 // inflated bytes of one file
	MaxTotalBytes int64 // inflated bytes of all files
}

// DefaultLimits fit an evidence artifact (a bundle, a statement and its
// content-addressed stdout/stderr/report bodies) with a wide margin.
var DefaultLimits = Limits{MaxFiles: 100_000, MaxFileBytes: 1 << 30, MaxTotalBytes: 4 << 30}

// Error is an archive that is not safe or not within the limits.
type Error struct {
	Member string // "" for the archive as a whole
	Msg    string
}

func (e *Error) Error() string {
	if e.Member == "" {
		return e.Msg
	}
	return fmt.Sprintf("member %q: %s", e.Member, e.Msg)
}

func bad(member, format string, args ...any) error {
	return &Error{Member: member, Msg: fmt.Sprintf(format, args...)}
}

// Extract unpacks the archive r (size bytes) into dir, which must not exist
// yet (its parent must). It returns the files written, relative to dir with
// forward slashes. On any error it removes dir again: a half-unpacked
// archive must not be mistaken for the evidence.
func Extract(r io.ReaderAt, size int64, dir string, l Limits) (files []string, err error) {
	zr, err := zip.NewReader(r, size)
	if errors.Is(err, zip.ErrInsecurePath) {
		// GODEBUG=zipinsecurepath=0 reports it here; memberName says which.
		err = nil
	}
	if err != nil {
		return nil, bad("", "not a zip archive: %v", err)
	}
	if len(zr.File) > l.MaxFiles {
		return nil, bad("", "%d members exceed the limit of %d", len(zr.File), l.MaxFiles)
	}
	// Every name is checked before anything is written.
	seen := map[string]bool{}
	for _, f := range zr.File {
		name, err := memberName(f)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(strings.TrimSuffix(name, "/"))
		if seen[key] {
			// Also case variants: on a case-insensitive file system they
			// would be one file written twice.
			return nil, bad(f.Name, "listed twice")
		}
		seen[key] = true
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			files = nil
		}
	}()
	var total int64
	for _, f := range zr.File {
		name, _ := memberName(f)
		target := filepath.Join(dir, filepath.FromSlash(name))
		if f.Mode().IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, bad(f.Name, "creating the directory: %v", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, bad(f.Name, "creating its directory: %v", err)
		}
		n, err := writeMember(f, target, min(l.MaxFileBytes, l.MaxTotalBytes-total))
		if err != nil {
			return nil, err
		}
		total += n
		files = append(files, name)
	}
	return files, nil
}

// memberName validates a member's name and type and returns the name.
func memberName(f *zip.File) (string, error) {
	name := f.Name
	switch m := f.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "", bad(name, "is a symbolic link; links could point anywhere, so archives with links are refused")
	case !m.IsDir() && !m.IsRegular():
		return "", bad(name, "is a %s, not a regular file or directory", m.Type())
	}
	dirName := strings.TrimSuffix(name, "/")
	switch {
	case dirName == "" || strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/"):
		return "", bad(name, "is not a relative slash-separated path")
	case path.Clean(dirName) != dirName || !filepath.IsLocal(filepath.FromSlash(dirName)):
		return "", bad(name, "leaves the directory or is not in canonical form (.., ., //)")
	case strings.HasSuffix(name, "/") && !f.Mode().IsDir():
		return "", bad(name, "ends in / but is not a directory")
	}
	return name, nil
}

// writeMember inflates f into a new file at target, at most max bytes.
func writeMember(f *zip.File, target string, max int64) (int64, error) {
	if f.UncompressedSize64 > uint64(max) {
		return 0, bad(f.Name, "claims %d bytes, over the limit of %d", f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return 0, bad(f.Name, "%v", err)
	}
	defer rc.Close()
	// O_EXCL: nothing is ever overwritten, and with a fresh dir and no
	// links in the archive nothing on the way can point elsewhere.
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, bad(f.Name, "creating the file: %v", err)
	}
	n, err := io.Copy(out, io.LimitReader(rc, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat):
		return n, bad(f.Name, "corrupt: %v", err)
	case err != nil:
		return n, bad(f.Name, "%v", err)
	case n > max:
		return n, bad(f.Name, "inflates past the limit of %d bytes", max)
	}
	return n, nil
}
