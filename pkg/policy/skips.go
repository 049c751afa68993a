package policy

import (
	"fmt"
	"strings"

	"github.com/runmill/verify/pkg/rmerr"
)

// ValidateDeclaredSkips checks one check's declared_skips at load (spec § 4
// "Skipped or missing tests"): declarations on a check without a report are
// rejected because summary text cannot identify tests, and an empty or
// duplicate test_id is invalid — a declaration must authorise exactly one
// canonical test id. Every problem is returned (RM-VERIFY-003), with Field
// relative to the check ("declared_skips[2].test_id"); the caller prefixes
// the check's own path and sets File and Line. A test_id of only whitespace
// counts as empty: no report produces such an id.
func ValidateDeclaredSkips(hasReport bool, skips []DeclaredSkip) rmerr.List {
	var errs rmerr.List
	if len(skips) > 0 && !hasReport {
		errs = append(errs, rmerr.New(rmerr.VerifySkipped,
			"declared_skips on a check without a report: summary text cannot identify tests").
			InField("declared_skips").
			WithHint("declare report: {path, format} (junit, tap or go-json) for the check, or remove declared_skips"))
	}
	first := make(map[string]int, len(skips))
	for i, s := range skips {
		field := fmt.Sprintf("declared_skips[%d].test_id", i)
		if strings.TrimSpace(s.TestID) == "" {
			errs = append(errs, rmerr.New(rmerr.VerifySkipped, "empty test_id").
				InField(field).
				WithHint("write the exact canonical test id the report gives the skipped test (runmill report inventory shows them)"))
			continue
		}
		if j, dup := first[s.TestID]; dup {
			errs = append(errs, rmerr.New(rmerr.VerifySkipped, "duplicate test_id %q (also declared_skips[%d])", s.TestID, j).
				InField(field).
				WithHint("declare each test id once"))
			continue
		}
		first[s.TestID] = i
	}
	return errs
}
