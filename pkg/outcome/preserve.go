package outcome

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// Rules of inventory preservation (spec § 4 "Skipped or missing tests").
const (
	RuleMissing            = "outcome.preservation.missing"
	RuleSkipped            = "outcome.preservation.skipped"
	RuleIncomparable       = "outcome.preservation.incomparable"
	RuleStaleDeclaration   = "outcome.declared-skip.stale"
	RuleInvalidDeclaration = "outcome.declared-skip.invalid"
)

// Compare enforces spec § 4 on exact identities, never counts: every test
// that passed at the base must be present and not skipped at the candidate,
// and the set of such exceptions must equal the set of declared skips —
// declaring A cannot authorise B, and a declaration that matches no observed
// exception (the test passes or fails again, it did not pass at the base, or
// no report knows it) is stale. Tests that failed or were skipped at the base
// establish no preservation authority.
//
// Every finding is RM-VERIFY-003 and lists every offending id, sorted, in
// IDs. Check is left empty for the caller (verdict.Evaluate fills it from the
// result that carries the finding). A nil inventory cannot be compared and
// fails closed, as does a baseline that executed no test.
func Compare(base, candidate *report.Inventory, declared []policy.DeclaredSkip) []record.Finding {
	var out []record.Finding
	add := func(rule, msg, hint string, ids []report.TestID) {
		slices.Sort(ids)
		out = append(out, record.Finding{Code: rmerr.VerifySkipped, Rule: rule, Message: msg, IDs: ids, Hint: hint})
	}

	decl, invalid := declarations(declared)
	out = append(out, invalid...)

	if bad := incomparable(base, candidate); bad != nil {
		return record.Normalize(append(out, bad...))
	}
	// A baseline that executed no test gives no test authority; whether
	// that fails the check is the baseline's own judgement (verdict.Judge:
	// it fails closed unless the check is new in the change).

	candStatus := statuses(candidate)

	missing, skipped := exceptions(base, candStatus, decl)
	if len(missing) > 0 {
		add(RuleMissing, fmt.Sprintf("%s that passed at the base %s missing at the candidate and not declared", printable.Plural(len(missing), "test", "tests"), isAre(len(missing))),
			"restore the tests; if removing them is intended, declare each exact id under declared_skips with its cause", missing)
	}
	if len(skipped) > 0 {
		add(RuleSkipped, fmt.Sprintf("%s that passed at the base %s skipped at the candidate and not declared", printable.Plural(len(skipped), "test", "tests"), isAre(len(skipped))),
			"make the tests run again; if skipping is intended, declare each exact id under declared_skips with its cause", skipped)
	}

	// A declaration is in use while its test is skipped or absent at the
	// candidate, whatever the base did: a test declared and skipped at the
	// base stays excused, and the change that removes the declaration
	// (read from the base) can land. It is stale only once its test passes
	// at the candidate. Exactness is kept by the other direction: every
	// exception above must be declared, so declaring A cannot authorize B.
	var stale []report.TestID
	for id := range decl {
		if candStatus[id] == report.Passed {
			stale = append(stale, id)
		}
	}
	if len(stale) > 0 {
		add(RuleStaleDeclaration, fmt.Sprintf("%s %s stale: the test passes at the candidate", printable.Plural(len(stale), "declared skip", "declared skips"), isAre(len(stale))),
			"remove the declarations: the observed exception set must equal the declaration set", stale)
	}
	return record.Normalize(out)
}

// declarations returns the set of declared ids and findings for invalid
// declarations (an empty id, an id declared more than once). Comparison goes
// on with the rest so that every problem is reported at once.
func declarations(declared []policy.DeclaredSkip) (map[report.TestID]bool, []record.Finding) {
	set := map[report.TestID]bool{}
	count := map[report.TestID]int{}
	empty := 0
	for _, d := range declared {
		if strings.TrimSpace(d.TestID) == "" {
			empty++
			continue
		}
		count[report.TestID(d.TestID)]++
	}
	var dups []report.TestID
	for id, n := range count {
		// A duplicate still names its test: the invalid declaration fails on
		// its own, without also calling the test undeclared.
		set[id] = true
		if n > 1 {
			dups = append(dups, id)
		}
	}
	var out []record.Finding
	if empty > 0 {
		out = append(out, record.Finding{Code: rmerr.VerifySkipped, Rule: RuleInvalidDeclaration,
			Message: fmt.Sprintf("%s an empty test_id", printable.Plural(empty, "declared skip has", "declared skips have")),
			Hint:    "write the exact canonical test id of each declared skip"})
	}
	if len(dups) > 0 {
		slices.Sort(dups)
		out = append(out, record.Finding{Code: rmerr.VerifySkipped, Rule: RuleInvalidDeclaration,
			Message: fmt.Sprintf("%s declared more than once", printable.Plural(len(dups), "test id is", "test ids are")),
			IDs:     dups, Hint: "declare each test id once"})
	}
	return set, out
}

