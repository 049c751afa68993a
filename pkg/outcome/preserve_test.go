package outcome_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// inv builds an inventory from "id=status" pairs (p, f, s).
func inv(pairs ...string) *report.Inventory {
	in := &report.Inventory{Format: report.TAP, Tests: []report.Test{}}
	for _, p := range pairs {
		id, st, _ := strings.Cut(p, "=")
		status := map[string]report.Status{"p": report.Passed, "f": report.Failed, "s": report.Skipped}[st]
		in.Tests = append(in.Tests, report.Test{ID: report.TestID(id), Status: status})
		in.Counts.Total++
	}
	return in
}

func declare(ids ...string) []policy.DeclaredSkip {
	var out []policy.DeclaredSkip
	for _, id := range ids {
		out = append(out, policy.DeclaredSkip{TestID: id, Cause: "tracked in ENG-88"})
	}
	return out
}

// TestCompare pins spec § 4 "Skipped or missing tests". Each case's findings
// are in testdata/TestCompare/<case>.golden.json; rules lists the rules
// expected, so that a golden cannot silently drift.
func TestCompare(t *testing.T) {
	type tc struct {
		name      string
		base      *report.Inventory
		candidate *report.Inventory
		declared  []policy.DeclaredSkip
		rules     []string
	}
	run := func(t *testing.T, c tc) {
		got := outcome.Compare(c.base, c.candidate, c.declared)
		var rules []string
		for _, f := range got {
			if f.Code != rmerr.VerifySkipped && f.Code != rmerr.ReportIdentity {
				t.Errorf("finding %+v has code %s; want RM-VERIFY-003", f, f.Code)
			}
			if !slices.IsSorted(f.IDs) {
				t.Errorf("finding %s ids not sorted: %q", f.Rule, f.IDs)
			}
			rules = append(rules, f.Rule)
		}
		if c.rules == nil {
			c.rules = []string{}
		}
		if rules == nil {
			rules = []string{}
		}
		if !slices.Equal(rules, c.rules) {
			t.Errorf("rules = %q; want %q", rules, c.rules)
		}
		goldenJSON(t, got)
	}
	for _, c := range []tc{
		{name: "all preserved", base: inv("a=p", "b=p", "c=f"), candidate: inv("a=p", "b=p", "c=p", "new=p")},
		{name: "failing at candidate is not a preservation finding", base: inv("a=p"), candidate: inv("a=f")},
		{name: "missing and skipped listed by id", base: inv("z=p", "a=p", "m=p", "k=p"), candidate: inv("k=p", "m=s", "a=s"),
			rules: []string{outcome.RuleMissing, outcome.RuleSkipped}},
		{name: "same count different identities", base: inv("a=p", "b=p"), candidate: inv("a=p", "c=p"),
			rules: []string{outcome.RuleMissing}},
		{name: "exact declaration authorises", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=s"), declared: declare("b")},
		{name: "declared removal authorises", base: inv("a=p", "b=p"), candidate: inv("a=p"), declared: declare("b")},
		{name: "declaring A cannot authorise B", base: inv("a=p", "b=p", "c=p"), candidate: inv("a=p", "b=p", "c=s"), declared: declare("b"),
			rules: []string{outcome.RuleStaleDeclaration, outcome.RuleSkipped}},
		{name: "stale declaration for a test that passes again", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=p"), declared: declare("b"),
			rules: []string{outcome.RuleStaleDeclaration}},
		// The declared-skip lifecycle (issue 12): a declaration is in use
		// while its test is skipped or absent at the candidate, whatever the
		// base did, and stale only once the test passes there.
		{name: "declaration in use for a test that failed at base", base: inv("a=p", "b=f"), candidate: inv("a=p", "b=s"), declared: declare("b")},
		{name: "declaration in use for a test skipped at both (a README edit)", base: inv("a=p", "b=s"), candidate: inv("a=p", "b=s"), declared: declare("b")},
		{name: "declaration in use for a test skipped at base and removed", base: inv("a=p", "b=s"), candidate: inv("a=p"), declared: declare("b")},
		{name: "declaration stale once the skipped test passes", base: inv("a=p", "b=s"), candidate: inv("a=p", "b=p"), declared: declare("b"),
			rules: []string{outcome.RuleStaleDeclaration}},
		{name: "declaration of a failing test is not stale (the failure fails the run)", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=f"), declared: declare("b")},
		{name: "declaration nobody knows authorises nothing", base: inv("a=p", "c=p"), candidate: inv("a=p"), declared: declare("typo"),
			rules: []string{outcome.RuleMissing}},
		{name: "ids are exact", base: inv("Suite::a=p"), candidate: inv("suite::a=s"), declared: declare("suite::a", "Suite::a "),
			rules: []string{outcome.RuleMissing}},
		{name: "empty and duplicate declarations", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=s"), declared: declare("", "  ", "b", "b"),
			rules: []string{outcome.RuleInvalidDeclaration, outcome.RuleInvalidDeclaration}},
		{name: "failed at base establishes no authority", base: inv("a=p", "b=f"), candidate: inv("a=p")},
		{name: "no baseline inventory", base: nil, candidate: inv("a=p"), rules: []string{outcome.RuleIncomparable}},
		{name: "no candidate inventory", base: inv("a=p"), candidate: nil, rules: []string{outcome.RuleIncomparable}},
		// A baseline that executed nothing gives no test authority; the
		// baseline's own judgement fails it (verdict.Judge).
		{name: "baseline executed nothing", base: inv("a=s"), candidate: inv()},
		{name: "different identity rules", base: inv("a=p"), candidate: func() *report.Inventory {
			c := inv("a=p")
			c.Identity = report.IdentitySuitePath
			return c
		}(), rules: []string{outcome.RuleIncomparable}},
		{name: "duplicate ids in an inventory", base: inv("a=p", "a=p", "b=p"), candidate: inv("a=p", "b=p", "b=s"),
			rules: []string{outcome.RuleIncomparable, outcome.RuleIncomparable}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestCompareIsOrderIndependent: the findings feed a verdict that is
// recomputed and compared for equality, so test order must not matter.
func TestCompareIsOrderIndependent(t *testing.T) {
	base := inv("d=p", "c=p", "b=p", "a=p", "e=f")
	cand := inv("a=s", "d=p")
	want := outcome.Compare(base, cand, declare("x", "d"))
	slices.Reverse(base.Tests)
	slices.Reverse(cand.Tests)
	got := outcome.Compare(base, cand, declare("d", "x"))
	if !slices.EqualFunc(got, want, func(a, b record.Finding) bool {
		return a.Rule == b.Rule && a.Message == b.Message && slices.Equal(a.IDs, b.IDs)
	}) {
		t.Fatalf("order changed the findings:\n%+v\n%+v", got, want)
	}
}
