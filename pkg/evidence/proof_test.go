package evidence

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// TestBaseProofGrammar: a statement marked base_proof measures one commit
// for no pull request, holds executed baselines there only and records why
// its verdict is none; any other shape is refused, so nothing a reusing
// verification could take for a candidate's run hides in a proof.
func TestBaseProofGrammar(t *testing.T) {
	const base = "1111111111111111111111111111111111111111"
	proof := func() Delivery {
		var p Delivery
		p.BaseProof = true
		p.Candidate.Head, p.Candidate.Base = base, base
		p.Manifest.Base, p.Manifest.Candidate = base, base
		p.Checks = []record.CheckRun{{CheckID: "unit", Phase: record.Baseline, Commit: base}}
		p.Failures = []record.Finding{{Rule: verdict.RuleBaseProof, Message: "a base proof"}}
		return p
	}
	for _, tc := range []struct {
		name   string
		change func(p *Delivery)
		msg    string
	}{
		{name: "a proof"},
		{name: "not a proof", change: func(p *Delivery) { p.BaseProof, p.Checks[0].Phase = false, record.Candidate }},
		{name: "another head", change: func(p *Delivery) { p.Candidate.Head = strings.Repeat("2", 40) }, msg: "measures one commit"},
		{name: "another manifest candidate", change: func(p *Delivery) { p.Manifest.Candidate = strings.Repeat("2", 40) }, msg: "measures one commit"},
		{name: "a pull request", change: func(p *Delivery) { p.Candidate.PullRequest = 4 }, msg: "no pull request"},
		{name: "a review", change: func(p *Delivery) { p.Reviews = []Review{{Reviewer: "a", State: "approved", Commit: base}} }, msg: "no pull request"},
		{name: "a landing merge", change: func(p *Delivery) { p.Candidate.Landing.Merged = true }, msg: "merges nothing"},
		{name: "a remote result", change: func(p *Delivery) { p.Remote = []record.RemoteResult{{Context: "ci"}} }, msg: "no remote check"},
		{name: "a candidate run", change: func(p *Delivery) { p.Checks[0].Phase = record.Candidate }, msg: "is a candidate run"},
		{name: "a baseline elsewhere", change: func(p *Delivery) { p.Checks[0].Commit = strings.Repeat("3", 40) }, msg: "baseline runs at " + base + " only"},
		{name: "a reused run", change: func(p *Delivery) { p.Checks[0].ReusedFrom = &record.ReuseRef{RunID: "r"} }, msg: "was reused"},
		{name: "no reason for its verdict", change: func(p *Delivery) { p.Failures = nil }, msg: "never merge-ready"},
		{name: "merge-ready", change: func(p *Delivery) { p.Verdict.MergeReady = true }, msg: "never merge-ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proof()
			if tc.change != nil {
				tc.change(&p)
			}
			got := baseProofGrammar(&p)
			if (tc.msg == "") != (got == "") || !strings.Contains(got, tc.msg) {
				t.Fatalf("baseProofGrammar = %q, want %q", got, tc.msg)
			}
		})
	}
}
