package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// Issue 24, moves from git, declarations the change makes, repeats by
// count: every case through Verify against the real containerd, with the
// verdict and the rule it names, its moved tests, and its signed bundle
// verified offline against `evidence expect` of the same change. One
// repository, one branch per change; each check runs only when its files
// change (paths:), so a case runs one check.

// preservePolicy: pytest (JUnit), go test -json, a TAP runner and
// node:test, each gated by its files. pytest runs in the sandbox; the go-json report is a
// real go test -json of the commit's module recorded on the host
// (hostGoTestJSON) and committed with it, so no toolchain is built.
var preservePolicy = `checks:
  - id: py
    run: python3 -m pytest -q -p no:cacheprovider --junitxml=reports/py.xml
    report: {path: reports/py.xml, format: junit}
    timeout: 120s
    paths: ["**/*.py"]
  - id: go
    run: cat gotest/report.json > reports/go.json
    report: {path: reports/go.json, format: go-json}
    timeout: 60s
    paths: ["**/*.go", "gotest/**"]
` + nodeCheck + `  - id: unit
    run: sh tests/tap.sh plan > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
    paths: ["tests/**", ".runmill/**"]
`

// nodeCheck runs node:test with file-qualified ids (the reporter of
// docs/reports.md for Node before 24.11, nodeids_test.go) on test/.
var nodeCheck = strings.Replace(strings.TrimPrefix(nodeFilePolicy("suite-path"), "checks:\n"), "  - id: unit\n", "  - id: node\n", 1) +
	"    paths: [\"test/**\"]\n"

// flakyDeclared is the unit check's declaration at the base (unit is the
// last check, so appending declarations declares them for it).
const flakyDeclared = "    declared_skips:\n      - test_id: flaky\n        cause: the price feed is down; ENG-88\n"

const pyCart = `import pytest


def test_total():
    assert 2 * 125 == 250


class TestCart:
    def test_empty(self):
        assert sum([]) == 0


@pytest.mark.parametrize("a,b,want", [(1, 2, 3), (2, 2, 4)])
def test_add(a, b, want):
    assert a + b == want
`

const goCart = "package cart\n\n// Total sums prices in cents.\nfunc Total(prices ...int) int {\n\tt := 0\n\tfor _, p := range prices {\n\t\tt += p\n\t}\n\treturn t\n}\n"

const goCartTest = "package cart\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif got := Total(100, 150); got != 250 {\n\t\tt.Fatalf(\"Total = %d, want 250\", got)\n\t}\n}\n\nfunc TestEmpty(t *testing.T) {\n\tif Total() != 0 {\n\t\tt.Fatal(\"empty cart\")\n\t}\n}\n"

// preserveRepo is the fixture at its base commit on main.
func preserveRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Fatalf("this test needs /usr/bin/python3 with pytest (scripts/setup.sh): %v", err)
	}
	r := gittest.New(t)
	apply(r, files{
		".runmill/checks.yaml": preservePolicy + flakyDeclared, ".gitignore": "reports/\n",
		"tests/tap.sh": tapScript, "tests/list": "total\nzero_qty\nflaky SKIP\n",
		"pysrc/tests/test_cart.py": pyCart, "test/a.test.js": roundsA, "test/b.test.js": roundsB,
		"go.mod": "module example.com/shop\n\ngo 1.22\n", "cart/cart.go": goCart, "cart/cart_test.go": goCartTest,
	})
	recordGoReport(t, r)
	return r, r.Commit("base")
}

// recordGoReport records the work tree's go test -json report where the go
// check reads it.
func recordGoReport(t *testing.T, r *gittest.Repo) {
	t.Helper()
	b := hostGoTestJSON(t, r.Dir)
	if !strings.Contains(b, `"Action":"pass","Package":"example.com/shop/`) {
		t.Fatalf("go test -json did not pass:\n%s", b)
	}
	r.Write("gotest/report.json", b)
}

