package discovery_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

func TestParseProposals(t *testing.T) {
	got, err := discovery.ParseProposals(strings.NewReader("# agent\n\n  unit  \nlint\r\n# e2e\n"), "p.txt")
	if err != nil || strings.Join(got, ",") != "unit,lint" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"unit; rm -rf /\n", "`id`\n", "a b\n", "-x\n", "ü\n", strings.Repeat("a", 200) + "\n"} {
		if _, err := discovery.ParseProposals(strings.NewReader(bad), "p.txt"); rmerr.CodeOf(err) != rmerr.PolicyProposals {
			t.Errorf("accepted %q: %v", bad, err)
		}
	}
}

// FuzzParseProposals: never panics, and every accepted id obeys the check id
// grammar (no proposal can carry shell text).
func FuzzParseProposals(f *testing.F) {
	f.Add("unit\n# c\nlint\n")
	f.Add("$(x)\n")
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := discovery.ParseProposals(strings.NewReader(s), "p")
		if err != nil {
			if rmerr.CodeOf(err) != rmerr.PolicyProposals {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		if len(ids) > discovery.MaxProposals {
			t.Fatalf("%d ids accepted", len(ids))
		}
		for _, id := range ids {
			if !policy.ValidID(id) {
				t.Fatalf("accepted %q", id)
			}
		}
	})
}
