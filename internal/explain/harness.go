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
// whose harness the change edited or added, for the console's and the job
// summary's per-check blocks ("check: note").
func HarnessLines(d *evidence.Delivery) []string {
	var out []string
	for _, r := range d.Checks {
		if r.Phase != record.Candidate {
			continue
		}
		for _, n := range HarnessNotes(r.Phase, r.Harness) {
			out = append(out, r.CheckID+": "+n)
		}
	}
	return out
}
