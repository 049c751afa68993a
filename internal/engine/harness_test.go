package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 19: a check's harness (the script its command runs, the files its
// policy lists under harness:) is read from the base, so a change cannot
// rewrite how it is tested.

// suiteScript runs every tests/unit and tests/slow file as one TAP point: a
// file holding "pass" passes. tests/env.sh (a harness: entry) may set
// SKIP_SLOW, which reports the slow tests skipped without running them.
const suiteScript = `#!/bin/sh
[ -f tests/env.sh ] && . ./tests/env.sh
i=0
echo "TAP version 13"
for d in tests/unit tests/slow; do
  for f in $d/*.t; do
    [ -e "$f" ] || continue
    i=$((i+1))
    if [ "$d" = tests/slow ] && [ -n "$SKIP_SLOW" ]; then echo "ok $i $f # SKIP slow"; continue; fi
    if [ "$(cat "$f")" = pass ]; then echo "ok $i $f"; else echo "not ok $i $f"; fi
  done
done
echo "1..$i"
`

// forgedScript lists every test of the base as passed, running nothing.
const forgedScript = `#!/bin/sh
echo "TAP version 13"
echo "ok 1 tests/unit/a.t"
echo "ok 2 tests/unit/b.t"
echo "ok 3 tests/slow/c.t"
echo "1..3"
`

const suitePolicy = `checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    harness: [tests/env.sh]
    timeout: 60s
`

func suiteBase() files {
	return files{".runmill/checks.yaml": suitePolicy, "tests/run.sh": suiteScript, "tests/env.sh": "# settings for the suite\n",
		"tests/unit/a.t": "pass\n", "tests/unit/b.t": "pass\n", "tests/slow/c.t": "pass\n"}
}

type harnessCase struct {
	name  string
	base  files
	cand  files
	ready bool
	// want: substrings some reason must contain; notWant: none may.
	want, notWant []string
	// ran: per harness path, whose version the candidate run must record.
	ran map[string]harness.Source
	// note: a substring some candidate run note must contain.
	note string
}

func TestHarnessIsReadFromTheBase(t *testing.T) {
	dropSlow := strings.Replace(suiteScript, "tests/unit tests/slow", "tests/unit", 1)
	for _, c := range []harnessCase{
		{name: "a rewritten script that forges the report",
			base: suiteBase(), cand: files{"tests/run.sh": forgedScript, "tests/slow/c.t": "broken\n"},
			// The base's script ran the real tests: the broken one fails,
			// as a failure, not as a missing id.
			ready: false, want: []string{verdict.RuleTestsFailed, "tests/slow/c.t"}, notWant: []string{outcome.RuleMissing},
			ran:  map[string]harness.Source{"tests/run.sh": harness.FromBase, "tests/env.sh": harness.FromBase},
			note: "harness changed in this change: ran the base's version of tests/run.sh"},
		{name: "a script that drops a test directory",
			base: suiteBase(), cand: files{"tests/run.sh": dropSlow, "tests/slow/c.t": "broken\n"},
			ready: false, want: []string{verdict.RuleTestsFailed, "tests/slow/c.t"}, notWant: []string{outcome.RuleMissing},
			ran:  map[string]harness.Source{"tests/run.sh": harness.FromBase},
			note: "harness changed in this change: ran the base's version of tests/run.sh"},
		{name: "an environment variable that skips the slow tests",
			base: suiteBase(), cand: files{"tests/env.sh": "export SKIP_SLOW=1\n", "tests/slow/c.t": "broken\n"},
			ready: false, want: []string{verdict.RuleTestsFailed, "tests/slow/c.t"}, notWant: []string{outcome.RuleSkipped},
			ran:  map[string]harness.Source{"tests/env.sh": harness.FromBase, "tests/run.sh": harness.FromBase},
			note: "harness changed in this change: ran the base's version of tests/env.sh"},
		{name: "a harness change that fails under its own version",
			// The candidate's script fails every test (it expects "ok");
			// the base's passes them: the base's version ran, and the
			// candidate's ran too and fails the change (issue 25).
			base: suiteBase(), cand: files{"tests/run.sh": strings.Replace(suiteScript, `= pass ]`, `= ok ]`, 1), "tests/unit/d.t": "pass\n"},
			ready: false, want: []string{verdict.CandidateHarnessWords}, notWant: []string{outcome.RuleMissing},
			ran:  map[string]harness.Source{"tests/run.sh": harness.FromBase},
			note: "harness changed in this change: ran the base's version of tests/run.sh"},
		{name: "an honest change to the harness and the code together",
			base: suiteBase(), cand: files{"tests/run.sh": strings.Replace(suiteScript, `= pass ]`, `= "pass" ]`, 1), "tests/unit/d.t": "pass\n"},
			ready: true,
			ran:   map[string]harness.Source{"tests/run.sh": harness.FromBase},
			note:  "harness changed in this change: ran the base's version of tests/run.sh"},
		{name: "an unchanged harness",
			base: suiteBase(), cand: files{"tests/unit/d.t": "pass\n"}, ready: true,
			ran: map[string]harness.Source{"tests/run.sh": harness.FromBase, "tests/env.sh": harness.FromBase}},
		{name: "a harness new in the change is kept out: the base's absence ran",
			// Issue 25: the base has no lint script, so the base's harness
			// runs none: the check fails as it does at the base (a base
			// whose own check is broken).
			base: files{".runmill/checks.yaml": suitePolicy + "  - id: lint\n    run: ./scripts/lint.sh\n    required: false\n    harness: [\"lint/*.conf\"]\n",
				"tests/run.sh": suiteScript, "tests/env.sh": "\n", "tests/unit/a.t": "pass\n"},
			cand:  files{"scripts/lint.sh": "#!/bin/sh\ncat lint/rules.conf\n", "lint/rules.conf": "strict\n"},
			ready: false, want: []string{verdict.RuleCheckFailed, "lint"},
			ran:  map[string]harness.Source{"scripts/lint.sh": harness.FromBase, "lint/rules.conf": harness.FromBase},
			note: "harness new in the change (not at the base): ran without lint/rules.conf, scripts/lint.sh, as the base has none"},
	} {
		t.Run(c.name, func(t *testing.T) { runHarnessCase(t, c) })
	}
}

