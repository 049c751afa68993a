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
		change    outcome.Change // Declared is taken from declared
		rules     []string
		moved     []string // "from>to:by"
	}
	run := func(t *testing.T, c tc) {
		c.change.Declared = c.declared
		res := outcome.Compare(c.base, c.candidate, c.change)
		got := res.Findings
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
		var moved []string
		for _, m := range res.Moved {
			moved = append(moved, string(m.From)+">"+string(m.To)+":"+string(m.By))
		}
		if !slices.Equal(moved, c.moved) {
			t.Errorf("moved = %q; want %q", moved, c.moved)
		}
		goldenJSON(t, got)
	}
	renames := func(pairs ...string) *record.Renames {
		r := &record.Renames{}
		for _, p := range pairs {
			from, to, _ := strings.Cut(p, ">")
			if strings.HasPrefix(from, "go:") {
				r.GoPackages = append(r.GoPackages, record.PackageMove{From: from[3:], To: to})
				continue
			}
			r.Files = append(r.Files, record.FileRename{From: from, To: to, Similarity: 100})
		}
		return r
	}
	added := func(ids ...string) outcome.Change { return outcome.Change{Added: declare(ids...)} }
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
		// Issue 24, repeats keep authority by count: every occurrence at
		// the candidate that is not skipped satisfies one at the base.
		{name: "a repeated id passed twice and found once is one missing", base: inv("a=p", "a=p", "b=p"), candidate: inv("a=p", "b=p"),
			rules: []string{outcome.RuleMissing}},
		{name: "a repeated id found as often is preserved", base: inv("a=p", "a=p", "b=p"), candidate: inv("a=p", "a=f", "b=p")},
		{name: "a repeated id once passed and once failed keeps one", base: inv("a=p", "a=f", "b=p"), candidate: inv("a=p", "b=p")},
		{name: "a repeated id found once and skipped once", base: inv("a=p", "a=p"), candidate: inv("a=p", "a=s"),
			rules: []string{outcome.RuleSkipped}},
		{name: "a repeated id declared is excused and in use", base: inv("a=p", "a=p", "b=p"), candidate: inv("a=p", "b=p"), declared: declare("a")},
		{name: "candidate repeats count too", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=p", "b=s")},
		// Moves are facts from git: a test found under the id a rename
		// maps it to is preserved and recorded.
		{name: "pytest file moved, node id", base: inv("tests/test_a.py::test_x=p", "tests/test_a.py::test_y=p"),
			candidate: inv("pkg/tests/test_a.py::test_x=p", "pkg/tests/test_a.py::test_y=f"),
			change:    outcome.Change{Renames: renames("tests/test_a.py>pkg/tests/test_a.py")},
			moved:     []string{"tests/test_a.py::test_x>pkg/tests/test_a.py::test_x:file", "tests/test_a.py::test_y>pkg/tests/test_a.py::test_y:file"}},
		{name: "pytest file moved, junit classname with a class", base: inv("tests.test_a::test_x=p", "tests.test_a.TestCart::test_total=p", "tests.test_ab::test_z=p"),
			candidate: inv("pkg.tests.test_a::test_x=p", "pkg.tests.test_a.TestCart::test_total=p"),
			change:    outcome.Change{Renames: renames("tests/test_a.py>pkg/tests/test_a.py")},
			rules:     []string{outcome.RuleMissing},
			moved:     []string{"tests.test_a.TestCart::test_total>pkg.tests.test_a.TestCart::test_total:file", "tests.test_a::test_x>pkg.tests.test_a::test_x:file"}},
		{name: "pytest rootdir below the repository", base: inv("tests.test_a::test_x=p"), candidate: inv("unit.test_a::test_x=p"),
			change: outcome.Change{Renames: renames("python/tests/test_a.py>python/unit/test_a.py")},
			moved:  []string{"tests.test_a::test_x>unit.test_a::test_x:file"}},
		{name: "java class moved", base: inv("com.shop.CartTest::total=p"), candidate: inv("com.shop.cart.CartTest::total=p"),
			change: outcome.Change{Renames: renames("src/test/java/com/shop/CartTest.java>src/test/java/com/shop/cart/CartTest.java")},
			moved:  []string{"com.shop.CartTest::total>com.shop.cart.CartTest::total:file"}},
		{name: "node test file moved (file-qualified id)", base: inv("test/a.test.js::rounds=p", "test/b.test.js::rounds=p"),
			candidate: inv("test/unit/a.test.js::rounds=p", "test/b.test.js::rounds=p"),
			change:    outcome.Change{Renames: renames("test/a.test.js>test/unit/a.test.js")},
			moved:     []string{"test/a.test.js::rounds>test/unit/a.test.js::rounds:file"}},
		{name: "suite-path segments that are files all move", base: inv("test/a.test.js > test/a.test.js::adds=p"),
			candidate: inv("test/x/a.test.js > test/x/a.test.js::adds=p"),
			change:    outcome.Change{Renames: renames("test/a.test.js>test/x/a.test.js")},
			moved:     []string{"test/a.test.js > test/a.test.js::adds>test/x/a.test.js > test/x/a.test.js::adds:file"}},
		{name: "go package moved", base: inv("example.com/shop/cart::TestTotal=p", "example.com/shop/cart::TestTotal/empty=p", "example.com/shop/tax::TestRate=p"),
			candidate: inv("example.com/shop/internal/cart::TestTotal=p", "example.com/shop/internal/cart::TestTotal/empty=p", "example.com/shop/tax::TestRate=p"),
			change:    outcome.Change{Renames: renames("go:example.com/shop/cart>example.com/shop/internal/cart")},
			moved:     []string{"example.com/shop/cart::TestTotal>example.com/shop/internal/cart::TestTotal:package", "example.com/shop/cart::TestTotal/empty>example.com/shop/internal/cart::TestTotal/empty:package"}},
		{name: "a moved test missing under both ids is missing", base: inv("tests/test_a.py::test_x=p", "tests/test_a.py::test_y=p"),
			candidate: inv("pkg/tests/test_a.py::test_x=p"),
			change:    outcome.Change{Renames: renames("tests/test_a.py>pkg/tests/test_a.py")},
			rules:     []string{outcome.RuleMissing}, moved: []string{"tests/test_a.py::test_x>pkg/tests/test_a.py::test_x:file"}},
		{name: "a moved test skipped at its new id is skipped", base: inv("tests/test_a.py::test_x=p"), candidate: inv("pkg/tests/test_a.py::test_x=s"),
			change: outcome.Change{Renames: renames("tests/test_a.py>pkg/tests/test_a.py")},
			rules:  []string{outcome.RuleSkipped}},
		{name: "without a rename from git a look-alike is no move", base: inv("tests/test_a.py::test_x=p"), candidate: inv("pkg/tests/test_a.py::test_x=p"),
			change: outcome.Change{Renames: renames("tests/test_b.py>pkg/tests/test_b.py")},
			rules:  []string{outcome.RuleMissing}},
		{name: "a test under the new id keeps its occurrence", base: inv("a.py::t=p", "b.py::t=p"), candidate: inv("b.py::t=p"),
			change: outcome.Change{Renames: renames("a.py>b.py")},
			rules:  []string{outcome.RuleMissing}},
		// Parametrized cases whose ids changed while the function and its
		// case count stayed.
		{name: "a corrected parametrize value", base: inv("t.py::test_add[1-2]=p", "t.py::test_add[2-4]=p"),
			candidate: inv("t.py::test_add[1-3]=p", "t.py::test_add[2-4]=p"),
			moved:     []string{"t.py::test_add[1-2]>t.py::test_add[1-3]:parameters"}},
		{name: "a dropped case is missing", base: inv("t.py::test_add[1-2]=p", "t.py::test_add[2-4]=p"), candidate: inv("t.py::test_add[2-4]=p"),
			rules: []string{outcome.RuleMissing}},
		{name: "a case replaced while another was added is missing", base: inv("t.py::test_add[1-2]=p"),
			candidate: inv("t.py::test_add[1-3]=p", "t.py::test_add[5-6]=p"), rules: []string{outcome.RuleMissing}},
		{name: "new cases are paired before known ones", base: inv("t.py::f[a]=p", "t.py::f[b]=f"), candidate: inv("t.py::f[b]=p", "t.py::f[c]=p"),
			moved: []string{"t.py::f[a]>t.py::f[c]:parameters"}},
		{name: "parameters changed in a moved file", base: inv("tests/t.py::f[1]=p", "tests/t.py::f[2]=p"),
			candidate: inv("unit/t.py::f[1]=p", "unit/t.py::f[3]=p"),
			change:    outcome.Change{Renames: renames("tests/t.py>unit/t.py")},
			moved:     []string{"tests/t.py::f[1]>unit/t.py::f[1]:file", "tests/t.py::f[2]>unit/t.py::f[3]:parameters"}},
		{name: "a bracket in the location is no case", base: inv("app/[slug]/page.test.js::renders=p"), candidate: inv("app/[id]/page.test.js::renders=p"),
			rules: []string{outcome.RuleMissing}},
		// Declarations the change makes (issue 24).
		{name: "a declaration the change adds counts with an approval", base: inv("a=p", "b=p"), candidate: inv("a=p", "b2=p"),
			change: outcome.Change{Added: declare("b"), Approver: "monalisa"}},
		{name: "without an approval it does not", base: inv("a=p", "b=p"), candidate: inv("a=p", "b2=p"),
			change: added("b"), rules: []string{outcome.RuleUnapprovedDeclaration}},
		{name: "with change_declarations never it does not", base: inv("a=p", "b=p"), candidate: inv("a=p", "b2=p"),
			change: outcome.Change{Added: declare("b"), Approver: "monalisa", Mode: policy.ChangeDeclarationsNever},
			rules:  []string{outcome.RuleChangeDeclarationOff}},
		{name: "an unapproved addition excuses nothing else", base: inv("a=p", "b=p", "c=p"), candidate: inv("a=p"),
			change: added("b"), rules: []string{outcome.RuleUnapprovedDeclaration, outcome.RuleMissing}},
		{name: "an added declaration for a passing test is stale", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=p"),
			change: outcome.Change{Added: declare("b"), Approver: "monalisa"}, rules: []string{outcome.RuleStaleDeclaration}},
		{name: "removing a declaration and un-skipping its test is not stale", base: inv("a=p", "b=s"), candidate: inv("a=p", "b=p"),
			declared: declare("b"), change: outcome.Change{Removed: []string{"b"}}},
		{name: "a removed declaration excuses nothing", base: inv("a=p", "b=p"), candidate: inv("a=p", "b=s"),
			declared: declare("b"), change: outcome.Change{Removed: []string{"b"}}, rules: []string{outcome.RuleSkipped}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestCompareIsOrderIndependent: the findings feed a verdict that is
// recomputed and compared for equality, so test order must not matter.
func TestCompareIsOrderIndependent(t *testing.T) {
	base := inv("d=p", "c=p", "b=p", "a=p", "e=f")
	cand := inv("a=s", "d=p")
	want := outcome.Compare(base, cand, outcome.Change{Declared: declare("x", "d")}).Findings
	slices.Reverse(base.Tests)
	slices.Reverse(cand.Tests)
	got := outcome.Compare(base, cand, outcome.Change{Declared: declare("d", "x")}).Findings
	if !slices.EqualFunc(got, want, func(a, b record.Finding) bool {
		return a.Rule == b.Rule && a.Message == b.Message && slices.Equal(a.IDs, b.IDs)
	}) {
		t.Fatalf("order changed the findings:\n%+v\n%+v", got, want)
	}
}
