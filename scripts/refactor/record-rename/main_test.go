package main

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMove runs the tool on a runmill-shaped module whose traps (a field,
// a local and a struct type sharing moved names; an aliased import; a
// method called on a value and on a pointer) must come through unchanged,
// holds the result to testdata/move.want.txtar, requires it to build, vet
// and pass its tests, and requires a second run to change nothing.
func TestMove(t *testing.T) {
	dir := extract(t, "testdata/move.txtar")
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dir)
	golden := "testdata/move.want.txtar"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tree after the rename differs from %s (go test -run TestMove -update, then review):\n%s", golden, got)
	}
	gocmd(t, dir, "build", "./...")
	gocmd(t, dir, "vet", "./...")
	gocmd(t, dir, "test", "-count=1", "./...")

	if err := run(dir); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if again := snapshot(t, dir); !bytes.Equal(again, got) {
		t.Errorf("a second run changed the tree:\n%s", again)
	}
}

// TestRefuses: where the rewrite would be wrong the tool stops before it
// writes anything.
func TestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, archive, want string
	}{
		{"record shadowed by a parameter", "testdata/shadowed.txtar", `"record" is not pkg/record here`},
		{"moved code needs what stays", "testdata/needs-origin.txtar", "moved code refers to github.com/runmill/verify/pkg/verdict.helper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := extract(t, tc.archive)
			before := snapshot(t, dir)
			err := run(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run = %v, want an error containing %q", err, tc.want)
			}
			if after := snapshot(t, dir); !bytes.Equal(after, before) {
				t.Errorf("a refused run changed the tree:\n%s", after)
			}
		})
	}
}

func extract(t *testing.T, archive string) string {
	t.Helper()
	a, err := txtar.ParseFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot is every file under dir as one txtar archive, in path order.
func snapshot(t *testing.T, dir string) []byte {
	t.Helper()
	var a txtar.Archive
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		a.Files = append(a.Files, txtar.File{Name: filepath.ToSlash(rel), Data: b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return txtar.Format(&a)
}

func gocmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
