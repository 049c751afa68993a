package unzip_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/unzip"
)

type member struct {
	name string
	body string
	mode fs.FileMode // 0: regular 0644
}

func archive(t testing.TB, ms ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		h.SetMode(0o644)
		if m.mode != 0 {
			h.SetMode(m.mode)
		}
		f, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(m.body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func extract(t *testing.T, z []byte, l unzip.Limits) (string, []string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	files, err := unzip.Extract(bytes.NewReader(z), int64(len(z)), dir, l)
	return dir, files, err
}

func TestExtract(t *testing.T) {
	z := archive(t, member{name: "run/"}, member{name: "run/evidence.json", body: "{}"},
		member{name: "run/artifacts/sha256/ab", body: "out"}, member{name: "statement.json", body: "{\"a\":1}"})
	dir, files, err := extract(t, z, unzip.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"run/evidence.json", "run/artifacts/sha256/ab", "statement.json"}; !slices.Equal(files, want) {
		t.Fatalf("files %v; want %v", files, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run", "artifacts", "sha256", "ab")); string(b) != "out" {
		t.Fatalf("content %q", b)
	}
}

func TestExtractRefuses(t *testing.T) {
	small := unzip.Limits{MaxFiles: 3, MaxFileBytes: 10, MaxTotalBytes: 15}
	for name, tc := range map[string]struct {
		zip  []byte
		l    unzip.Limits
		want string
	}{
		"parent traversal":    {archive(t, member{name: "../escape", body: "x"}), unzip.DefaultLimits, "leaves the directory"},
		"inner traversal":     {archive(t, member{name: "a/../../escape", body: "x"}), unzip.DefaultLimits, "leaves the directory"},
		"absolute":            {archive(t, member{name: "/etc/passwd", body: "x"}), unzip.DefaultLimits, "not a relative"},
		"backslash":           {archive(t, member{name: `..\escape`, body: "x"}), unzip.DefaultLimits, "not a relative"},
		"dot segment":         {archive(t, member{name: "./a", body: "x"}), unzip.DefaultLimits, "canonical"},
		"double slash":        {archive(t, member{name: "a//b", body: "x"}), unzip.DefaultLimits, "canonical"},
		"symlink":             {archive(t, member{name: "link", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), unzip.DefaultLimits, "symbolic link"},
		"device":              {archive(t, member{name: "dev", mode: fs.ModeDevice | 0o644}), unzip.DefaultLimits, "not a regular file"},
		"duplicate":           {archive(t, member{name: "a", body: "1"}, member{name: "a", body: "2"}), unzip.DefaultLimits, "listed twice"},
		"case variant":        {archive(t, member{name: "A", body: "1"}, member{name: "a", body: "2"}), unzip.DefaultLimits, "listed twice"},
		"file under file":     {archive(t, member{name: "a", body: "1"}, member{name: "a/b", body: "2"}), unzip.DefaultLimits, "creating its directory"},
		"too many members":    {archive(t, member{name: "a"}, member{name: "b"}, member{name: "c"}, member{name: "d"}), small, "4 members exceed"},
		"file one byte over":  {archive(t, member{name: "a", body: "12345678901"}), small, "over the limit of 10"},
		"total over":          {archive(t, member{name: "a", body: "1234567890"}, member{name: "b", body: "123456"}), small, "over the limit of 5"},
		"not a zip":           {[]byte("PK\x03\x04 definitely not"), unzip.DefaultLimits, "not a zip"},
		"size lie (zip bomb)": {bomb(t), unzip.Limits{MaxFiles: 10, MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 20}, "bomb"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, files, err := extract(t, tc.zip, tc.l)
			var ue *unzip.Error
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), strings.TrimPrefix(tc.want, "bomb")) {
				t.Fatalf("Extract = %v, %v; want an unzip.Error containing %q", files, err, tc.want)
			}
			if _, serr := os.Lstat(dir); !os.IsNotExist(serr) {
				t.Fatalf("the half-unpacked directory was left behind: %v", serr)
			}
			if _, serr := os.Lstat(filepath.Join(filepath.Dir(dir), "escape")); !os.IsNotExist(serr) {
				t.Fatal("a member escaped the directory")
			}
		})
	}
}

// bomb is one member whose header claims 10 bytes but inflates to 8 MiB.
func bomb(t testing.TB) []byte {
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestCompression)
	fw.Write(make([]byte, 8<<20))
	fw.Close()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: "bomb", Method: zip.Deflate, CompressedSize64: uint64(raw.Len()), UncompressedSize64: 10, CRC32: 0}
	f, err := w.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(raw.Bytes())
	w.Close()
	return b.Bytes()
}

func TestExtractIntoExistingDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	z := archive(t, member{name: "a", body: "x"})
	if _, err := unzip.Extract(bytes.NewReader(z), int64(len(z)), dir, unzip.DefaultLimits); err == nil {
		t.Fatal("extracted into an existing directory")
	}
}