// TestNewPolicyPinsNothing: a policy new in the change has no prior
// contract; its harness is the candidate's, and the record says why.
func TestNewPolicyPinsNothing(t *testing.T) {
	base := suiteBase()
	delete(base, ".runmill/checks.yaml")
	runHarnessCase(t, harnessCase{base: base, cand: files{".runmill/checks.yaml": suitePolicy, "tests/run.sh": forgedScript},
		ready: true, ran: map[string]harness.Source{"tests/run.sh": harness.FromCommit, "tests/env.sh": harness.FromCommit},
		note: "harness not pinned: " + harness.ReasonPolicyNew})
}

func runHarnessCase(t *testing.T, c harnessCase) {
	t.Helper()
	_, key, trust := newTestKey(t)
	r := gittest.New(t)
	executable := func(fs files) {
		for p, content := range fs {
			if strings.HasSuffix(p, ".sh") && content != "" {
				if err := os.Chmod(filepath.Join(r.Dir, p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	apply(r, c.base)
	executable(c.base)
	base := r.Commit("base")
	r.Checkout("candidate", true)
	apply(r, c.cand)
	executable(c.cand)
	cand := r.Commit("candidate")
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
	wantReasons(t, run, c.ready, c.want, c.notWant)
	var notes []string
	ran := map[string]harness.Source{}
	for _, rec := range run.Delivery.Checks {
		if rec.Harness == nil {
			t.Fatalf("%s (%s) records no harness", rec.CheckID, rec.Phase)
		}
		if rec.Phase != record.Candidate {
			continue
		}
		notes = append(notes, rec.Notes...)
		for _, f := range rec.Harness.Files {
			ran[f.Path] = f.Ran
		}
		// The tree as run differs from the commit's exactly when the base's
		// version of some harness file was laid over it.
		if laid := len(rec.Harness.Overlay()) > 0; laid != (rec.TreeBefore != rec.Harness.CommitTree) {
			t.Errorf("%s: overlay %v, tree as run %s, commit tree %s", rec.CheckID, rec.Harness.Overlay(), rec.TreeBefore, rec.Harness.CommitTree)
		}
		if rec.Harness.CommitTree != run.Delivery.Candidate.Tree {
			t.Errorf("%s: commit tree %s, candidate tree %s", rec.CheckID, rec.Harness.CommitTree, run.Delivery.Candidate.Tree)
		}
	}
	for p, want := range c.ran {
		if ran[p] != want {
			t.Errorf("%s ran the %q version, want %q (all: %v)", p, ran[p], want, ran)
		}
	}
	if c.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, c.note) }) {
		t.Errorf("no note says %q; notes: %q", c.note, notes)
	}
	if c.note == "" && slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "harness") }) {
		t.Errorf("a harness note for a change that did not touch its harness: %q", notes)
	}
	rejudge(t, run)

	// Offline: `evidence expect` derives the same harness from git, and the
	// bundle verifies against it (a not-merge-ready one up to that step).
	expDoc := expectations(t, r, base, cand)
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now()})
	if c.ready && !res.Valid {
		t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
	}
	// Not merge-ready: authentic, bound and consistent, refused only for
	// what it says.
	if !c.ready && (res.Valid || (res.Reason != evidence.ReasonRequiredEvidence && res.Reason != evidence.ReasonNotMergeReady)) {
		t.Fatalf("a not-merge-ready bundle: %s %s, want %s or %s", res.Reason, res.Message, evidence.ReasonRequiredEvidence, evidence.ReasonNotMergeReady)
	}

	// The terminal statement saw every checkout gone, the ones that
	// measured a commit's own tree beside a pinned run's included.
	texp, err := engine.ExpectTerminal(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}})
	if err != nil {
		t.Fatal(err)
	}
	texpDoc, _ := texp.Encode()
	term, err := os.ReadFile(run.TerminalPath)
	if err != nil {
		t.Fatal(err)
	}
	if res := evidence.Verify(term, trust, texpDoc, evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
		t.Fatalf("the terminal bundle does not verify: %s %s", res.Reason, res.Message)
	}

	// A statement that claims the candidate's harness ran where git says
	// the base's did (or the other way round) is refused at the binding.
	var st evidence.DeliveryStatement
	b, err := os.ReadFile(run.StatementPath)
	if err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("reading the statement: %v", err)
	}
	forged := false
	for i := range st.Predicate.Checks {
		h := st.Predicate.Checks[i].Harness
		for j := range h.Files {
			if h.Pinned && h.Files[j].Base != nil && st.Predicate.Checks[i].Phase == record.Candidate {
				h.Files[j].Base.Blob = strings.Repeat("0", len(h.Files[j].Base.Blob))
				forged = true
			}
		}
	}
	if !forged {
		return
	}
	fb, _, err := evidence.Sign(&st, key)
	if err != nil {
		t.Fatal(err)
	}
	if res := evidence.Verify(fb, trust, expDoc, evidence.VerifyOptions{Now: time.Now()}); res.Valid || res.Reason != evidence.ReasonBinding {
		t.Fatalf("a forged harness record: %s %s, want %s", res.Reason, res.Message, evidence.ReasonBinding)
	}
}