func statuses(inv *report.Inventory) map[report.TestID]report.Status {
	m := make(map[report.TestID]report.Status, len(inv.Tests))
	for _, t := range inv.Tests {
		m[t.ID] = t.Status
	}
	return m
}

func hasID(m map[report.TestID]report.Status, id report.TestID) bool {
	_, ok := m[id]
	return ok
}

func duplicates(inv *report.Inventory) []report.TestID {
	seen := make(map[report.TestID]int, len(inv.Tests))
	var dups []report.TestID
	for _, t := range inv.Tests {
		seen[t.ID]++
		if seen[t.ID] == 2 {
			dups = append(dups, t.ID)
		}
	}
	slices.Sort(dups)
	return dups
}

func identityName(id report.Identity) string {
	if id == report.IdentityDefault {
		return "default"
	}
	return string(id)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// incomparable returns the findings that make two inventories impossible to
// compare (one missing, different formats or identities, a repeated id),
// or nil when they can be compared.
func incomparable(base, candidate *report.Inventory) []record.Finding {
	switch {
	case base == nil || candidate == nil:
		which := "baseline"
		if base != nil {
			which = "candidate"
		}
		return []record.Finding{incomparableFinding(fmt.Sprintf("no %s inventory: preservation cannot be proven", which),
			"the declared report must be written and valid at both the base and the candidate")}
	case base.Format != candidate.Format || base.Identity != candidate.Identity:
		return []record.Finding{incomparableFinding(fmt.Sprintf("the inventories are not comparable: base is %s/%s, candidate is %s/%s",
			base.Format, identityName(base.Identity), candidate.Format, identityName(candidate.Identity)),
			"both runs must use the report format and identity rule of the base policy")}
	}
	var out []record.Finding
	dupBase, dupCand := duplicates(base), duplicates(candidate)
	if len(dupBase) > 0 || len(dupCand) > 0 {
		// Spec § 4: every id must be unique within the report; with duplicates
		// an identity no longer names one test, so nothing can be compared.
		for _, d := range []struct {
			which string
			ids   []report.TestID
		}{{"baseline", dupBase}, {"candidate", dupCand}} {
			if len(d.ids) > 0 {
				out = append(out, record.Finding{Code: rmerr.ReportIdentity, Rule: RuleIncomparable,
					Message: fmt.Sprintf("the %s inventory repeats %s: an id that is not unique identifies no test", d.which, printable.Plural(len(d.ids), "test id", "test ids")),
					IDs:     d.ids, Hint: "make test names unique, or declare report.identity: suite-path"})
			}
		}
		return out
	}
	return nil
}

// incomparableFinding is what Compare's add writes for RuleIncomparable,
// without ids.
func incomparableFinding(msg, hint string) record.Finding {
	return record.Finding{Code: rmerr.VerifySkipped, Rule: RuleIncomparable, Message: msg, Hint: hint}
}

// exceptions lists the tests that passed at the base and are absent
// (missing) or skipped at the candidate without a declaration.
func exceptions(base *report.Inventory, candStatus map[report.TestID]report.Status, decl map[report.TestID]bool) (missing, skipped []report.TestID) {
	for _, t := range base.Tests {
		if t.Status != report.Passed {
			continue
		}
		switch st, present := candStatus[t.ID]; {
		case !present:
			if !decl[t.ID] {
				missing = append(missing, t.ID)
			}
		case st == report.Skipped:
			if !decl[t.ID] {
				skipped = append(skipped, t.ID)
			}
		}
	}
	return missing, skipped
}
