package engine_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

// wiredRunner runs every *.t file of the directories in DIRS as one TAP
// point (a file holding "pass" passes); tests/env.sh, a harness: entry,
// may set VERBOSE. A change wires a test directory in by editing DIRS.
const wiredRunner = `#!/bin/sh
DIRS="tests/unit"
[ -f tests/env.sh ] && . ./tests/env.sh
i=0
echo "TAP version 13"
for d in $DIRS; do
  for f in $d/*.t; do
    [ -e "$f" ] || continue
    i=$((i+1))
    if [ "$(cat "$f")" = pass ]; then echo "ok $i $f"; else echo "not ok $i $f"; fi
    [ -n "$VERBOSE" ] && echo "# ran $f"
  done
done
echo "1..$i"
`

// TestCandidateHarness (issue 25): when a change edits a check's harness,
// the landing commit runs a second time with the change's own harness,
// beside the base-harness run; that run can only add failures. Through
// Verify, rejudged, and each bundle verified against `evidence expect`:
//   - a change that wires a failing test directory into the pinned script
//     is refused in that change, the failure named as the candidate
//     harness's (before: merge-ready, and the next change refused);
//   - an honest harness change — a new test directory wired in whose tests
//     pass, a runner config edit — is merge-ready with both runs recorded,
//     and its bundle stops verifying once the candidate-harness run is
//     taken out of it;
//   - a forged candidate harness (a script that prints every test passed
//     and exits 0) cannot make the base's failing test pass;
//   - a base whose own script is broken, and a change that repairs it,
//     names the operator's command override.
func TestCandidateHarness(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	const policy = `checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    harness: [tests/env.sh]
    timeout: 60s
`
	r := gittest.New(t)
	apply(r, files{".runmill/checks.yaml": policy, "tests/run.sh": wiredRunner, "tests/env.sh": "# suite settings\n",
		"tests/unit/a.t": "pass\n", "tests/unit/b.t": "pass\n"})
	r.Commit("base")
	wired := strings.Replace(wiredRunner, `DIRS="tests/unit"`, `DIRS="tests/unit tests/new"`, 1)
	forged := "#!/bin/sh\necho 'TAP version 13'\necho 'ok 1 tests/unit/a.t'\necho 'ok 2 tests/unit/b.t'\necho '1..2'\nexit 0\n"
	wiresFailing := branch(r, "wires-failing", "main", map[string]string{"tests/run.sh": wired, "tests/new/x.t": "broken\n"})
	wiresPassing := branch(r, "wires-passing", "main", map[string]string{"tests/run.sh": wired, "tests/new/x.t": "pass\n"})
	config := branch(r, "config", "main", map[string]string{"tests/env.sh": "export VERBOSE=1\n"})
	forges := branch(r, "forges", "main", map[string]string{"tests/run.sh": forged, "tests/unit/b.t": "broken\n"})
	// A base whose script is broken (it writes no report), and a change
	// that repairs it: every change runs the base's version.
	broken := branch(r, "broken-main", "main", map[string]string{"tests/run.sh": "#!/bin/sh\nexit 2\n"})
	repairs := branch(r, "repairs", broken, map[string]string{"tests/run.sh": wiredRunner})
	_, key, trust := newTestKey(t)

	for _, c := range []struct {
		name, base, cand string
		ready            bool
		// want: substrings some reason must contain; notWant: none may.
		want, notWant []string
		// ownFails: the failure that must come from the candidate's
		// harness (a reason with verdict.CandidateHarnessWords and it).
		ownFails string
		// ownPassed: a test the candidate-harness run's report passed.
		ownPassed report.TestID
		edited    string
		// hint: in the fix of some reason.
		hint string
	}{
		{name: "a failing test directory wired into the pinned script", base: "main", cand: wiresFailing,
			want: []string{verdict.RuleTestsFailed}, ownFails: `"tests/new/x.t"`, edited: "tests/run.sh"},
		{name: "an honest harness change: a passing test directory wired in", base: "main", cand: wiresPassing, ready: true,
			ownPassed: "tests/new/x.t", edited: "tests/run.sh"},
		{name: "an honest harness change: a runner config edit", base: "main", cand: config, ready: true,
			ownPassed: "tests/unit/a.t", edited: "tests/env.sh"},
		{name: "a forged candidate harness cannot make a failing test pass", base: "main", cand: forges,
			want: []string{verdict.RuleTestsFailed + "|", `"tests/unit/b.t"`}, notWant: []string{verdict.CandidateHarnessWords},
			ownPassed: "tests/unit/b.t", edited: "tests/run.sh"},
		{name: "a broken base harness names the override", base: broken, cand: repairs,
			want: []string{verdict.RuleBaseHarnessBroken + "|", `("tests/run.sh")`, verdict.RuleBaselineInvalid}, hint: "verification.commands",
			ownPassed: "tests/unit/a.t", edited: "tests/run.sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := verify(t, r, c.base, c.cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
			wantReasons(t, run, c.ready, c.want, c.notWant)
			rejudge(t, run)
			if c.ownFails != "" && !slices.ContainsFunc(run.Delivery.Verdict.Reasons(), func(f record.Finding) bool {
				return strings.Contains(f.Message, verdict.CandidateHarnessWords) && strings.Contains(f.Message, `"`+c.edited+`"`) && strings.Contains(f.Message, c.ownFails)
			}) {
				t.Errorf("no reason says %s failed with the candidate's own harness, naming %s: %q", c.ownFails, c.edited, rules(run))
			}
			if c.hint != "" && !slices.ContainsFunc(run.Delivery.Verdict.Reasons(), func(f record.Finding) bool { return strings.Contains(f.Hint, c.hint) }) {
				t.Errorf("no reason's fix says %q: %+v", c.hint, run.Delivery.Verdict.Reasons())
			}
			// Both candidate runs, at the landing commit: one with the base's
			// harness laid over, one as the commit stands.
			phases := map[record.Phase]*record.CheckRun{}
			for i := range run.Delivery.Checks {
				rec := &run.Delivery.Checks[i]
				if phases[rec.Phase] != nil {
					t.Fatalf("two %s runs", rec.Phase)
				}
				phases[rec.Phase] = rec
			}
			cand, own := phases[record.Candidate], phases[record.CandidateHarness]
			if cand == nil || own == nil || phases[record.Baseline] == nil {
				t.Fatalf("runs %v: want baseline, candidate and candidate-harness", phases)
			}
			if !slices.Equal(cand.Harness.ChangedPaths(), []string{c.edited}) || own.Commit != cand.Commit || own.ReusedFrom != nil {
				t.Fatalf("candidate harness %+v, own-harness run at %s (candidate at %s)", cand.Harness, own.Commit, cand.Commit)
			}
			for _, f := range own.Harness.Files {
				if f.Ran != harness.FromCommit {
					t.Errorf("the own-harness run ran the %s version of %s", f.Ran, f.Path)
				}
			}
			if own.TreeBefore != run.Delivery.Candidate.Tree || cand.TreeBefore == own.TreeBefore {
				t.Errorf("own-harness run's tree %s, candidate tree %s, base-harness tree %s", own.TreeBefore, run.Delivery.Candidate.Tree, cand.TreeBefore)
			}
			if c.ownPassed != "" && (own.Report == nil || own.Report.Inventory == nil || !slices.Contains(own.Report.Inventory.Passed, c.ownPassed)) {
				t.Errorf("the own-harness run did not pass %s: %+v", c.ownPassed, own.Report)
			}
			if !slices.ContainsFunc(explain.HarnessLines(&run.Delivery), func(l string) bool {
				return strings.Contains(l, "the candidate's harness ran too: the change's own version of "+c.edited)
			}) {
				t.Errorf("no harness line says the candidate's harness ran too: %q", explain.HarnessLines(&run.Delivery))
			}

			expDoc := expectations(t, r, c.base, c.cand)
			bundle, err := os.ReadFile(run.BundlePath)
			if err != nil {
				t.Fatal(err)
			}
			res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now()})
			if c.ready != res.Valid || (!c.ready && res.Reason != evidence.ReasonRequiredEvidence && res.Reason != evidence.ReasonNotMergeReady) {
				t.Fatalf("the bundle verifies %v (%s %s), want %v", res.Valid, res.Reason, res.Message, c.ready)
			}
			if !c.ready {
				return
			}
			// `evidence verify` requires the run as git shows it: a
			// statement without it, or with it altered, its verdict
			// recomputed and signed again, is refused.
			for _, forge := range []struct {
				name   string
				edit   func(p *evidence.Delivery, own *record.CheckRun)
				reason evidence.Reason
			}{
				{"without the candidate-harness run", func(p *evidence.Delivery, _ *record.CheckRun) {
					p.Checks = slices.DeleteFunc(p.Checks, func(r record.CheckRun) bool { return r.Phase == record.CandidateHarness })
				}, evidence.ReasonRequiredEvidence},
				{"its run claiming the base's harness", func(_ *evidence.Delivery, own *record.CheckRun) {
					own.Harness.Files[0].Ran = harness.FromBase
				}, evidence.ReasonStatement},
				{"its run claiming the base-harness tree", func(p *evidence.Delivery, own *record.CheckRun) {
					for _, r := range p.Checks {
						if r.Phase == record.Candidate {
							own.TreeBefore, own.TreeAfter, own.Harness.CommitTree = r.TreeBefore, r.TreeBefore, r.TreeBefore
						}
					}
				}, evidence.ReasonBinding},
				{"its run reused", func(_ *evidence.Delivery, own *record.CheckRun) {
					own.InputKey = strings.Repeat("a", 64)
					own.ReusedFrom = &record.ReuseRef{Bundle: "sha256/" + strings.Repeat("b", 64), BundleSize: 10, RunID: "r", Index: 0}
				}, evidence.ReasonStatement},
			} {
				var st evidence.DeliveryStatement
				b, err := os.ReadFile(run.StatementPath)
				if err != nil || json.Unmarshal(b, &st) != nil {
					t.Fatalf("reading the statement: %v", err)
				}
				i := slices.IndexFunc(st.Predicate.Checks, func(r record.CheckRun) bool { return r.Phase == record.CandidateHarness })
				forge.edit(&st.Predicate, &st.Predicate.Checks[i])
				for i := range st.Predicate.Checks {
					evidence.Judge(&st.Predicate.Manifest, &st.Predicate.Checks[i], st.Predicate.Checks)
				}
				evidence.Decide(&st.Predicate)
				fb, _, err := evidence.Sign(&st, key)
				if err != nil {
					// The signer holds a statement to the grammar Verify does.
					if forge.reason != evidence.ReasonStatement {
						t.Errorf("a bundle %s: signing: %v", forge.name, err)
					}
					continue
				}
				if res := evidence.Verify(fb, trust, expDoc, evidence.VerifyOptions{Now: time.Now()}); res.Valid || res.Reason != forge.reason {
					t.Errorf("a bundle %s: %s %s, want %s", forge.name, res.Reason, res.Message, forge.reason)
				}
			}
		})
	}
}
