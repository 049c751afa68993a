package report_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report"
)

// TestJUnitMappedSameAsRead parses files large enough to be mapped
// (internal/xmlscan maps a regular file from 1 MiB on) once as the file and
// once through a plain reader: the inventory, its digest and byte count, or
// the error with its line, must be the same either way — also past the
// pages released behind the scanner, at the size cap, from a file offset
// that is not on a page boundary, and for a cut or invalid document.
func TestJUnitMappedSameAsRead(t *testing.T) {
	var doc3, doc9 bytes.Buffer
	writeJUnitBench(&doc3, 3<<20)
	writeJUnitBench(&doc9, 9<<20)
	bad := bytes.Replace(doc9.Bytes(), []byte("</testsuites>"), []byte("\x01</testsuites>"), 1)
	for _, tc := range []struct {
		name   string
		prefix int // bytes before the document, skipped by a seek
		doc    []byte
		limits report.Limits
		fails  string // what the error says, if it is one
	}{
		{"valid", 0, doc3.Bytes(), report.Limits{}, ""},
		{"offset", 5000, doc3.Bytes(), report.Limits{}, ""},
		{"past released pages", 0, doc9.Bytes(), report.Limits{}, ""},
		{"bad byte on the last line", 0, bad, report.Limits{}, "control character U+0001"},
		{"cut", 0, doc3.Bytes()[:doc3.Len()-100], report.Limits{}, "unexpected end of file"},
		{"size cap", 0, doc3.Bytes(), report.Limits{MaxBytes: 2 << 20}, "larger than the cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.xml")
			if err := os.WriteFile(path, append(bytes.Repeat([]byte{'#'}, tc.prefix), tc.doc...), 0o644); err != nil {
				t.Fatal(err)
			}
			parse := func(plain bool) (*report.Inventory, error) {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Seek(int64(tc.prefix), io.SeekStart); err != nil {
					t.Fatal(err)
				}
				var r io.Reader = f
				if plain {
					r = struct{ io.Reader }{f}
				}
				return report.Parse(r, report.JUnit, report.Options{Limits: tc.limits})
			}
			mapped, merr := parse(false)
			read, rerr := parse(true)
			if (merr == nil) != (rerr == nil) || merr != nil && merr.Error() != rerr.Error() {
				t.Fatalf("mapped: %v\nread:   %v", merr, rerr)
			}
			if !reflect.DeepEqual(mapped, read) {
				t.Fatal("the mapped file and the plain reader give different inventories")
			}
			switch {
			case tc.fails != "" && (rerr == nil || !strings.Contains(rerr.Error(), tc.fails)):
				t.Fatalf("error %v, want one saying %q", rerr, tc.fails)
			case tc.fails == "" && (rerr != nil || read.Bytes != int64(len(tc.doc))):
				t.Fatalf("document not read whole: %v", rerr)
			}
		})
	}
}
