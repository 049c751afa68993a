package checkout

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
)

// TestLayersOnTmpfs: in layered mode the commits' layers live on a private
// tmpfs, checkouts over it hold the commit's files, and Close leaves no
// mount and no session behind; a tree whose measure does not fit what is
// left of the tmpfs is written on disk instead, and so is one that turns
// out larger than measured (line endings converted on checkout): the
// checkout is the same.
func TestLayersOnTmpfs(t *testing.T) {
	testreq.Root(t, "a layered checkout")
	r := gittest.New(t)
	r.Write("small.txt", "small\n")
	small := r.Commit("small")
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	r.Write("big.txt", big)
	large := r.Commit("large")
	r.Remove("big.txt")
	// 1.5 MiB in git, 3 MiB checked out.
	r.Write(".gitattributes", "lines.txt text eol=crlf\n")
	r.Write("lines.txt", strings.Repeat("\n", 3<<19))
	crlf := r.Commit("line endings")
	for _, tc := range []struct {
		name, commit string
		size         int64
		onDisk       bool
		file         string
		content      string
	}{
		{"fits", small, 64 << 20, false, "small.txt", "small\n"},
		{"too large for the tmpfs", large, 1 << 20, true, "big.txt", big},
		{"larger than measured", crlf, 2 << 20, true, "lines.txt", strings.Repeat("\r\n", 3<<19)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old func() int64) { layerTmpfsBytes = old }(layerTmpfsBytes)
			layerTmpfsBytes = func() int64 { return tc.size }
			m, err := NewManager(context.Background(), r.Dir, filepath.Join(t.TempDir(), "state"))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.EnableLayers(); err != nil {
				t.Fatalf("EnableLayers: %v", err)
			}
			layers := filepath.Join(m.session, "layers")
			var st syscall.Statfs_t
			if err := syscall.Statfs(layers, &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
				t.Fatalf("%s is not a tmpfs (type %#x, %v)", layers, st.Type, err)
			}
			co, err := m.Create(context.Background(), tc.commit)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(co.Dir, "small.txt")); err != nil || string(b) != "small\n" {
				t.Errorf("small.txt = %q, %v", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(co.Dir, tc.file)); err != nil || string(b) != tc.content {
				t.Errorf("%s: %d bytes, %v", tc.file, len(b), err)
			}
			if st.Blocks*uint64(st.Bsize) != uint64(tc.size) {
				t.Errorf("the tmpfs holds %d bytes, want %d", st.Blocks*uint64(st.Bsize), tc.size)
			}
			_, err = os.Stat(filepath.Join(m.session, "layers-disk"))
			if gotDisk := err == nil; gotDisk != tc.onDisk {
				t.Errorf("layer on disk %v, want %v", gotDisk, tc.onDisk)
			}
			session := m.session
			if err := co.Remove(); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			mounts, _ := mountinfo.Under(session)
			if len(mounts) > 0 || slices.Contains(mounts, layers) {
				t.Errorf("mounts left after Close: %q", mounts)
			}
			if _, err := os.Stat(session); !os.IsNotExist(err) {
				t.Errorf("the session is still there: %v", err)
			}
		})
	}
}
