package policy_test

import (
	"testing"

	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

var repoSeeds = []string{
	"checks: []\n",
	"checks:\n  - id: unit\n    run: go test ./...\n    report: {path: r/u.xml, format: junit}\n    declared_skips: [{test_id: a, cause: b}]\n    timeout: 10m\n    paths: [\"src/**\"]\n",
	"a: &a [x, *a]\n",
	"checks: [{id: a, run: x}, {id: a, run: y}]\n",
	"checks:\n  - id: a\n    run: x\n    bogus: 1\n",
}

// FuzzParseRepository: never panics; an accepted document satisfies every
// invariant the loader promises; a rejection is always RM-VERIFY-004 (or
// RM-VERIFY-003 for invalid declared_skips, the spec's code for them).
func FuzzParseRepository(f *testing.F) {
	for _, s := range repoSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := policy.ParseRepository(data, "checks.yaml")
		if err != nil {
			if c := rmerr.CodeOf(err); c != rmerr.VerifyManifest && c != rmerr.VerifySkipped {
				t.Fatalf("rejection without RM-VERIFY-004/003: %v", err)
			}
			return
		}
		checkInvariants(t, doc.Value.Checks)
	})
}

func FuzzParseOperator(f *testing.F) {
	f.Add([]byte("autonomy: pr-only\n"))
	f.Add([]byte("autonomy: continuous\nverification:\n  fail_on_skipped_check: false\n"))
	f.Add([]byte("verification:\n  commands: [{id: a, run: x}]\n  path_rules: [{paths: [a/**], checks: [a]}]\nbudgets: {parallel: 2}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := policy.ParseOperator(data, "policy.yaml")
		if err != nil {
			if rmerr.CodeOf(err) != rmerr.PolicyInvalid {
				t.Fatalf("rejection without RM-POLICY-001: %v", err)
			}
			return
		}
		op := doc.Value
		if op.Autonomy != policy.PROnly && !op.Verification.FailOnSkipped() {
			t.Fatalf("accepted %s with fail_on_skipped_check false", op.Autonomy)
		}
		checkInvariants(t, op.Verification.Commands)
	})
}

func checkInvariants(t *testing.T, checks []policy.CheckSpec) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range checks {
		if !policy.ValidID(c.ID) || seen[c.ID] {
			t.Fatalf("accepted bad or duplicate id %q", c.ID)
		}
		seen[c.ID] = true
		if c.Run == "" {
			t.Fatalf("accepted empty run for %q", c.ID)
		}
		if c.Report != nil {
			if err := policy.ValidReportPath(c.Report.Path); err != nil {
				t.Fatalf("accepted bad report path: %v", err)
			}
		}
		if len(c.DeclaredSkips) > 0 && c.Report == nil {
			t.Fatalf("accepted declared_skips without a report on %q", c.ID)
		}
	}
}
