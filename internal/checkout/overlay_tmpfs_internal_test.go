package checkout

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
)

// TestLayersOnTmpfs: in layered mode the commits' layers live on a private
// tmpfs, checkouts over it hold the commit's files, and Close leaves no
// mount and no session behind; a tree the tmpfs cannot hold is written on
// disk instead, and the checkout is the same.
func TestLayersOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("layered checkouts need root")
		}
		t.Skip("layered checkouts need root")
	}
	r := gittest.New(t)
	r.Write("small.txt", "small\n")
	small := r.Commit("small")
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	r.Write("big.txt", big)
	large := r.Commit("large")
	for _, tc := range []struct {
		name, size, commit string
		onDisk             bool
	}{
		{"fits", "size=25%", small, false},
		{"too large for the tmpfs", "size=64k", large, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old string) { layerTmpfsSize = old }(layerTmpfsSize)
			layerTmpfsSize = tc.size
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
			if tc.onDisk {
				if b, err := os.ReadFile(filepath.Join(co.Dir, "big.txt")); err != nil || string(b) != big {
					t.Errorf("big.txt: %d bytes, %v", len(b), err)
				}
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
