package explain

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// StoredFailedTests re-reads the stored report of rep from the run
// directory runDir and returns its failed tests with what the report says
// of them (file, line, message), in report order: the statement keeps ids
// only. It is the one failed-test reader of the check run's annotations and
// the Actions annotations. A report that cannot be read again (no run
// directory, an address the store never writes, a missing or unparsable
// file) yields nil: the ids in the statement still stand, unlocated. A test
// file node:test could not load gets the error its output states
// (loadErrors), as the Why: block says it.
func StoredFailedTests(runDir string, r *record.CheckRun) []report.Test {
	rep := r.Report
	if runDir == "" || rep == nil {
		return nil
	}
	p, ok := evidence.ArtifactPath(filepath.Join(runDir, "artifacts"), rep.Artifact)
	if !ok {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	// Root: the one path every check saw its checkout at, as verification
	// parsed the report.
	inv, err := report.Parse(f, rep.Format, report.Options{Identity: rep.Identity, Root: sandbox.CheckoutPath})
	if err != nil {
		return nil
	}
	var out []report.Test
	var vague []record.FailedTest
	for _, t := range inv.Tests {
		if t.Status == report.Failed {
			out = append(out, t)
			vague = append(vague, record.FailedTest{ID: t.ID, Message: t.Message})
		}
	}
	if r.Started && slices.ContainsFunc(vague, isVague) {
		for i, t := range loadErrors(vague, slices.Concat(tail(runDir, r.Stdout), tail(runDir, r.Stderr))) {
			out[i].Message = t.Message
		}
	}
	return out
}
