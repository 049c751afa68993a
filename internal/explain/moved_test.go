package explain

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/record"
)

// TestMovedLines: one line per moved test, saying how it moved, escaped,
// then a count past the bound.
func TestMovedLines(t *testing.T) {
	moved := []record.TestMove{
		{From: "tests.test_a::t", To: "pkg.tests.test_a::t", By: record.MovedFile},
		{From: "example.com/m/a::TestX", To: "example.com/m/b::TestX", By: record.MovedPackage},
		{From: "t.py::f[1-2]", To: "t.py::f[1-3]\x1b[2K", By: record.MovedParameters},
	}
	got := MovedLines(moved, 2)
	want := []string{
		`moved, not missing: "tests.test_a::t" → "pkg.tests.test_a::t" (its file was renamed)`,
		`moved, not missing: "example.com/m/a::TestX" → "example.com/m/b::TestX" (its Go package moved)`,
		"and 1 more moved test (the statement lists them all)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if l := MovedLines(moved[2:], 5)[0]; strings.ContainsRune(l, 0x1b) || !strings.Contains(l, "its parametrized case was renamed") {
		t.Fatalf("line %q", l)
	}
}
