package rmtree_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/rmtree"
)

// tree writes a tree of depth 3 with files in every directory and a
// symlink pointing outside it; readOnly makes every directory 0555 and
// every file 0444, as a prepared dependency view or a chmod -R a-w leaves
// them.
func tree(t *testing.T, root string, readOnly bool) (outside string) {
	t.Helper()
	outside = filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("not in the tree"), 0o644); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for a := range 3 {
		for b := range 3 {
			d := filepath.Join(root, fmt.Sprint("a", a), fmt.Sprint("b", b))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for f := range 4 {
				if err := os.WriteFile(filepath.Join(d, fmt.Sprint("f", f)), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dirs = append(dirs, d, filepath.Dir(d))
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "a0", "link")); err != nil {
		t.Fatal(err)
	}
	if readOnly {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				os.Chmod(p, 0o444)
			}
			return nil
		})
		for _, d := range append(dirs, root) {
			os.Chmod(d, 0o555)
		}
	}
	return outside
}

func TestTree(t *testing.T) {
	for name, tc := range map[string]struct {
		readOnly bool
		workers  int
	}{
		"writable, serial":    {false, 0},
		"writable, parallel":  {false, 4},
		"read-only, parallel": {true, 4},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "tree")
			outside := tree(t, root, tc.readOnly)
			if err := rmtree.New(tc.workers).Tree(root); err != nil {
				t.Fatalf("Tree: %v", err)
			}
			if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the tree is still there: %v", err)
			}
			// A symlink is removed, never followed.
			if _, err := os.Stat(outside); err != nil {
				t.Fatalf("the link's target outside the tree is gone: %v", err)
			}
			if _, err := os.Stat(parent); err != nil {
				t.Fatalf("the parent is gone: %v", err)
			}
		})
	}
}

func TestTreeMissingAndFile(t *testing.T) {
	dir := t.TempDir()
	if err := rmtree.New(1).Tree(filepath.Join(dir, "absent")); err != nil {
		t.Fatalf("a missing tree: %v, want nil", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if err := rmtree.New(1).Tree(f); err != nil {
		t.Fatalf("a file: %v", err)
	}
	if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file is still there: %v", err)
	}
}

func TestTreeSymlinkRoot(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	os.WriteFile(filepath.Join(target, "keep"), nil, 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if err := rmtree.New(1).Tree(link); err != nil {
		t.Fatalf("Tree(link): %v", err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Fatalf("the link was followed: %v", err)
	}
}
