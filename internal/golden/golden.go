// Package golden compares test output with golden files under testdata/,
// the one way the project's tests do it. Run a package's tests with -update
// to rewrite its goldens, then read every changed golden before committing.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ (then read every changed golden)")

// Updating reports whether -update was given.
func Updating() bool { return *update }

// Bytes compares got with the file at path (or rewrites it under -update).
func Bytes(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden %s (run with -update to create it, then read it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// JSON compares got, as indented JSON, with testdata/<test name>.golden.json.
func JSON(t testing.TB, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	Bytes(t, filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden.json"), append(b, '\n'))
}
