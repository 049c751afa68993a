package unzip_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/unzip"
)

// FuzzExtract: whatever the archive, Extract never panics, never writes
// outside its directory, never creates a link, and stays within the limits.
func FuzzExtract(f *testing.F) {
	f.Add(archive(f, member{name: "a/b", body: "x"}))
	f.Add(archive(f, member{name: "../x", body: "x"}))
	f.Add(bomb(f))
	l := unzip.Limits{MaxFiles: 20, MaxFileBytes: 1 << 16, MaxTotalBytes: 1 << 17}
	f.Fuzz(func(t *testing.T, z []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "out")
		_, err := unzip.Extract(bytes.NewReader(z), int64(len(z)), dir, l)
		var total int64
		filepath.Walk(root, func(p string, fi os.FileInfo, werr error) error {
			if werr != nil || p == root {
				return nil
			}
			if p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Fatalf("wrote %s outside %s", p, dir)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("created a link %s", p)
			}
			if fi.Mode().IsRegular() {
				total += fi.Size()
			}
			return nil
		})
		if err != nil && total != 0 {
			t.Fatalf("failed (%v) but left %d bytes behind", err, total)
		}
		if total > l.MaxTotalBytes {
			t.Fatalf("wrote %d bytes, over the limit", total)
		}
	})
}
