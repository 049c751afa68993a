package explain_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
)

// TestHarnessNotes: the words every front end shows for a run's harness —
// an edited file ran in the base's version, a new one ran as its absence,
// and each part runmill could not resolve says how to pin it (issue 25).
func TestHarnessNotes(t *testing.T) {
	e := func(b string) *harness.Entry { return &harness.Entry{Mode: "100644", Blob: strings.Repeat(b, 40)} }
	hr := &harness.Record{Pinned: true, Base: strings.Repeat("f", 40), Files: []harness.File{
		{Path: "Makefile", Ran: harness.FromBase, Base: e("a"), Commit: e("b")},
		{Path: "conftest.py", Ran: harness.FromBase, Commit: e("c")},
		{Path: "pytest.ini", Ran: harness.FromBase, Base: e("d"), Commit: e("d")},
	}, Unpinned: []harness.Unpinned{{Part: "mvn test", Reason: "runmill does not know which files mvn reads"}}}
	got := explain.HarnessNotes(record.Candidate, hr)
	want := []string{
		"harness changed in this change: ran the base's version of Makefile",
		"harness new in the change (not at the base): ran without conftest.py, as the base has none",
		"harness not pinned: mvn test: runmill does not know which files mvn reads; list it under harness:",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notes\n got  %q\n want %q", got, want)
	}
	if got := explain.HarnessNotes(record.Candidate, &harness.Record{Pinned: true, Files: []harness.File{hr.Files[2]}}); len(got) != 0 {
		t.Fatalf("an unchanged harness has notes: %q", got)
	}
}
