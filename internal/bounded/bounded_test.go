package bounded_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/bounded"
)

func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) *os.File {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	run := func(name string, open func() any, max int64, want string) {
		t.Run(name, func(t *testing.T) {
			var got []byte
			var err error
			switch r := open().(type) {
			case *os.File:
				got, err = bounded.ReadAll(r, max)
			case *strings.Reader:
				got, err = bounded.ReadAll(r, max)
			}
			if err != nil || string(got) != want {
				t.Errorf("ReadAll = %q, %v; want %q", got, err, want)
			}
		})
	}
	run("stream under the cap", func() any { return strings.NewReader("abc") }, 5, "abc")
	run("stream over the cap keeps one byte more", func() any { return strings.NewReader("abcdefgh") }, 5, "abcdef")
	run("file under the cap", func() any { return file("abc") }, 5, "abc")
	run("file at the cap", func() any { return file("abcde") }, 5, "abcde")
	run("file over the cap keeps one byte more", func() any { return file("abcdefgh") }, 5, "abcdef")
	run("empty file", func() any { return file("") }, 5, "")
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	os.WriteFile(small, []byte("1234"), 0o644)
	os.WriteFile(big, []byte("123456"), 0o644)
	if err := os.Symlink(small, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path    string
		want    string
		errPart string
	}{
		"regular under the cap": {small, "1234", ""},
		"over the cap":          {big, "", "not a regular file of at most 5 bytes"},
		"a directory":           {dir, "", "not a regular file"},
		"absent":                {filepath.Join(dir, "none"), "", "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := bounded.ReadFile(tc.path, 5)
			if tc.errPart == "" {
				if err != nil || string(got) != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Fatalf("ReadFile = %q, %v; want an error with %q", got, err, tc.errPart)
			}
		})
	}
}

func TestBuffer(t *testing.T) {
	b := &bounded.Buffer{Max: 4}
	for _, w := range []string{"ab", "cdef", "gh"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: a capped buffer reports every write complete", w, n, err)
		}
	}
	if !bytes.Equal(b.Bytes(), []byte("abcd")) {
		t.Fatalf("kept %q, want the first 4 bytes", b.Bytes())
	}
}

// TestOpenRegularNeverWaits: a FIFO (with no writer, whose plain open would
// wait forever), a directory, a device and a symlink are refused at once
// with ErrNotRegular naming what they are; a regular file opens, with its
// FileInfo. The test's own timeout is the only clock: a blocking open
// hangs it.
func TestOpenRegularNeverWaits(t *testing.T) {
	dir := t.TempDir()
	file, fifo := filepath.Join(dir, "file"), filepath.Join(dir, "fifo")
	os.WriteFile(file, []byte("content"), 0o644)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, filepath.Join(dir, "to-fifo"))
	os.Symlink(file, filepath.Join(dir, "to-file"))
	for name, tc := range map[string]struct {
		path string
		kind string // "" opens
	}{
		"regular":          {file, ""},
		"symlink to file":  {filepath.Join(dir, "to-file"), "symlink"},
		"fifo":             {fifo, "named pipe"},
		"symlink to fifo":  {filepath.Join(dir, "to-fifo"), "symlink"},
		"directory":        {dir, "directory"},
		"character device": {"/dev/null", "device"},
	} {
		t.Run(name, func(t *testing.T) {
			f, fi, err := bounded.OpenRegular(tc.path)
			if tc.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if b, err := io.ReadAll(f); err != nil || string(b) != "content" || f.Name() != tc.path || fi.Size() != 7 {
					t.Fatalf("read %q, %v from %s (size %d)", b, err, f.Name(), fi.Size())
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, bounded.ErrNotRegular) || !strings.Contains(err.Error(), "is a "+tc.kind+", not a regular file") {
				t.Fatalf("error %v, want ErrNotRegular naming a %s", err, tc.kind)
			}
			if _, err := bounded.ReadFile(tc.path, 100); !errors.Is(err, bounded.ErrNotRegular) {
				t.Fatalf("ReadFile: %v, want ErrNotRegular", err)
			}
		})
	}
	if _, _, err := bounded.OpenRegular(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want ErrNotExist", err)
	}
}
