package evidence_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
)

// TestHarnessExpectationGrammar: an expectations document's harness records
// have one encoding; a pinned record that says the commit's version ran, or
// an unpinned one that says the base's did, is refused. A file new in the
// change ran the base's absence (issue 25).
func TestHarnessExpectationGrammar(t *testing.T) {
	commit, blob, tree := strings.Repeat("a", 40), strings.Repeat("b", 40), "sha256:"+strings.Repeat("c", 64)
	entry := &harness.Entry{Mode: "100644", Blob: blob}
	doc := func(h harness.Record) evidence.Expectations {
		return evidence.Expectations{
			Repository: evidence.Repository{Name: "shop"}, Head: commit, Base: commit, MergeBase: commit, Landing: evidence.Landing{Commit: commit, GitTree: commit}, CandidateTree: tree,
			Policy:         evidence.PolicyExpectation{ReadFrom: "base-ref", RepositoryDigest: tree},
			RequiredChecks: []string{"unit"},
			Harness:        []evidence.HarnessExpectation{{CheckID: "unit", Candidate: h, Tree: tree}},
		}
	}
	run := func(t *testing.T, h harness.Record, valid bool) {
		t.Helper()
		b, err := doc(h).Encode()
		if valid {
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if _, err := evidence.ParseExpectations(b); err != nil {
				t.Fatalf("does not parse back: %v", err)
			}
			return
		}
		if err == nil {
			t.Fatal("accepted")
		}
	}
	for _, c := range []struct {
		name  string
		h     harness.Record
		valid bool
	}{
		{"a pinned, changed script", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/test.sh", Ran: harness.FromBase, Base: entry}}}, true},
		{"a file new in the change: its absence ran", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/new.sh", Ran: harness.FromBase, Commit: entry}}}, true},
		{"a file new in the change ran in a pinned harness", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/new.sh", Ran: harness.FromCommit, Commit: entry}}}, false},
		{"an unresolved part with its reason", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Unpinned: []harness.Unpinned{{Part: "mvn test", Reason: "runmill does not know which files mvn reads"}}}, true},
		{"an unresolved part without a reason", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Unpinned: []harness.Unpinned{{Part: "mvn test"}}}, false},
		{"unresolved parts of an unpinned harness", harness.Record{Reason: harness.ReasonPolicyNew, CommitTree: tree,
			Unpinned: []harness.Unpinned{{Part: "mvn test", Reason: "x"}}}, false},
		{"the base's version in an unpinned harness", harness.Record{Reason: harness.ReasonPolicyNew, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/test.sh", Ran: harness.FromBase, Base: entry, Commit: entry}}}, false},
		{"unpinned with its reason", harness.Record{Reason: harness.ReasonPolicyNew, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/test.sh", Ran: harness.FromCommit, Base: entry, Commit: entry}}}, true},
		{"the commit's version of a file the base has", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Files: []harness.File{{Path: "scripts/test.sh", Ran: harness.FromCommit, Base: entry, Commit: entry}}}, false},
		{"unpinned without a reason", harness.Record{CommitTree: tree}, false},
		{"pinned without its base", harness.Record{Pinned: true, CommitTree: tree}, false},
		{"unsorted files", harness.Record{Pinned: true, Base: commit, CommitTree: tree, Files: []harness.File{
			{Path: "b", Ran: harness.FromBase, Base: entry}, {Path: "a", Ran: harness.FromBase, Base: entry}}}, false},
		{"a directory's mode", harness.Record{Pinned: true, Base: commit, CommitTree: tree,
			Files: []harness.File{{Path: "a", Ran: harness.FromBase, Base: &harness.Entry{Mode: "040000", Blob: blob}}}}, false},
		{"no commit tree", harness.Record{Pinned: true, Base: commit}, false},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c.h, c.valid) })
	}
}
