package checkout_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/treehash"
)

// TestCreatePinned: the base's harness files laid over a candidate replace
// whatever the candidate has at their paths — an edited file, a removed
// one, a directory's worth, a symlink pointing out of the checkout — and
// full and layered checkouts of the same pins hash the same.
func TestCreatePinned(t *testing.T) {
	r := newRepo(t)
	outside := t.TempDir()
	// The candidate edits run.sh, removes testdata/fix.json, and turns
	// internal/a into a symlink to a directory outside the checkout.
	git(t, r.dir, "checkout", "-q", "-b", "hostile", r.candidate)
	writeFile(t, filepath.Join(r.dir, "run.sh"), "#!/bin/sh\necho forged\n", 0o644)
	os.Remove(filepath.Join(r.dir, "testdata/fix.json"))
	os.RemoveAll(filepath.Join(r.dir, "internal/a"))
	if err := os.Symlink(outside, filepath.Join(r.dir, "internal/a")); err != nil {
		t.Fatal(err)
	}
	git(t, r.dir, "add", "-A")
	git(t, r.dir, "commit", "-q", "-m", "hostile")
	hostile := git(t, r.dir, "rev-parse", "HEAD")
	blob := func(path string) string { return git(t, r.dir, "rev-parse", r.base+":"+path) }
	pins := []harness.Pin{
		{Path: "internal/a/a.go", Entry: harness.Entry{Mode: "100644", Blob: blob("internal/a/a.go")}},
		{Path: "run.sh", Entry: harness.Entry{Mode: "100755", Blob: blob("run.sh")}},
		{Path: "testdata/fix.json", Entry: harness.Entry{Mode: "100644", Blob: blob("testdata/fix.json")}},
	}
	digests := map[string]string{}
	modes(t, func(t *testing.T, newM func(testing.TB, string) *checkout.Manager) {
		m := newM(t, r.dir)
		c, err := m.CreatePinned(context.Background(), hostile, pins)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Remove()
		for path, want := range map[string]string{"run.sh": "#!/bin/sh\necho run\n", "testdata/fix.json": `{"ok": true}` + "\n", "internal/a/a.go": "package a\n"} {
			b, err := os.ReadFile(filepath.Join(c.Dir, path))
			if err != nil || string(b) != want {
				t.Errorf("%s = %q, %v; want the base's %q", path, b, err, want)
			}
		}
		if st, err := os.Stat(filepath.Join(c.Dir, "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("run.sh mode %v, %v; want the base's 0755", st.Mode(), err)
		}
		if st, err := os.Lstat(filepath.Join(c.Dir, "internal/a")); err != nil || !st.IsDir() {
			t.Errorf("internal/a is %v, %v; want a directory (the symlink replaced)", st.Mode(), err)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("a pin was written through the candidate's symlink: %v", ents)
		}
		// Everything else is the candidate's.
		if b, _ := os.ReadFile(filepath.Join(c.Dir, "main.go")); string(b) != "package main\n\nfunc main() { println(1) }\n" {
			t.Errorf("main.go = %q, want the candidate's", b)
		}
		d, _, err := treehash.Sum(context.Background(), c.Dir, treehash.Options{})
		if err != nil {
			t.Fatal(err)
		}
		digests[t.Name()] = d.String()
		// A plain checkout of the same commit is unaltered.
		plain, err := m.Create(context.Background(), hostile)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Remove()
		if b, _ := os.ReadFile(filepath.Join(plain.Dir, "run.sh")); string(b) != "#!/bin/sh\necho forged\n" {
			t.Errorf("an unpinned checkout shows run.sh = %q", b)
		}
	})
	if a, b := digests["TestCreatePinned/full"], digests["TestCreatePinned/layered"]; b != "" && a != b {
		t.Errorf("full checkout hashes %s, layered %s", a, b)
	}
}

// TestCreatePinnedRemoves (issue 25): a harness file new in the candidate
// (at the root, in a directory the candidate adds, beside files of a
// directory it shares with the base) is kept out of a pinned checkout, in
// full and layered checkouts alike, and the two hash the same; a removal
// under a laid file, or through the candidate's symlink, touches nothing
// outside the checkout.
func TestCreatePinnedRemoves(t *testing.T) {
	r := newRepo(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "keep.py"), "kept\n", 0o644)
	git(t, r.dir, "checkout", "-q", "-b", "adds", r.candidate)
	writeFile(t, filepath.Join(r.dir, "conftest.py"), "forged\n", 0o644)
	writeFile(t, filepath.Join(r.dir, "tests/new/conftest.py"), "forged\n", 0o644)
	writeFile(t, filepath.Join(r.dir, "internal/a/GNUmakefile"), "forged\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(r.dir, "out")); err != nil {
		t.Fatal(err)
	}
	git(t, r.dir, "add", "-A")
	git(t, r.dir, "commit", "-q", "-m", "adds")
	adds := git(t, r.dir, "rev-parse", "HEAD")
	pins := []harness.Pin{
		{Path: "conftest.py", Remove: true},
		{Path: "internal/a/GNUmakefile", Remove: true},
		{Path: "out/keep.py", Remove: true},
		{Path: "tests/new/conftest.py", Remove: true},
	}
	digests := map[string]string{}
	modes(t, func(t *testing.T, newM func(testing.TB, string) *checkout.Manager) {
		m := newM(t, r.dir)
		c, err := m.CreatePinned(context.Background(), adds, pins)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Remove()
		for _, p := range []string{"conftest.py", "tests/new/conftest.py", "internal/a/GNUmakefile"} {
			if _, err := os.Lstat(filepath.Join(c.Dir, p)); !os.IsNotExist(err) {
				t.Errorf("%s: %v, want it absent", p, err)
			}
		}
		for p, want := range map[string]string{"internal/a/a.go": "package a\n", "main.go": "package main\n\nfunc main() { println(1) }\n"} {
			if b, err := os.ReadFile(filepath.Join(c.Dir, p)); err != nil || string(b) != want {
				t.Errorf("%s = %q, %v; want the commit's", p, b, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(outside, "keep.py")); err != nil || string(b) != "kept\n" {
			t.Errorf("a removal reached through the candidate's symlink: %q, %v", b, err)
		}
		d, _, err := treehash.Sum(context.Background(), c.Dir, treehash.Options{})
		if err != nil {
			t.Fatal(err)
		}
		digests[t.Name()] = d.String()
	})
	if a, b := digests["TestCreatePinnedRemoves/full"], digests["TestCreatePinnedRemoves/layered"]; a == "" || a != b {
		t.Errorf("full checkout hashes %s, layered %s", a, b)
	}
}
