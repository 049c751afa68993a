package cli

import (
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// TestPrintRunNamesTheCandidateHarness (issue 25): the console says the
// candidate's harness ran too, and lists the failures that came from it
// under its finding, not the base-harness run's.
func TestPrintRunNamesTheCandidateHarness(t *testing.T) {
	commit := strings.Repeat("a", 40)
	base, edit := &harness.Entry{Mode: "100755", Blob: strings.Repeat("b", 40)}, &harness.Entry{Mode: "100755", Blob: strings.Repeat("c", 40)}
	hr := &harness.Record{Pinned: true, Base: commit, Files: []harness.File{{Path: "tests/run.sh", Ran: harness.FromBase, Base: base, Commit: edit}}}
	inv := func(passed, failed []report.TestID) *record.ReportRecord {
		return &record.ReportRecord{Path: "reports/unit.tap", Format: report.TAP, ClaimedFailures: -1,
			Inventory: &record.Inventory{Passed: passed, Failed: failed, Skipped: []report.TestID{}}}
	}
	run := func(phase record.Phase, h *harness.Record, rep *record.ReportRecord) record.CheckRun {
		return record.CheckRun{CheckID: "unit", Phase: phase, Executor: record.Orchestrator, Started: true, Commit: commit, Harness: h, Report: rep}
	}
	ownRep := inv([]report.TestID{"tests/unit/a.t"}, []report.TestID{"tests/new/x.t"})
	ownRep.FailedTests = []record.FailedTest{{ID: "tests/new/x.t", Message: "x is broken"}}
	d := evidence.Delivery{
		Manifest: discovery.Manifest{Checks: []discovery.Check{{ID: "unit", Required: true, Command: "sh tests/run.sh > reports/unit.tap",
			Report: &policy.ReportSpec{Path: "reports/unit.tap", Format: "tap"}}}},
		Checks: []record.CheckRun{
			run(record.Baseline, nil, inv([]report.TestID{"tests/unit/a.t"}, []report.TestID{})),
			run(record.Candidate, hr, inv([]report.TestID{"tests/unit/a.t"}, []report.TestID{})),
			run(record.CandidateHarness, evidence.OwnHarness(hr), ownRep),
		},
	}
	for i := range d.Checks {
		evidence.Judge(&d.Manifest, &d.Checks[i], d.Checks)
	}
	evidence.Decide(&d)
	var b strings.Builder
	printRun(&b, &engine.Run{ID: "r", Delivery: d})
	got := b.String()
	for _, want := range []string{
		"unit: the candidate's harness ran too: the change's own version of tests/run.sh; its failures count, its passes prove nothing about the base's tests",
		`1 test failed in the report, whatever the exit code, with the candidate's own harness (the change's version of "tests/run.sh"):` + "\n",
		"      tests/new/x.t — x is broken\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the console does not say %q:\n%s", want, got)
		}
	}
	if d.Verdict.MergeReady {
		t.Error("merge-ready with a failing candidate-harness run")
	}
}
