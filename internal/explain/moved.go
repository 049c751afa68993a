package explain

import (
	"fmt"
	"strconv"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
)

// maxMovedID bounds an id a moved line quotes.
const maxMovedID = 200

// MovedLines are the human lines of a run's moved tests (issue 24: found
// under the id git's renames, or a parametrized case's new ids, give them),
// at most max of them and then a count; for the console and the job
// summary.
func MovedLines(moved []record.TestMove, max int) []string {
	var out []string
	for i, m := range moved {
		if i == max {
			out = append(out, "and "+printable.Plural(len(moved)-max, "more moved test", "more moved tests")+" (the statement lists them all)")
			break
		}
		how := map[record.MoveKind]string{record.MovedFile: "its file was renamed", record.MovedPackage: "its Go package moved",
			record.MovedParameters: "its parametrized case was renamed"}[m.By]
		out = append(out, fmt.Sprintf("moved, not missing: %s → %s (%s)",
			printable.Text(strconv.Quote(string(m.From)), maxMovedID), printable.Text(strconv.Quote(string(m.To)), maxMovedID), how))
	}
	return out
}

// MovedBlock are the moved lines of a delivery, "check: line", for the
// console's and the job summary's blocks.
func MovedBlock(d *evidence.Delivery, max int) []string {
	var out []string
	for _, r := range d.Checks {
		if r.Phase == record.Candidate {
			for _, l := range MovedLines(r.Moved, max) {
				out = append(out, r.CheckID+": "+l)
			}
		}
	}
	return out
}
