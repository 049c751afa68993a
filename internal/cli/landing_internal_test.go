package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
)

// TestPrintRunLanding: the console's verdict header says when the
// candidate was tested as its merge with a base it is behind, and says
// nothing more when it contains the base.
func TestPrintRunLanding(t *testing.T) {
	base := strings.Repeat("b", 40)
	for _, c := range []struct {
		name    string
		landing evidence.Landing
		want    string
	}{
		{"behind", evidence.Landing{BaseRef: "main", Commit: strings.Repeat("d", 40), Merged: true, Behind: 1},
			"tested the merge with main at bbbbbbbbbbbb: the branch is 1 commit behind\n\n"},
		{"up to date", evidence.Landing{Commit: strings.Repeat("a", 40)}, "base bbbbbbbbbbbb)\n\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			run := &engine.Run{ID: "r1"}
			run.Delivery.Candidate = evidence.Candidate{Head: strings.Repeat("a", 40), Base: base, Landing: c.landing}
			printRun(&b, run)
			if !strings.Contains(b.String(), c.want) {
				t.Errorf("console:\n%s\nwant it to contain %q", b.String(), c.want)
			}
		})
	}
}
