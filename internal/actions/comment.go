package actions

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
)

// CommentMarker starts the sticky pull-request comment of the evidence
// artifact name (one per verification of a workflow): the comment is found
// by it and updated in place on every push.
func CommentMarker(artifact string) string {
	if !markerName.MatchString(artifact) {
		artifact = "runmill-evidence"
	}
	return "<!-- runmill verify: " + artifact + " -->"
}

// markerName is an artifact name that may appear in the marker: it is
// the workflow's input, and "-->" must not end the HTML comment early.
var markerName = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._ ]{0,99}$`)

// Comment is the sticky pull-request comment of a finished run: the
// verdict and what the change did to the test inventory, with links to the
// job summary (the workflow run) and the evidence artifact.
func Comment(run *Run, where Where) string {
	d := &run.Delivery
	inv := explain.Inventories(d)
	var b strings.Builder
	b.WriteString(CommentMarker(where.Artifact) + "\n")
	if d.Verdict.MergeReady {
		b.WriteString("### ✅ runmill: merge-ready\n\n")
	} else {
		b.WriteString("### ❌ runmill: not merge-ready\n\n")
	}
	fmt.Fprintf(&b, "Candidate %s · base %s", code(objectid.Short(d.Candidate.Head)), code(objectid.Short(d.Candidate.Base)))
	if where.RunURL != "" {
		fmt.Fprintf(&b, " · [job summary](%s)", where.RunURL)
	}
	if where.ArtifactURL != "" {
		fmt.Fprintf(&b, " · [evidence](%s)", where.ArtifactURL)
	}
	b.WriteString("\n\n")
	if n := len(explain.Causes(d)); n > 0 {
		fmt.Fprintf(&b, "%s: the job summary lists each with its fix.\n\n", printable.Plural(n, "cause keeps it from merging", "causes keep it from merging"))
	}
	b.WriteString("| Tests | passed | failed | skipped | added | removed | moved | missing |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| at the candidate | %d | %d | %d | %d | %d | %d | %d |\n\n", inv.Passed, inv.Failed, inv.Skipped, inv.Added, inv.Removed, inv.Moved, inv.Missing)
	if inv.NewlySkipped > 0 {
		fmt.Fprintf(&b, "%s that passed at the base now skipped, undeclared.\n\n", printable.Plural(inv.NewlySkipped, "test", "tests"))
	}
	for _, l := range []struct {
		what  string
		n     int
		names []string
	}{{"Missing (passed at the base, gone without a declaration)", inv.Missing, inv.MissingTests}, {"Failed", inv.Failed, inv.FailedTests}} {
		if l.n == 0 {
			continue
		}
		fmt.Fprintf(&b, "**%s: %d**\n\n", l.what, l.n)
		for _, n := range l.names {
			b.WriteString("- " + code(n) + "\n")
		}
		if rest := l.n - len(l.names); rest > 0 {
			fmt.Fprintf(&b, "- … and %d more (the evidence lists all)\n", rest)
		}
		b.WriteString("\n")
	}
	return b.String()
}
