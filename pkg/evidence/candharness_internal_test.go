package evidence

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
)

// TestCandidateHarnessBinding (issue 25): a candidate-harness run exists
// exactly where git shows the candidate's harness changed, ran the
// candidate tree itself with every harness file in the commit's version,
// and is never reused.
func TestCandidateHarnessBinding(t *testing.T) {
	commit, tree, pinned := strings.Repeat("a", 40), "sha256:"+strings.Repeat("c", 64), "sha256:"+strings.Repeat("d", 64)
	base, edit := &harness.Entry{Mode: "100755", Blob: strings.Repeat("b", 40)}, &harness.Entry{Mode: "100755", Blob: strings.Repeat("e", 40)}
	changed := harness.Record{Pinned: true, Base: commit, CommitTree: tree,
		Files: []harness.File{{Path: "tests/run.sh", Ran: harness.FromBase, Base: base, Commit: edit}}}
	unchanged := harness.Record{Pinned: true, Base: commit, CommitTree: tree,
		Files: []harness.File{{Path: "tests/run.sh", Ran: harness.FromBase, Base: base, Commit: base}}}
	own := OwnHarness(&changed)
	if changed.Files[0].Ran != harness.FromBase || own.Files[0].Ran != harness.FromCommit || own.Changed() {
		t.Fatalf("OwnHarness: %+v from %+v", own, changed)
	}
	run := func(h *harness.Record, before string) *record.CheckRun {
		return &record.CheckRun{CheckID: "unit", Phase: record.CandidateHarness, Harness: h, TreeBefore: before}
	}
	claimsBase := OwnHarness(&changed)
	claimsBase.Files[0].Ran = harness.FromBase
	for _, c := range []struct {
		name string
		r    *record.CheckRun
		want *HarnessExpectation
		ok   bool
	}{
		{"the candidate tree, its own harness", run(own, tree), &HarnessExpectation{CheckID: "unit", Candidate: changed, Tree: pinned}, true},
		{"no harness change for the check", run(own, tree), &HarnessExpectation{CheckID: "unit", Candidate: unchanged, Tree: tree}, false},
		{"no harness expected at all", run(own, tree), nil, false},
		{"the base-harness tree", run(own, pinned), &HarnessExpectation{CheckID: "unit", Candidate: changed, Tree: pinned}, false},
		{"a record claiming the base's version", run(claimsBase, tree), &HarnessExpectation{CheckID: "unit", Candidate: changed, Tree: pinned}, false},
		{"no record", run(nil, tree), &HarnessExpectation{CheckID: "unit", Candidate: changed, Tree: pinned}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if f := bindOwnHarness(0, c.r, c.want, tree); (f == nil) != c.ok {
				t.Errorf("bindOwnHarness = %v, want ok %v", f, c.ok)
			}
		})
	}
	if msg := harnessGrammar(claimsBase, true, true); msg == "" {
		t.Error("the grammar admits a candidate-harness record that ran the base's version")
	}
	if msg := harnessGrammar(own, true, true); msg != "" {
		t.Errorf("the grammar refuses the candidate-harness record: %s", msg)
	}
	if msg := harnessGrammar(own, true, false); msg == "" {
		t.Error("the grammar admits the commit's version of a pinned file in a base-harness run")
	}
	reused := run(own, tree)
	reused.Started, reused.InputKey = true, strings.Repeat("f", 64)
	reused.ReusedFrom = &record.ReuseRef{Bundle: "sha256/" + strings.Repeat("f", 64), BundleSize: 10, RunID: "r"}
	if msg := checkReuseGrammar(reused); msg == "" {
		t.Error("a reused candidate-harness run is admitted")
	}
	reused.Phase = record.Baseline
	if msg := checkReuseGrammar(reused); msg != "" {
		t.Errorf("a reused baseline is refused: %s", msg)
	}
}
