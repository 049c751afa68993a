package explain

import (
	"fmt"
	"strings"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
)

// LandingLine says what a delivery's candidate runs measured when it was
// not the head's own tree (issue 24), for the console and the job summary
// alike: the merge with a base the head is behind, or the conflict that
// left no tree to measure. Empty when the head contains the base.
func LandingLine(c evidence.Candidate) string {
	l := c.Landing
	name := l.BaseRef
	if name == "" {
		name = "the base"
	}
	switch {
	case l.Conflicted():
		return fmt.Sprintf("the branch does not merge with %s at %s (%s behind): %s conflicted; merge or rebase onto %s",
			name, objectid.Short(c.Base), printable.Plural(l.Behind, "commit", "commits"), conflictList(l.Conflicts), name)
	case l.Merged:
		return fmt.Sprintf("tested the merge with %s at %s: the branch is %s behind", name, objectid.Short(c.Base), printable.Plural(l.Behind, "commit", "commits"))
	}
	return ""
}

// maxConflictsNamed bounds the paths a line names.
const maxConflictsNamed = 5

func conflictList(paths []string) string {
	named := paths[:min(len(paths), maxConflictsNamed)]
	s := strings.Join(named, ", ")
	if rest := len(paths) - len(named); rest > 0 {
		s += fmt.Sprintf(" and %d more", rest)
	}
	return s
}
