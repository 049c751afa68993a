package explain

import (
	"strings"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
)

// HarnessNotes are the human lines of one run's harness, for the statement
// (a run's notes), the console and the job summary.
func HarnessNotes(phase record.Phase, hr *harness.Record) []string {
	if hr == nil {
		return nil
	}
	var out []string
	if phase == record.CandidateHarness {
		// Issue 25: the run of the landing commit as it stands.
		var edited []string
		for _, f := range hr.Files {
			if f.Base == nil || f.Commit == nil || *f.Commit != *f.Base {
				edited = append(edited, f.Path) // edited, removed or new in the change
			}
		}
		return []string{"the candidate's harness ran too: the change's own version of " + strings.Join(edited, ", ") +
			"; its failures count, its passes prove nothing about the base's tests"}
	}
	if !hr.Pinned && len(hr.Files) > 0 {
		out = append(out, "harness not pinned: "+hr.Reason)
	}
	if ps := hr.ChangedPaths(); len(ps) > 0 {
		if phase == record.Baseline {
			out = append(out, "harness differs at the baseline commit: ran the base's version of "+strings.Join(ps, ", "))
		} else {
			out = append(out, "harness changed in this change: ran the base's version of "+strings.Join(ps, ", "))
		}
	}
	if ps := hr.NewPaths(); len(ps) > 0 && hr.Pinned {
		out = append(out, "harness new in the change (not at the base): ran without "+strings.Join(ps, ", ")+", as the base has none")
	}
	out = append(out, UnpinnedLines(hr.Unpinned)...)
	return out
}

// UnpinnedLines say, for each part of a command runmill could not resolve
// to harness files, that nothing of it is pinned and how to pin it (issue
// 25: never silently unpinned): the console, the summary, inspect and
// doctor show these words.
func UnpinnedLines(us []harness.Unpinned) []string {
	var out []string
	for _, u := range us {
		out = append(out, "harness not pinned: "+u.Part+": "+u.Reason+"; list it under harness:")
	}
	return out
}

// HarnessLines are the harness lines of a delivery, one per candidate run
// whose harness the change edited or added and one per run of the
// candidate's own harness, for the console's and the job summary's
// per-check blocks ("check: note").
func HarnessLines(d *evidence.Delivery) []string {
	var out []string
	for _, r := range d.Checks {
		if r.Phase != record.Candidate && r.Phase != record.CandidateHarness {
			continue
		}
		for _, n := range HarnessNotes(r.Phase, r.Harness) {
			out = append(out, r.CheckID+": "+n)
		}
	}
	return out
}

// PhaseWords says where a run's output and failures came from, after a
// check's name: "" for the candidate run, " at the baseline", " under the
// candidate's harness" (issue 25: the landing commit with the change's own
// harness, whose failures are the change's).
func PhaseWords(p record.Phase) string {
	switch p {
	case record.Baseline:
		return " at the baseline"
	case record.CandidateHarness:
		return " under the candidate's harness"
	}
	return ""
}
