package explain_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

func candidateRun(id string, exit int, oom bool, passed, failed, skipped []report.TestID) record.CheckRun {
	return record.CheckRun{CheckID: id, Phase: record.Candidate, Executor: record.Orchestrator, Started: true, ExitCode: exit, OOMKilled: oom,
		Report: &record.ReportRecord{Inventory: &record.Inventory{Passed: passed, Failed: failed, Skipped: skipped}}}
}

// TestCauses: one cause per reason a reviewer acts on — an exit code its
// failing tests explain is folded into them, one they do not (no failing
// tests, the memory limit) stays a cause — and missing and skipped tests
// come first.
func TestCauses(t *testing.T) {
	exit := func(check string) record.Finding {
		return record.Finding{Rule: verdict.RuleCheckFailed, Check: check, Message: "the check exited with code 1"}
	}
	failed := func(check string) record.Finding {
		return record.Finding{Rule: verdict.RuleTestsFailed, Check: check, IDs: []report.TestID{"t"}}
	}
	missing := record.Finding{Code: "RM-VERIFY-003", Rule: outcome.RuleMissing, Check: "unit", IDs: []report.TestID{"gone"}}
	skipped := record.Finding{Code: "RM-VERIFY-003", Rule: outcome.RuleSkipped, Check: "e2e", IDs: []report.TestID{"skipped"}}
	d := &evidence.Delivery{Checks: []record.CheckRun{
		candidateRun("unit", 1, false, nil, []report.TestID{"t"}, nil),
		candidateRun("lint", 2, false, nil, nil, nil),                  // exits without failing tests
		candidateRun("big", 137, true, nil, []report.TestID{"t"}, nil), // the memory limit killed it
		candidateRun("e2e", 0, false, []report.TestID{"a"}, nil, []report.TestID{"skipped"}),
	}}
	oom := exit("big")
	oom.Message = "the check exited with code 137" + verdict.OOMKilledNote
	d.Verdict.Failed = []record.Finding{exit("unit"), failed("unit"), exit("lint"), oom, failed("big"), missing, skipped}
	type row struct {
		rule, check string
		exit        int
	}
	var got []row
	for _, c := range explain.Causes(d) {
		got = append(got, row{c.Rule, c.Check, c.ExitCode})
	}
	want := []row{
		{outcome.RuleMissing, "unit", 0}, {outcome.RuleSkipped, "e2e", 0},
		{verdict.RuleCheckFailed, "big", 0}, {verdict.RuleTestsFailed, "big", 0},
		{verdict.RuleCheckFailed, "lint", 0}, {verdict.RuleTestsFailed, "unit", 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("causes\n%v\nwant\n%v", got, want)
	}
}

// TestInventories: the candidate's counts, and what the change did against
// the baseline, a moved test neither added nor removed.
func TestInventories(t *testing.T) {
	base := record.CheckRun{CheckID: "unit", Phase: record.Baseline, Executor: record.Orchestrator,
		Report: &record.ReportRecord{Inventory: &record.Inventory{Passed: []report.TestID{"keep", "gone", "old/name", "flaky"}}}}
	cand := candidateRun("unit", 1, false, []report.TestID{"keep", "new/name", "added"}, []report.TestID{"broken"}, []report.TestID{"flaky"})
	cand.Moved = []record.TestMove{{From: "old/name", To: "new/name", By: record.MovedFile}}
	d := &evidence.Delivery{Checks: []record.CheckRun{base, cand}}
	d.Verdict.Failed = []record.Finding{
		{Rule: outcome.RuleMissing, Check: "unit", IDs: []report.TestID{"gone"}},
		{Rule: outcome.RuleSkipped, Check: "unit", IDs: []report.TestID{"flaky"}},
	}
	got := explain.Inventories(d)
	want := explain.Inventory{Passed: 3, Failed: 1, Skipped: 1, Missing: 1, NewlySkipped: 1, Added: 2, Removed: 1, Moved: 1,
		MissingTests: []string{"unit: gone"}, FailedTests: []string{"unit: broken"}}
	if !slices.Equal(got.MissingTests, want.MissingTests) || !slices.Equal(got.FailedTests, want.FailedTests) {
		t.Errorf("named %q %q, want %q %q", got.MissingTests, got.FailedTests, want.MissingTests, want.FailedTests)
	}
	got.MissingTests, got.FailedTests, want.MissingTests, want.FailedTests = nil, nil, nil, nil
	if got.Passed != want.Passed || got.Failed != want.Failed || got.Skipped != want.Skipped || got.Missing != want.Missing ||
		got.NewlySkipped != want.NewlySkipped || got.Added != want.Added || got.Removed != want.Removed || got.Moved != want.Moved {
		t.Errorf("Inventories = %+v, want %+v", got, want)
	}
}

// TestCausesKeepTheCandidateHarnessApart (issue 25): the candidate-harness
// run's failing tests do not swallow the base-harness run's exit code, nor
// its own exit code the candidate's tests.
func TestCausesKeepTheCandidateHarnessApart(t *testing.T) {
	own := " with the candidate's own harness"
	if !strings.Contains(own, verdict.CandidateHarnessWords) {
		t.Fatal("the marker changed")
	}
	d := &evidence.Delivery{Checks: []record.CheckRun{candidateRun("unit", 1, false, nil, nil, nil)}}
	d.Verdict.Failed = []record.Finding{
		{Rule: verdict.RuleCheckFailed, Check: "unit", Message: "the check exited with code 1"},
		{Rule: verdict.RuleTestsFailed, Check: "unit", Message: "1 test failed," + own + ": \"x\"", IDs: []report.TestID{"x"}},
	}
	var got []string
	for _, c := range explain.Causes(d) {
		got = append(got, fmt.Sprintf("%s/%d", c.Rule, c.ExitCode))
	}
	if want := []string{verdict.RuleCheckFailed + "/0", verdict.RuleTestsFailed + "/0"}; !slices.Equal(got, want) {
		t.Errorf("causes %q, want %q", got, want)
	}
}
