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
	// RuleUnapprovedDeclaration: an exception only a declaration the change
	// itself adds would excuse, without the approval that lets it count;
	// RuleChangeDeclarationOff: the same where the operator policy lets no
	// change declare its own skips (verification.change_declarations: never).
	RuleUnapprovedDeclaration = "outcome.declared-skip.unapproved"
	RuleChangeDeclarationOff  = "outcome.declared-skip.not-allowed"
)

// Change is what Compare weighs besides the two inventories: the check's
// declarations and what git and the pull request say about the change
// (issue 24). The zero value is a change that declares nothing itself and
// moves nothing.
type Change struct {
	// Declared are the check's declared skips as the governing policy has
	// them (the base's, or the operator's).
	Declared []policy.DeclaredSkip
	// Added are the declared skips the change adds to the repository
	// policy, and Removed the base's declared test ids it removes
	// (discovery.Check.ChangeDeclaredSkips, ChangeRemovedSkips).
	Added   []policy.DeclaredSkip
	Removed []string
	// Mode is the operator's change_declarations ("" is with_approval),
	// and Approver the reviewer other than the pull request's author whose
	// approval on its head lets Added count ("" for none).
	Mode     policy.ChangeDeclarations
	Approver string
	// Renames are git's renames between the two commits compared; nil:
	// none are known, and no test moves.
	Renames *record.Renames
}

// Comparison is what Compare found: the preservation findings, and the
// tests found under the id a move maps them to.
type Comparison struct {
	Findings []record.Finding
	Moved    []record.TestMove
}

