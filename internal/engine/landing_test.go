package engine_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// landingRunner runs every tests/*.t as a shell script: one TAP point per
// file, "not ok" when it exits non-zero. The command exits 0 either way:
// the report is the authority on what failed. tapPolicy runs it.
const landingRunner = `#!/bin/sh
n=$(ls tests/*.t | wc -l)
echo "1..$n"
i=0
for f in tests/*.t; do
  i=$((i+1)); name=$(basename "$f" .t)
  if sh "$f" >/dev/null 2>&1; then echo "ok $i $name"; else echo "not ok $i $name"; fi
done
`

// landingRepo is issue 24's repository: at the fork, lib/rate.sh is
// covered by no test and tests/fixed.t fails (lib/fix.sh is broken); main
// then gains tests/discount.t, which covers lib/rate.sh, and fixes
// lib/fix.sh. It returns the fork and main's tip.
func landingRepo(t *testing.T) (r *gittest.Repo, fork, tip string) {
	r = gittest.New(t)
	r.Write(".runmill/checks.yaml", tapPolicy)
	r.Write("tests/run.sh", landingRunner)
	r.Write("lib/price.sh", "echo 250\n")
	r.Write("lib/rate.sh", "echo 10\n")
	r.Write("lib/fix.sh", "echo broken\n")
	r.Write("tests/total.t", `test "$(sh lib/price.sh)" = 250`+"\n")
	r.Write("tests/fixed.t", `test "$(sh lib/fix.sh)" = ok`+"\n")
	fork = r.Commit("fork: fixed fails")
	r.Write("tests/discount.t", `test "$(sh lib/rate.sh)" = 10`+"\n")
	r.Commit("main gains a test of lib/rate.sh")
	r.Write("lib/fix.sh", "echo ok\n")
	tip = r.Commit("main fixes lib/fix.sh")
	return r, fork, tip
}

// branch commits files (content "" removes the path) on a new branch from
// start and returns its head; main is checked out again.
func branch(r *gittest.Repo, name, start string, files map[string]string) string {
	r.Git("checkout", "-q", "-b", name, start)
	for p, c := range files {
		if c == "" {
			r.Remove(p)
		} else {
			r.Write(p, c)
		}
	}
	head := r.Commit(name)
	r.Checkout("main", false)
	return head
}