// preserveCase is one change on top of a base and what must come of it.
type preserveCase struct {
	name string
	base string // the base commit; the fixture's when empty
	from string // the branch the change starts from; main when empty
	cand files
	// moves is what the change does with git mv (old → new).
	moves map[string]string
	// goReport records the change's go test -json report.
	goReport bool
	ready    bool
	want     []string // substrings some reason must contain
	hint     string   // a substring some reason's hint (how to proceed) must contain
	moved    []string // the candidate runs' moved tests, "from → to (by)"
	operator string   // operator policy text
	reviews  string   // a pull request 42 with this recorded reviews page, "" for none
}

func TestPreservation(t *testing.T) {
	r, base := preserveRepo(t)
	// A base whose TAP runner repeats an id: issue 24's repeat case.
	r.Checkout("dup-base", true)
	apply(r, files{"tests/list": "total\nsame\nsame\nzero_qty\nflaky SKIP\n"})
	dupBase := r.Commit("a base that repeats an id")
	r.Checkout("main", false)

	renamed := files{"tests/list": "total_with_tax\nzero_qty\nflaky SKIP\n",
		".runmill/checks.yaml": preservePolicy + flakyDeclared + "      - test_id: total\n        cause: renamed total_with_tax; the old id is gone\n"}
	_, key, trust := newTestKey(t)
	for _, c := range []preserveCase{
		{name: "moves a pytest test file to another directory", moves: map[string]string{"pysrc/tests/test_cart.py": "pysrc/cart/tests/test_cart.py"},
			ready: true, moved: []string{
				"pysrc.tests.test_cart.TestCart::test_empty → pysrc.cart.tests.test_cart.TestCart::test_empty (file)",
				"pysrc.tests.test_cart::test_add[1-2-3] → pysrc.cart.tests.test_cart::test_add[1-2-3] (file)",
				"pysrc.tests.test_cart::test_add[2-2-4] → pysrc.cart.tests.test_cart::test_add[2-2-4] (file)",
				"pysrc.tests.test_cart::test_total → pysrc.cart.tests.test_cart::test_total (file)"}},
		{name: "moves a Go package", moves: map[string]string{"cart": "internal/cart"}, goReport: true,
			ready: true, moved: []string{
				"example.com/shop/cart::TestEmpty → example.com/shop/internal/cart::TestEmpty (package)",
				"example.com/shop/cart::TestTotal → example.com/shop/internal/cart::TestTotal (package)"}},
		{name: "moves a node:test file", moves: map[string]string{"test/a.test.js": "test/unit/a.test.js"},
			ready: true, moved: []string{"test/a.test.js::rounds → test/unit/a.test.js::rounds (file)"}},
		{name: "corrects a parametrize value", cand: files{"pysrc/tests/test_cart.py": strings.Replace(pyCart, "(1, 2, 3)", "(1, 3, 4)", 1)},
			ready: true, moved: []string{"pysrc.tests.test_cart::test_add[1-2-3] → pysrc.tests.test_cart::test_add[1-3-4] (parameters)"}},
		{name: "renames a test and declares the old id, approved by another user", cand: renamed, reviews: "pull_reviews_page2.json", ready: true},
		{name: "renames a test and declares the old id, without an approval", cand: renamed, reviews: "pull_reviews_page1.json",
			want: []string{outcome.RuleUnapprovedDeclaration + "|RM-VERIFY-003|unit|", "[total]"},
			hint: "counts once a reviewer other than the pull request's author approves its head commit: get that approval and verify again, or land the declarations in a change of their own first"},
		{name: "renames a test and declares the old id, change_declarations never", cand: renamed, reviews: "pull_reviews_page2.json",
			operator: "verification:\n  change_declarations: never\n", want: []string{outcome.RuleChangeDeclarationOff + "|RM-VERIFY-003|unit|", "[total]"},
			hint: "land the declarations in a change of their own first (declarations are read from the base)"},
		{name: "renames a test without declaring it", cand: files{"tests/list": "total_with_tax\nzero_qty\nflaky SKIP\n"},
			want: []string{outcome.RuleMissing + "|RM-VERIFY-003|unit|", "[total]"},
			hint: "a declaration this change adds counts with an approving review from someone other than the pull request's author"},
		{name: "un-skips a fixed test and removes its declaration", cand: files{"tests/list": "total\nzero_qty\nflaky\n", ".runmill/checks.yaml": preservePolicy},
			ready: true},
		{name: "a base with an id passed twice, the candidate once", base: dupBase, from: "dup-base", cand: files{"tests/list": "total\nsame\nzero_qty\nflaky SKIP\n"},
			want: []string{outcome.RuleMissing + "|RM-VERIFY-003|unit|1 test that passed at the base is missing", "\"same\" passed 2 times at the base and is found 1 time", "[same]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := base
			if c.base != "" {
				b = c.base
			}
			r.Checkout(cmpOr(c.from, "main"), false)
			r.Checkout("c-"+strings.NewReplacer(" ", "-", ",", "", ":", "").Replace(c.name), true)
			for from, to := range c.moves {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(r.Dir, to)), 0o755); err != nil {
					t.Fatal(err)
				}
				r.Git("mv", from, to)
			}
			apply(r, c.cand)
			if c.goReport {
				recordGoReport(t, r)
			}
			cand := r.Commit(c.name)
			runPreserve(t, r, b, cand, c, key, trust)
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runPreserve verifies one case, holds it to its verdict, reasons and moves,
// and verifies its signed bundle against the expectations the verifier
// host derives for itself.
func runPreserve(t *testing.T, r *gittest.Repo, base, cand string, c preserveCase, key *evidence.SigningKey, trust []byte) {
	t.Helper()
	var policyFile string
	if c.operator != "" {
		policyFile = filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(policyFile, []byte(c.operator), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var f *githubtest.Server
	if c.reviews != "" {
		f = githubtest.New(t)
		f.Replace("{head}", cand)
		f.Replace("{base}", base)
		f.Replace("{old}", base)
		observeReviews(f, c.reviews)
	}
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) {
		o.SigningKey, o.Discover.PolicyFile = key, policyFile
		if f != nil {
			o.GitHub, o.PullRequest = githubOptions(t, f, 42), 42
		}
	})
	wantReasons(t, run, c.ready, c.want, nil)
	rejudge(t, run)
	recompare(t, run)
	var moved []string
	for _, rec := range run.Delivery.Checks {
		for _, m := range rec.Moved {
			moved = append(moved, string(m.From)+" → "+string(m.To)+" ("+string(m.By)+")")
		}
	}
	if !slices.Equal(moved, c.moved) {
		t.Errorf("moved tests:\n got %q\nwant %q", moved, c.moved)
	}
	if c.hint != "" && !slices.ContainsFunc(run.Delivery.Verdict.Reasons(), func(f record.Finding) bool { return strings.Contains(f.Hint, c.hint) }) {
		t.Errorf("no reason's hint says %q; reasons:\n%s", c.hint, strings.Join(rules(run), "\n"))
	}
	// The console and the job summary list the moved tests from this block
	// (internal/cli TestPrintRunListsMovedTests, internal/actions
	// TestSummaryListsMovedTests).
	block := strings.Join(explain.MovedBlock(&run.Delivery, len(moved)), "\n")
	for _, m := range moved {
		from, to, _ := strings.Cut(m[:strings.LastIndex(m, " (")], " → ")
		if !strings.Contains(block, strconv.Quote(from)+" → "+strconv.Quote(to)) {
			t.Errorf("the console and summary block lacks %s:\n%s", m, block)
		}
	}

	// The verifier host observes for itself: git, the policies, GitHub.
	eo := engine.ExpectOptions{Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: policyFile}, StateDir: t.TempDir()}
	if f != nil {
		observeReviews(f, c.reviews)
		eo.GitHub, eo.PullRequest = githubOptions(t, f, 42), 42
	}
	exp, err := engine.Expect(context.Background(), eo)
	if err != nil {
		t.Fatal(err)
	}
	expDoc, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The facts and their bindings hold; a refusal is the verdict's.
	wantOfflineVerdict(t, run, trust, expDoc, c.ready)
	if exp.Renames == nil || run.Delivery.Renames == nil || len(exp.Renames.Files) != len(run.Delivery.Renames.Files) {
		t.Errorf("renames: expect %+v, verify %+v", exp.Renames, run.Delivery.Renames)
	}
}

// observeReviews registers what Verify and Expect read of pull request 42
// when its reviews page is reviews: the pull request (opened by octocat),
// that one page, and an unprotected base branch (no remote contexts).
func observeReviews(f *githubtest.Server, reviews string) {
	f.Expect("/repos/acme/widget/pulls/42", "", 200, "pull_request.json")
	f.Expect("/repos/acme/widget/pulls/42/reviews", "per_page=100", 200, reviews)
	f.Expect("/repos/acme/widget/branches/main", "", 200, "branch_unprotected.json")
	f.Expect("/repos/acme/widget/rules/branches/main", "per_page=100&page=1", 200, "rules_empty.json")
}

// recompare holds every candidate run's preservation findings and moved
// tests to pkg/outcome's comparison of the recorded inventories, the
// change's declarations, the recorded approval and renames — what evidence
// verify recomputes, also for a bundle it refuses before that step.
func recompare(t *testing.T, run *engine.Run) {
	t.Helper()
	d := &run.Delivery
	approver := evidence.ChangeApprover(d.Reviews, d.Candidate.Author, d.Candidate.Head)
	for _, c := range d.Checks {
		if c.Phase != record.Candidate || c.Report == nil || c.Report.Inventory == nil {
			continue
		}
		var base *record.CheckRun
		for i := range d.Checks {
			if b := &d.Checks[i]; b.CheckID == c.CheckID && b.Phase == record.Baseline {
				base = b
			}
		}
		if base == nil || base.Report == nil || base.Report.Inventory == nil {
			continue
		}
		spec, _ := d.Manifest.Check(c.CheckID)
		got := outcome.Compare(inventoryOf(base.Report), inventoryOf(c.Report), evidence.ChangeOf(&d.Manifest, spec, d.Renames, approver))
		var recorded []record.Finding
		for _, o := range c.Observations {
			if strings.HasPrefix(o.Rule, "outcome.preservation.") || strings.HasPrefix(o.Rule, "outcome.declared-skip.") {
				o.Check = ""
				recorded = append(recorded, o)
			}
		}
		w, _ := json.Marshal(record.Normalize(got.Findings))
		h, _ := json.Marshal(record.Normalize(recorded))
		if string(w) != string(h) || !slices.Equal(got.Moved, c.Moved) && len(got.Moved)+len(c.Moved) > 0 {
			t.Errorf("%s: recorded findings %s and moves %+v; recomputed %s and %+v", c.CheckID, h, c.Moved, w, got.Moved)
		}
	}
}

// inventoryOf reads a recorded inventory back for pkg/outcome.
func inventoryOf(rep *record.ReportRecord) *report.Inventory {
	inv := &report.Inventory{Format: rep.Format, Identity: rep.Identity}
	for _, l := range []struct {
		ids []report.TestID
		st  report.Status
	}{{rep.Inventory.Passed, report.Passed}, {rep.Inventory.Failed, report.Failed}, {rep.Inventory.Skipped, report.Skipped}} {
		for _, id := range l.ids {
			inv.Tests = append(inv.Tests, report.Test{ID: id, Status: l.st})
		}
	}
	return inv
}