// Compare enforces spec § 4 on exact identities: every test that passed at
// the base must be present and not skipped at the candidate, and the set of
// such exceptions must equal the set of declared skips — declaring A cannot
// authorise B, and a declaration that matches no observed exception while
// its test passes at the candidate is stale. Tests that failed or were
// skipped at the base establish no preservation authority.
//
// Identities are counted, not only compared (issue 24): an id a baseline
// report repeats keeps authority once per occurrence that passed, so a
// base that passed X twice and a candidate that has X once is one X
// missing. Every occurrence at the candidate that is not skipped (a failed
// one fails the run by itself) satisfies one occurrence at the base.
//
// A passing test absent under its own id is looked for under the ids the
// change's moves give it, in this order: git's renames mapping its
// location (a file path, a dotted module path, a Go import path:
// locator), then, for a parametrized case whose function and case count
// stayed, the function's new case ids. A test found so is preserved and
// listed in Comparison.Moved; one missing under every id is missing under
// its base id. A candidate occurrence serves the base's tests of its own
// id before any moved one.
//
// Declarations: the governing policy's, less those the change removes (a
// removed declaration excuses nothing and is never stale, so un-skipping a
// test and removing its declaration together lands), plus those the
// change adds when Mode and Approver let them count. An exception only an
// uncounted addition would excuse is its own finding, saying how to
// proceed.
//
// Every finding is RM-VERIFY-003 and lists every offending id, sorted, in
// IDs. Check is left empty for the caller (verdict.Evaluate fills it from the
// result that carries the finding). A nil inventory cannot be compared and
// fails closed, as does a baseline that executed no test.
func Compare(base, candidate *report.Inventory, ch Change) Comparison {
	var out []record.Finding
	add := func(rule, msg, hint string, ids []report.TestID) {
		slices.Sort(ids)
		out = append(out, record.Finding{Code: rmerr.VerifySkipped, Rule: rule, Message: msg, IDs: ids, Hint: hint})
	}

	decl, invalid := declarations(append(slices.Clone(ch.Declared), ch.Added...))
	out = append(out, invalid...)
	removed := map[report.TestID]bool{}
	for _, id := range ch.Removed {
		removed[report.TestID(id)] = true
	}
	added := map[report.TestID]bool{}
	for _, d := range ch.Added {
		added[report.TestID(d.TestID)] = true
	}
	counts := ch.Mode != policy.ChangeDeclarationsNever && ch.Approver != ""

	if bad := incomparable(base, candidate); bad != nil {
		return Comparison{Findings: record.Normalize(append(out, bad...)), Moved: []record.TestMove{}}
	}
	// A baseline that executed no test gives no test authority; whether
	// that fails the check is the baseline's own judgement (verdict.Judge:
	// it fails closed unless the check is new in the change).

	m := match(base, candidate, newLocator(ch.Renames))

	// Each exception is excused by a declaration in force, or stands: as
	// an uncounted addition when only the change declares it, else as
	// itself.
	used := map[report.TestID]bool{}
	var missing, skipped, pendingIDs []report.TestID
	nMissing, nSkipped := 0, 0
	for _, e := range m.exceptions {
		switch id := e.id; {
		case decl[id] && !removed[id] && (!added[id] || counts):
			used[id] = true
		case added[id]:
			used[id] = true
			pendingIDs = append(pendingIDs, id)
		case e.skipped:
			skipped, nSkipped = append(skipped, id), nSkipped+e.n
		default:
			missing, nMissing = append(missing, id), nMissing+e.n
		}
	}
	moveHint := "; a moved test is found under its new id only where git detects the rename (git diff -M: at least 50% similar)"
	declHint := declarationHint(ch.Mode)
	if len(missing) > 0 {
		add(RuleMissing, fmt.Sprintf("%s that passed at the base %s missing at the candidate and not declared%s", printable.Plural(nMissing, "test", "tests"), isAre(nMissing), m.repeatNote(missing)),
			"restore the tests"+moveHint+"; if removing them is intended, "+declHint, missing)
	}
	if len(skipped) > 0 {
		add(RuleSkipped, fmt.Sprintf("%s that passed at the base %s skipped at the candidate and not declared%s", printable.Plural(nSkipped, "test", "tests"), isAre(nSkipped), m.repeatNote(skipped)),
			"make the tests run again; if skipping is intended, "+declHint, skipped)
	}
	if len(pendingIDs) > 0 {
		slices.Sort(pendingIDs)
		pendingIDs = slices.Compact(pendingIDs)
		n := len(pendingIDs)
		if ch.Mode == policy.ChangeDeclarationsNever {
			add(RuleChangeDeclarationOff, fmt.Sprintf("%s that passed at the base %s missing or skipped at the candidate, declared only by this change, and the operator policy lets no change declare its own skips (verification.change_declarations: never)", printable.Plural(n, "test", "tests"), isAre(n)),
				"land the declarations in a change of their own first (declarations are read from the base), then this change; or restore the tests", pendingIDs)
		} else {
			add(RuleUnapprovedDeclaration, fmt.Sprintf("%s that passed at the base %s missing or skipped at the candidate and declared only by this change, which has no approving review from someone other than its author on its head", printable.Plural(n, "test", "tests"), isAre(n)),
				"a declaration the change itself adds counts once a reviewer other than the pull request's author approves its head commit: get that approval and verify again, or land the declarations in a change of their own first", pendingIDs)
		}
	}

	// A declaration is in use while it excuses an exception, whatever the
	// base did: a test declared and skipped at the base stays excused. It
	// is stale only when it excuses nothing and its test passes at the
	// candidate; one the change removes is never stale. Exactness is kept
	// by the other direction: every exception above must be declared, so
	// declaring A cannot authorize B.
	var stale []report.TestID
	passing := m.passing(decl)
	for id := range decl {
		if !used[id] && !removed[id] && passing[id] {
			stale = append(stale, id)
		}
	}
	if len(stale) > 0 {
		add(RuleStaleDeclaration, fmt.Sprintf("%s %s stale: the test passes at the candidate", printable.Plural(len(stale), "declared skip", "declared skips"), isAre(len(stale))),
			"remove the declarations: the observed exception set must equal the declaration set", stale)
	}
	return Comparison{Findings: record.Normalize(out), Moved: m.moved}
}

// declarationHint says how to declare an intended exception under mode,
// and where declarations are read.
func declarationHint(mode policy.ChangeDeclarations) string {
	if mode == policy.ChangeDeclarationsNever {
		return "declare each exact id under the check's declared_skips with its cause and land that first: declarations are read from the base, and this operator lets no change declare its own (verification.change_declarations: never)"
	}
	return "declare each exact id under the check's declared_skips with its cause: a declaration this change adds counts with an approving review from someone other than the pull request's author, otherwise land it first (declarations are read from the base)"
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
// compare (one missing, different formats or identities), or nil when they
// can be compared. A repeated id is not one of them: ids are counted.
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
	return nil
}

// incomparableFinding is what Compare's add writes for RuleIncomparable,
// without ids.
func incomparableFinding(msg, hint string) record.Finding {
	return record.Finding{Code: rmerr.VerifySkipped, Rule: RuleIncomparable, Message: msg, Hint: hint}
}