// TestLandingTree: the candidate phase runs on the tree that would land —
// the base tip merged with the change — and baselines at the base tip
// (docs/outcome.md § The landing tree), each case through Verify against
// the real containerd, rejudged, and its signed bundle verified against
// `evidence expect`:
//   - a stale branch that breaks the code a test main gained covers is
//     not merge-ready, naming that test (a false green before);
//   - a branch forked where a test failed, which deletes it after main
//     fixed it, is not merge-ready, naming it (a false green before);
//   - a branch that conflicts with main is not merge-ready, naming the
//     paths and the fix;
//   - an honest branch behind main is merge-ready and says it tested the
//     merge;
//   - a branch containing the base tip lands as itself: no merge commit.
func TestLandingTree(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r, fork, tip := landingRepo(t)
	_, key, trust := newTestKey(t)
	stale := branch(r, "stale", fork, map[string]string{"lib/rate.sh": "echo 11\n"})
	deletes := branch(r, "deletes", fork, map[string]string{"tests/fixed.t": ""})
	conflicts := branch(r, "conflicts", fork, map[string]string{"lib/fix.sh": "echo mine\n", "lib/price.sh": "echo 300\n", "tests/total.t": `test "$(sh lib/price.sh)" = 300` + "\n"})
	honest := branch(r, "honest", fork, map[string]string{"tests/vat.t": "exit 0\n", "README": "vat\n"})
	ahead := branch(r, "ahead", tip, map[string]string{"tests/vat.t": "exit 0\n"})

	for _, c := range []struct {
		name, cand string
		ready      bool
		want       []string
		notWant    []string
		merged     bool
		behind     int
		conflicts  []string
		line       string
	}{
		{name: "a stale branch breaks what a test main gained covers", cand: stale, want: []string{verdict.RuleTestsFailed + "|", `"discount"`},
			merged: true, behind: 2, line: "tested the merge with main at " + tip[:12] + ": the branch is 2 commits behind"},
		{name: "a branch forked from red deletes the test main fixed", cand: deletes, want: []string{"fixed"}, notWant: []string{verdict.RuleTestsFailed},
			merged: true, behind: 2, line: "tested the merge with main at " + tip[:12] + ": the branch is 2 commits behind"},
		{name: "a conflicting branch", cand: conflicts, want: []string{verdict.RuleMergeConflict + "|RM-VERIFY-002|unit|", `"lib/fix.sh"`},
			notWant: []string{"lib/price.sh", verdict.RuleNotStarted, verdict.RuleNoBaseline}, behind: 2, conflicts: []string{"lib/fix.sh"},
			line: "the branch does not merge with main at " + tip[:12] + " (2 commits behind): lib/fix.sh conflicted; merge or rebase onto main"},
		{name: "an honest branch behind main", cand: honest, ready: true, merged: true, behind: 2,
			line: "tested the merge with main at " + tip[:12] + ": the branch is 2 commits behind"},
		{name: "a branch containing the base tip", cand: ahead, ready: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var progress bytes.Buffer
			run := verify(t, r, "main", c.cand, func(o *engine.VerifyOptions) { o.SigningKey, o.Progress = key, &progress })
			wantReasons(t, run, c.ready, c.want, c.notWant)
			rejudge(t, run)
			cd := run.Delivery.Candidate
			l := cd.Landing
			if cd.Head != c.cand || cd.Base != tip || l.BaseRef != "main" || l.Merged != c.merged || l.Behind != c.behind || strings.Join(l.Conflicts, ",") != strings.Join(c.conflicts, ",") {
				t.Fatalf("candidate %+v, want head %s on %s, merged %v, %d behind, conflicts %q", cd, c.cand, tip, c.merged, c.behind, c.conflicts)
			}
			switch {
			case c.conflicts != nil:
				if l.Commit != "" {
					t.Errorf("a conflicted landing has commit %s", l.Commit)
				}
			case c.merged:
				if parents := r.Git("rev-list", "--parents", "-n1", l.Commit); parents != l.Commit+" "+tip+" "+c.cand {
					t.Errorf("landing commit %s has parents %q, want the base tip and the head", l.Commit, parents)
				}
			default:
				if l.Commit != c.cand {
					t.Errorf("a head containing the base tip landed as %s, not itself", l.Commit)
				}
			}
			wantCommit := map[record.Phase]string{record.Baseline: tip, record.Candidate: l.Commit}
			if c.conflicts != nil {
				wantCommit[record.Candidate] = c.cand
			}
			for _, rec := range run.Delivery.Checks {
				if rec.Commit != wantCommit[rec.Phase] {
					t.Errorf("%s (%s) ran at %s, want %s", rec.CheckID, rec.Phase, rec.Commit, wantCommit[rec.Phase])
				}
				if c.conflicts != nil && (rec.Started || strings.Join(rec.LandingConflicts, ",") != strings.Join(c.conflicts, ",")) {
					t.Errorf("%s (%s) of a conflicting change: started %v, landing conflicts %q", rec.CheckID, rec.Phase, rec.Started, rec.LandingConflicts)
				}
			}
			if got := explain.LandingLine(cd); got != c.line {
				t.Errorf("landing line %q, want %q", got, c.line)
			}
			if c.line != "" && !strings.Contains(progress.String(), c.line) {
				t.Errorf("the console does not say %q:\n%s", c.line, progress.String())
			}
			bundle, err := os.ReadFile(run.BundlePath)
			if err != nil {
				t.Fatal(err)
			}
			res := evidence.Verify(bundle, trust, expectations(t, r, "main", c.cand), evidence.VerifyOptions{Now: time.Now()})
			switch {
			case c.ready && !res.Valid:
				t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
			case !c.ready && (res.Valid || res.Reason != evidence.ReasonRequiredEvidence && res.Reason != evidence.ReasonNotMergeReady):
				t.Fatalf("a not-merge-ready bundle: %s %s, want %s or %s", res.Reason, res.Message, evidence.ReasonRequiredEvidence, evidence.ReasonNotMergeReady)
			}
			if c.conflicts != nil {
				var hint string
				for _, f := range run.Delivery.Verdict.Reasons() {
					if f.Rule == verdict.RuleMergeConflict {
						hint = f.Hint
					}
				}
				if !strings.Contains(hint, "merge the base into the branch or rebase it onto the base") {
					t.Errorf("the conflict's fix is %q", hint)
				}
			}
		})
	}
}

// pathRunner is landingRunner naming each test by its path, at any depth:
// a test moved to another directory has another id.
const pathRunner = `#!/bin/sh
files=$(find tests -name '*.t' | sort)
echo "1..$(echo "$files" | wc -l)"
i=0
for f in $files; do
  i=$((i+1))
  if sh "$f" >/dev/null 2>&1; then echo "ok $i $f"; else echo "not ok $i $f"; fi
done
`

// TestBehindAfterMainMovedTests: a branch forked before main moved its
// tests to another directory, which adds a test of its own, is
// merge-ready: the baseline is the base tip and the landing tree holds
// the tests where main put them, so main's moves are on both sides and
// nothing of them is blamed on the change.
func TestBehindAfterMainMovedTests(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", tapPolicy)
	r.Write("tests/run.sh", pathRunner)
	r.Write("tests/total.t", "exit 0\n")
	r.Write("tests/empty.t", "exit 0\n")
	fork := r.Commit("fork")
	for _, n := range []string{"total", "empty"} {
		r.Remove("tests/" + n + ".t")
		r.Write("tests/unit/"+n+".t", "exit 0\n")
	}
	tip := r.Commit("main moves its tests under tests/unit")
	cand := branch(r, "behind", fork, map[string]string{"tests/vat.t": "exit 0\n"})
	_, key, trust := newTestKey(t)
	var progress bytes.Buffer
	run := verify(t, r, "main", cand, func(o *engine.VerifyOptions) { o.SigningKey, o.Progress = key, &progress })
	wantReasons(t, run, true, nil, nil)
	rejudge(t, run)
	want := "tested the merge with main at " + tip[:12] + ": the branch is 1 commit behind"
	if !strings.Contains(progress.String(), want) {
		t.Errorf("the console does not say %q:\n%s", want, progress.String())
	}
	for _, rec := range run.Delivery.Checks {
		if rec.Phase == record.Candidate && !slices.Contains(rec.Report.Inventory.Passed, "tests/unit/total.t") {
			t.Errorf("the landing tree's run passed %q, want main's moved tests among them", rec.Report.Inventory.Passed)
		}
	}
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	if res := evidence.Verify(bundle, trust, expectations(t, r, "main", cand), evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
		t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
	}
}
