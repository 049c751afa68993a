package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// proofPolicy has three report checks: unit, which every change requires;
// migrations, which only a change under migrations/ triggers; and fixes,
// which fails at the base (its fixture arrives with the change). smoke has
// no report, so no baseline to prove.
const proofPolicy = `checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
  - id: migrations
    run: sh tests/run.sh > reports/migrations.tap
    report: {path: reports/migrations.tap, format: tap}
    paths: ["migrations/**"]
    timeout: 60s
  - id: fixes
    run: sh tests/run.sh > reports/fixes.tap; test -e fixtures/fixed
    report: {path: reports/fixes.tap, format: tap}
    timeout: 60s
  - id: smoke
    run: "true"
    required: false
    timeout: 60s
`

func runsOf(run *engine.Run) map[string]record.CheckRun {
	out := map[string]record.CheckRun{}
	for _, c := range run.Delivery.Checks {
		out[c.CheckID+" "+string(c.Phase)] = c
	}
	return out
}

// TestBaseProofReused (issue 26): a base proof runs the baseline of every
// report check at the base tip — the one a path rule gates too — and signs
// them in a statement that is no change's verdict; a later pull request
// against that commit reuses each passed one by input key, recording the
// proof as its source, and verifies offline; the baseline that failed at
// the base is not reused but run again. A proof of another commit, signed
// by an untrusted key, or made with another input, is not reused: the
// pull request runs its baselines and reaches the same verdict.
func TestBaseProofReused(t *testing.T) {
	k, other := newReuseKey(t), newReuseKey(t)
	r, base := shopRepo(t, proofPolicy)
	pr := func(from, name string) string {
		r.Checkout(from, false)
		r.Checkout(name, true)
		r.Write("migrations/"+name+".sql", "select 1;\n")
		r.Write("fixtures/fixed", "yes\n")
		r.Write("tests/"+name+".t", "x\n")
		return r.Commit(name)
	}
	cand := pr(base, "pr1")
	proofState := t.TempDir()
	var plog bytes.Buffer
	proof := verify(t, r, base, "", with(logTo(&plog), func(o *engine.VerifyOptions) {
		o.ProveBase, o.SigningKey, o.StateDir = true, k.key, proofState
	}))

	d := &proof.Delivery
	got := runsOf(proof)
	if !d.BaseProof || d.Candidate.Head != base || d.Candidate.Base != base || len(d.Checks) != 3 ||
		got["unit baseline"].Commit != base || got["migrations baseline"].Commit != base || got["fixes baseline"].Commit != base {
		t.Fatalf("the proof of %s: base_proof %v, head %s, runs %v; want the three report checks' baselines at the base", base, d.BaseProof, d.Candidate.Head, got)
	}
	if proof.MergeReady() || !hasRule(proof, verdict.RuleBaseProof) {
		t.Fatalf("a base proof's verdict: merge-ready %v, reasons %q", proof.MergeReady(), rules(proof))
	}
	if evidence.Reusable(ptr(got["unit baseline"])) != "" || evidence.Reusable(ptr(got["fixes baseline"])) == "" {
		t.Fatalf("unit reusable %q, fixes (failing at the base) reusable %q", evidence.Reusable(ptr(got["unit baseline"])), evidence.Reusable(ptr(got["fixes baseline"])))
	}
	proofBundle, err := os.ReadFile(proof.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.VerifySource(proofBundle, k.trust, time.Now()); err != nil {
		t.Fatalf("the proof does not verify as a source of reuse: %v", err)
	}
	// Never a change's verdict: not the base's own, not the change's.
	for _, head := range []string{base, cand} {
		res := evidence.Verify(proofBundle, k.trust, expectations(t, r, base, head), evidence.VerifyOptions{Now: time.Now(), AllowNotMergeReadyUnsafe: true})
		if res.Valid || res.Reason != evidence.ReasonBinding || !strings.Contains(res.Message, "base proof") {
			t.Fatalf("the proof verified as the verdict of %s..%s: valid %v, %s %s", base, head, res.Valid, res.Reason, res.Message)
		}
	}

	reusing := func(mods ...func(*engine.VerifyOptions)) func(*engine.VerifyOptions) {
		return with(append([]func(*engine.VerifyOptions){func(o *engine.VerifyOptions) {
			o.SigningKey, o.Reuse = k.key, []string{proofState}
		}}, mods...)...)
	}
	var log bytes.Buffer
	run := verify(t, r, base, cand, reusing(logTo(&log)))
	if !run.MergeReady() {
		t.Fatalf("the pull request against the proven base: not merge-ready:\n%s", strings.Join(rules(run), "\n"))
	}
	want := evidence.ArtifactAddress(digest.Hex(proofBundle))
	rr := runsOf(run)
	for _, id := range []string{"unit", "migrations"} {
		b := rr[id+" baseline"]
		if ref := b.ReusedFrom; ref == nil || !ref.Proof || ref.RunID != proof.ID || ref.Bundle != want || b.Commit != base {
			t.Fatalf("%s's baseline: reused_from %+v, want the proof %s (bundle %s) at %s\n%s", id, b.ReusedFrom, proof.ID, want, base, log.String())
		}
		if c := rr[id+" candidate"]; c.ReusedFrom != nil || !c.Started {
			t.Fatalf("%s's candidate was not executed: %+v", id, c)
		}
	}
	if !strings.Contains(log.String(), "unit (baseline): reused from the base proof "+proof.ID) {
		t.Errorf("the progress does not say the baseline came from the base proof:\n%s", log.String())
	}
	if b := rr["fixes baseline"]; b.ReusedFrom != nil || !b.Started {
		t.Fatalf("the baseline that failed at the base was reused: %+v", b)
	}
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", filepath.Join(run.Dir, "artifacts")} {
		if res := verifyOffline(t, r, base, cand, bundle, k.trust, dir); !res.Valid {
			t.Fatalf("the pull request's bundle does not verify offline (artifacts %q): %s %s", dir, res.Reason, res.Message)
		}
	}

	budget := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(budget, []byte("budgets:\n  max_output_bytes: 2097152\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Checkout(base, false)
	r.Write("README", "the base moved on\n")
	moved := r.Commit("main moves on")
	for _, tc := range []struct {
		name       string
		base, cand string
		mod        func(*engine.VerifyOptions)
	}{
		{"a proof of another commit", moved, pr(moved, "pr2"), nil},
		{"a proof of another key", base, cand, func(o *engine.VerifyOptions) { o.ReuseTrust = other.trust }},
		{"a proof made with another input (output cap)", base, cand, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = budget }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mods := []func(*engine.VerifyOptions){}
			if tc.mod != nil {
				mods = append(mods, tc.mod)
			}
			run := verify(t, r, tc.base, tc.cand, reusing(mods...))
			for _, c := range run.Delivery.Checks {
				if c.ReusedFrom != nil {
					t.Fatalf("%s (%s) reused from %+v", c.CheckID, c.Phase, c.ReusedFrom)
				}
			}
			if b := runsOf(run)["unit baseline"]; !b.Started || b.Commit != tc.base {
				t.Fatalf("unit's baseline was not run at %s: %+v", tc.base, b)
			}
			if !run.MergeReady() {
				t.Fatalf("a missed proof weakened the verdict:\n%s", strings.Join(rules(run), "\n"))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestProofOptionsRefused: a base proof that could never serve — unsigned,
// sharded, about a pull request on GitHub, with agent proposals or another
// candidate — is a usage error before anything runs.
func TestProofOptionsRefused(t *testing.T) {
	k := newReuseKey(t)
	for _, tc := range []struct {
		name string
		mod  func(o *engine.VerifyOptions)
		msg  string
	}{
		{"unsigned", func(o *engine.VerifyOptions) { o.SigningKey = nil }, "an unsigned base proof is never reused"},
		{"another candidate", func(o *engine.VerifyOptions) { o.Discover.Candidate = "other" }, "measures one commit"},
		{"sharded", func(o *engine.VerifyOptions) { o.Shard = &evidence.ShardSpec{Index: 1, Count: 2, VerificationID: "v"} }, "not sharded"},
		{"on GitHub", func(o *engine.VerifyOptions) { o.GitHub = &engine.GitHubOptions{} }, "consults no GitHub"},
		{"agent proposals", func(o *engine.VerifyOptions) { o.Discover.ProposalsFile = "-" }, "agent proposals add nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := engine.VerifyOptions{ProveBase: true, SigningKey: k.key, StateDir: t.TempDir(),
				Discover: engine.DiscoverOptions{RepoDir: t.TempDir(), Base: "main"}}
			tc.mod(&o)
			_, err := engine.Verify(t.Context(), o)
			if rmerr.CodeOf(err) != rmerr.Usage || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Verify = %v, want a usage error saying %q", err, tc.msg)
			}
		})
	}
}
