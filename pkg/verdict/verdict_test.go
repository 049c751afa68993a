package verdict_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

func goldenJSON(t *testing.T, got any) { golden.JSON(t, got) }

// Builders for records.

func local(id string) verdict.Requirement {
	return verdict.Requirement{CheckID: id, Required: true, Runnable: true, Sources: []string{"repository-policy"}}
}

func withReport(r verdict.Requirement) verdict.Requirement { r.Report = true; return r }

func optional(r verdict.Requirement) verdict.Requirement { r.Required = false; return r }

func remote(id string) verdict.Requirement {
	return verdict.Requirement{CheckID: id, Required: true, Remote: true, Sources: []string{"github"}}
}

func pass(id string) verdict.Result {
	return verdict.Result{CheckID: id, Phase: record.Candidate, Executor: record.Orchestrator,
		Started: true, Report: &verdict.ReportFacts{Passed: 3, ClaimedFailures: -1}}
}

func base(id string) verdict.Result { r := pass(id); r.Phase = record.Baseline; return r }

func with(r verdict.Result, f func(*verdict.Result)) verdict.Result { f(&r); return r }

var zeroTests = record.Finding{Rule: "outcome.zero-tests", Message: "the output reports zero tests", Line: 3, Hint: "check the path filters"}

func TestEvaluate(t *testing.T) {
	type tc struct {
		name  string
		in    verdict.Input
		ready bool
		// rules: every rule in Failed, Unproven and Failures, in order.
		rules []string
	}
	run := func(t *testing.T, c tc) {
		v := verdict.Evaluate(c.in)
		if v.MergeReady != (!v.AnyFailed && !v.LacksRequiredProof && len(v.Failures) == 0) {
			t.Fatalf("merge_ready %v contradicts the final rule: %+v", v.MergeReady, v)
		}
		if v.MergeReady != c.ready {
			t.Errorf("merge_ready = %v; want %v", v.MergeReady, c.ready)
		}
		if v.MergeReady && len(v.Reasons()) > 0 {
			t.Errorf("merge-ready with reasons %+v", v.Reasons())
		}
		rules := []string{}
		for _, f := range slices.Concat(v.Failed, v.Unproven, v.Failures) {
			rules = append(rules, f.Rule)
			if f.Hint == "" && f.Code != rmerr.CINeverScheduled {
				t.Errorf("finding %+v has no fix hint", f)
			}
		}
		if c.rules == nil {
			c.rules = []string{}
		}
		if !slices.Equal(rules, c.rules) {
			t.Errorf("rules = %q; want %q", rules, c.rules)
		}
		goldenJSON(t, v)
	}

	ten := func() verdict.Input {
		var in verdict.Input
		for i := range 10 {
			id := fmt.Sprintf("check-%02d", i)
			in.Requirements = append(in.Requirements, local(id))
			if i != 3 && i != 7 {
				in.Results = append(in.Results, pass(id))
			}
		}
		return in
	}

	for _, c := range []tc{
		{name: "all required checks ran and passed with proof", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("lint"), withReport(local("unit"))},
			Results:      []verdict.Result{pass("lint"), pass("unit"), base("unit")},
		}},
		{name: "ten checks two never executed", in: ten(),
			rules: []string{verdict.RuleNoResult, verdict.RuleNoResult}},
		{name: "agent results do not count", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.Executor = "agent" })},
		}, rules: []string{verdict.RuleNoResult}},
		{name: "an agent failure is telemetry only", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results: []verdict.Result{pass("unit"), with(pass("unit"), func(r *verdict.Result) {
				r.Executor, r.ExitCode = "agent", 1
			})},
		}},
		{name: "executor must be exactly orchestrator", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.Executor = "Orchestrator" })},
		}, rules: []string{verdict.RuleNoResult}},
		{name: "a failed result", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.ExitCode = 1 })},
		}, rules: []string{verdict.RuleCheckFailed}},
		{name: "passed with a non-zero exit code contradicts itself", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.ExitCode = 2 })},
		}, rules: []string{verdict.RuleCheckFailed}},
		{name: "a timeout is a failure", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.TimedOut, r.ExitCode = true, -1 })},
		}, rules: []string{verdict.RuleTimedOut}},
		{name: "the tree moved", in: verdict.Input{
			Requirements: []verdict.Requirement{local("fmt")},
			Results:      []verdict.Result{with(pass("fmt"), func(r *verdict.Result) { r.TreeMoved = true })},
		}, rules: []string{verdict.RuleTreeMoved}},
		{name: "a result carrying a finding did not pass", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results: []verdict.Result{with(pass("unit"), func(r *verdict.Result) {
				r.Report, r.Observations = nil, []record.Finding{zeroTests}
			})},
		}, rules: []string{"outcome.zero-tests", verdict.RuleUnproven}},
		{name: "unproven required coverage blocks by default", in: verdict.Input{
			Requirements: []verdict.Requirement{local("lint")},
			Results:      []verdict.Result{with(pass("lint"), func(r *verdict.Result) { r.Report = nil })},
		}, rules: []string{verdict.RuleUnproven}},
		{name: "fail_on_skipped_check false admits unproven coverage", ready: true, in: verdict.Input{
			AllowUnproven: true,
			Requirements:  []verdict.Requirement{local("lint")},
			Results:       []verdict.Result{with(pass("lint"), func(r *verdict.Result) { r.Report = nil })},
		}},
		{name: "fail_on_skipped_check false never turns a failure into a pass", in: verdict.Input{
			AllowUnproven: true,
			Requirements:  []verdict.Requirement{local("unit"), local("e2e")},
			Results: []verdict.Result{
				with(pass("unit"), func(r *verdict.Result) { r.Report, r.Observations = nil, []record.Finding{zeroTests} }),
				with(pass("e2e"), func(r *verdict.Result) { r.ExitCode, r.Report = 1, nil }),
			},
		}, rules: []string{verdict.RuleCheckFailed, "outcome.zero-tests"}},
		{name: "a declared report that is unproven fails the check even with the gate off", in: verdict.Input{
			AllowUnproven: true,
			Requirements:  []verdict.Requirement{withReport(local("unit"))},
			Results:       []verdict.Result{with(pass("unit"), func(r *verdict.Result) { r.Report = nil }), base("unit")},
		}, rules: []string{verdict.RuleReportUnproven}},
		{name: "an unproven non-required result does not need proof", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), optional(local("bench"))},
			Results:      []verdict.Result{pass("unit"), with(pass("bench"), func(r *verdict.Result) { r.Report = nil })},
		}},
		{name: "a non-required check that did not run is fine", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), optional(withReport(local("bench")))},
			Results:      []verdict.Result{pass("unit")},
		}},
		{name: "a non-required check that ran and failed still fails", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), optional(local("bench"))},
			Results:      []verdict.Result{pass("unit"), with(pass("bench"), func(r *verdict.Result) { r.ExitCode = 1 })},
		}, rules: []string{verdict.RuleCheckFailed}},
		{name: "required check with nothing runnable", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), {CheckID: "migrations", Required: true, Sources: []string{"changed-path"}}},
			Results:      []verdict.Result{pass("unit")},
		}, rules: []string{verdict.RuleNoRunnable}},
		{name: "remote success is coverage", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), remote("ci/build")},
			Results:      []verdict.Result{pass("unit")},
			Remote:       []record.RemoteResult{{Context: "ci/build", Conclusion: record.Success}},
		}},
		{name: "remote skipped and neutral are not coverage", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), remote("ci/a"), remote("ci/b")},
			Results:      []verdict.Result{pass("unit")},
			Remote: []record.RemoteResult{{Context: "ci/a", Conclusion: record.Skipped},
				{Context: "ci/b", Conclusion: record.Neutral}},
		}, rules: []string{verdict.RuleRemoteNotRun, verdict.RuleRemoteNotRun}},
		{name: "remote failing conclusions", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), remote("a"), remote("b"), remote("c"), remote("d"), remote("e"), remote("f")},
			Results:      []verdict.Result{pass("unit")},
			Remote: []record.RemoteResult{{Context: "a", Conclusion: record.Failure}, {Context: "b", Conclusion: record.Cancelled},
				{Context: "c", Conclusion: record.TimedOut}, {Context: "d", Conclusion: record.ActionRequired},
				{Context: "e", Conclusion: record.Stale}, {Context: "f", Conclusion: "startup_failure"}},
		}, rules: []string{verdict.RuleRemoteFailed, verdict.RuleRemoteFailed, verdict.RuleRemoteFailed,
			verdict.RuleRemoteFailed, verdict.RuleRemoteFailed, verdict.RuleRemoteFailed}},
		{name: "every remote result for a context is judged", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), remote("ci")},
			Results:      []verdict.Result{pass("unit")},
			Remote:       []record.RemoteResult{{Context: "ci", Conclusion: record.Success}, {Context: "ci", Conclusion: record.Failure}},
		}, rules: []string{verdict.RuleRemoteFailed}},
		{name: "required remote context with no result", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), remote("ci/build")},
			Results:      []verdict.Result{pass("unit")},
		}, rules: []string{verdict.RuleRemoteMissing}},
		{name: "required remote context still pending", in: verdict.Input{
			Requirements:    []verdict.Requirement{local("unit"), remote("ci/build")},
			Results:         []verdict.Result{pass("unit")},
			PendingContexts: []string{"ci/build"},
		}, rules: []string{verdict.RuleRemotePending}},
		{name: "never scheduled escalates with RM-CI-002 instead", in: verdict.Input{
			Requirements:    []verdict.Requirement{local("unit"), remote("ci/build")},
			Results:         []verdict.Result{pass("unit")},
			PendingContexts: []string{"ci/build"},
			Failures: []record.Finding{{Code: rmerr.CINeverScheduled, Check: "ci/build", Rule: "ci.never-scheduled",
				Message: "no run was scheduled within 10 minutes", Hint: "check the workflow trigger matches the branch"}},
		}, rules: []string{"ci.never-scheduled"}},
		{name: "a remote result for a context outside the manifest is ignored", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{pass("unit")},
			Remote:       []record.RemoteResult{{Context: "other", Conclusion: record.Failure}},
		}},
		{name: "a runnable check that is also a remote context needs both", in: verdict.Input{
			Requirements: []verdict.Requirement{{CheckID: "unit", Required: true, Runnable: true, Remote: true}},
			Remote:       []record.RemoteResult{{Context: "unit", Conclusion: record.Success}},
		}, rules: []string{verdict.RuleNoResult}},
		{name: "report check without a baseline", in: verdict.Input{
			Requirements: []verdict.Requirement{withReport(local("unit"))},
			Results:      []verdict.Result{pass("unit")},
		}, rules: []string{verdict.RuleNoBaseline}},
		{name: "failed baseline tests are allowed", ready: true, in: verdict.Input{
			Requirements: []verdict.Requirement{withReport(local("unit"))},
			Results:      []verdict.Result{pass("unit"), with(base("unit"), func(r *verdict.Result) { r.ExitCode = 1 })},
		}},
		{name: "invalid baseline evidence fails closed", in: verdict.Input{
			AllowUnproven: true,
			Requirements:  []verdict.Requirement{withReport(local("a")), withReport(local("b")), withReport(local("c")), withReport(local("d"))},
			Results: []verdict.Result{pass("a"), pass("b"), pass("c"), pass("d"),
				with(base("a"), func(r *verdict.Result) { r.TimedOut = true }),
				with(base("b"), func(r *verdict.Result) { r.TreeMoved = true }),
				with(base("c"), func(r *verdict.Result) { r.Report = nil }),
				with(base("d"), func(r *verdict.Result) { r.Observations = []record.Finding{zeroTests} }),
			},
		}, rules: []string{verdict.RuleTimedOut, verdict.RuleTreeMoved, verdict.RuleBaselineInvalid, "outcome.zero-tests"}},
		{name: "preservation findings keep their ids", in: verdict.Input{
			Requirements: []verdict.Requirement{withReport(local("unit"))},
			Results: []verdict.Result{base("unit"), with(pass("unit"), func(r *verdict.Result) {
				r.Observations = []record.Finding{{Code: rmerr.VerifySkipped, Rule: "outcome.preservation.skipped",
					Message: "2 tests that passed at the base are skipped at the candidate and not declared",
					IDs:     []report.TestID{"pkg::TestB", "pkg::TestA", "pkg::TestB"}, Hint: "declare them"}}
			})},
		}, rules: []string{"outcome.preservation.skipped"}},
		{name: "a result for a check outside the manifest", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{pass("unit"), pass("rm -rf")},
		}, rules: []string{verdict.RuleUnlistedCheck}},
		{name: "invalid records fail closed", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit"), local("lint"), {CheckID: ""}},
			Results: []verdict.Result{
				with(pass("unit"), func(r *verdict.Result) { r.Phase = "middle" }),
				with(pass("lint"), func(r *verdict.Result) { r.Phase = "post" }),
				with(pass(""), func(r *verdict.Result) {}),
			},
		}, rules: []string{verdict.RuleInvalidRecord, verdict.RuleInvalidRecord, verdict.RuleNoResult, verdict.RuleInvalidRecord,
			verdict.RuleNoResult, verdict.RuleInvalidRecord}},
		{name: "duplicate manifest entries", in: verdict.Input{
			Requirements: []verdict.Requirement{optional(local("unit")), withReport(local("unit"))},
			Results:      []verdict.Result{pass("unit")},
		}, rules: []string{verdict.RuleNoBaseline, verdict.RuleDuplicateCheck}},
		{name: "an empty manifest verifies nothing", in: verdict.Input{}, rules: []string{verdict.RuleEmptyManifest}},
		{name: "caller failures count", in: verdict.Input{
			Requirements: []verdict.Requirement{local("unit")},
			Results:      []verdict.Result{pass("unit")},
			Failures: []record.Finding{{Code: rmerr.VerifyDependencies, Rule: "deps.stale", Message: "package-lock.json changed",
				Hint: "run npm ci in the source checkout"}},
		}, rules: []string{"deps.stale"}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// TestEvaluateIsDeterministic: issue 5 recomputes the verdict from signed
// records and compares for equality, so input order must not matter and the
// JSON must round-trip to an equal value.
func TestEvaluateIsDeterministic(t *testing.T) {
	in := verdict.Input{
		Requirements: []verdict.Requirement{local("a"), local("b"), withReport(local("c")), remote("r1"), remote("r2"), local("never"),
			{CheckID: "nothing", Required: true}},
		Results: []verdict.Result{
			pass("a"),
			with(pass("b"), func(r *verdict.Result) {
				r.Observations = []record.Finding{zeroTests, {Rule: "outcome.focused", Message: "it.only", File: "x.test.js", Line: 2, Hint: "h"},
					{Code: rmerr.VerifySkipped, Rule: "outcome.preservation.missing", IDs: []report.TestID{"z", "y"}, Message: "m", Hint: "h"}}
			}),
			with(pass("c"), func(r *verdict.Result) { r.Report = nil }),
			with(base("c"), func(r *verdict.Result) { r.TimedOut = true }),
			with(pass("a"), func(r *verdict.Result) { r.Executor = "agent"; r.ExitCode = 1 }),
			with(pass("b"), func(r *verdict.Result) { r.Executor = "agent" }),
		},
		Remote:          []record.RemoteResult{{Context: "r1", Conclusion: record.Skipped}, {Context: "r1", Conclusion: record.Failure}, {Context: "zz", Conclusion: record.Success}},
		PendingContexts: []string{"r2"},
	}
	want, err := json.Marshal(verdict.Evaluate(in))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		p := in
		p.Requirements = shuffled(rng, in.Requirements)
		p.Results = shuffled(rng, in.Results)
		p.Remote = shuffled(rng, in.Remote)
		for i := range p.Results {
			p.Results[i].Observations = shuffled(rng, p.Results[i].Observations)
		}
		got, _ := json.Marshal(verdict.Evaluate(p))
		if !bytes.Equal(got, want) {
			t.Fatalf("order changed the verdict:\n%s\n%s", got, want)
		}
	}

	v := verdict.Evaluate(in)
	var back verdict.Verdict
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Fatalf("JSON round trip changed the verdict:\n%+v\n%+v", back, v)
	}
	// Field names are part of the record format.
	for _, name := range []string{`"merge_ready"`, `"any_failed"`, `"lacks_required_proof"`, `"fail_on_skipped_check"`,
		`"failed"`, `"unproven"`, `"failures"`, `"notes"`, `"rule"`, `"check"`, `"ids"`} {
		if !strings.Contains(string(want), name) {
			t.Errorf("verdict JSON lacks %s", name)
		}
	}

	// Evaluate must not modify its input (the records are signed).
	before, _ := json.Marshal(in)
	verdict.Evaluate(in)
	after, _ := json.Marshal(in)
	if !bytes.Equal(before, after) {
		t.Fatal("Evaluate modified its input")
	}
}

