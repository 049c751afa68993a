//go:build unix

package xmlscan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

type nopHandler struct{ start func() }

func (h nopHandler) Start(_, _ []byte, _ *Attrs) error {
	if h.start != nil {
		h.start()
	}
	return nil
}
func (nopHandler) End() error           { return nil }
func (nopHandler) Sink() *textcap.Field { return nil }

func mappedScanner(t *testing.T, h Handler) (*Scanner, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.xml")
	doc := "<r>" + strings.Repeat("<a/>\n", 3<<20/5) + "</r>"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := New(f, h, Config{MaxBytes: 1 << 30, MaxField: 64, Attr: func([]byte) int { return -1 }})
	if s.mp == nil {
		t.Fatal("a 3 MB regular file was not mapped")
	}
	return s, path
}

// TestMappedFileShrinks truncates a report under its mapping: reading the
// pages past the new end faults, and that is the report's error, not a
// crash of the process.
func TestMappedFileShrinks(t *testing.T) {
	s, path := mappedScanner(t, nopHandler{})
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err := s.Run()
	if rmerr.CodeOf(err) != rmerr.ReportMalformed || !strings.Contains(err.Error(), "shrank while it was read") {
		t.Fatalf("Run = %v, want the report's RM-REPORT-001 for a file that shrank", err)
	}
}

// TestMappedOtherPanic: only a fault inside the mapping becomes an error;
// any other panic is not swallowed.
func TestMappedOtherPanic(t *testing.T) {
	s, _ := mappedScanner(t, nopHandler{start: func() { panic("boom") }})
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the handler's own panic", r)
		}
	}()
	s.Run()
	t.Fatal("Run returned; the handler's panic was swallowed")
}