func shuffled[T any](rng *rand.Rand, s []T) []T {
	out := slices.Clone(s)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func TestFindingErr(t *testing.T) {
	f := record.Finding{Code: rmerr.VerifySkipped, Check: "unit", Rule: "outcome.preservation.missing",
		Message: "2 tests missing", IDs: []report.TestID{"a", `b "q"`}, Hint: "restore them"}
	e := f.Err()
	if rmerr.CodeOf(e) != rmerr.VerifySkipped {
		t.Fatalf("code %q", rmerr.CodeOf(e))
	}
	want := `RM-VERIFY-003: check "unit": 2 tests missing ["a", "b \"q\""] (fix: restore them)`
	if e.Error() != want {
		t.Fatalf("got  %s\nwant %s", e.Error(), want)
	}
}

func TestNormalize(t *testing.T) {
	in := []record.Finding{
		{Check: "b", Rule: "r", Message: "m"},
		{Check: "a", Rule: "r", Message: "m", IDs: []report.TestID{"y", "x", "y"}},
		{Check: "b", Rule: "r", Message: "m"},
	}
	orig := slices.Clone(in[1].IDs)
	got := record.Normalize(in)
	if len(got) != 2 || got[0].Check != "a" || !slices.Equal(got[0].IDs, []report.TestID{"x", "y"}) {
		t.Fatalf("got %+v", got)
	}
	if !slices.Equal(in[1].IDs, orig) {
		t.Fatal("Normalize modified its input")
	}
	if record.Normalize(nil) == nil {
		t.Fatal("Normalize(nil) is nil; want an empty slice for stable JSON")
	}
}
