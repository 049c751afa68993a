package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Four report checks over three shards: one shard runs two, so the
// assignment, the ordering of the merged runs and the coverage pass are all
// exercised.
const shardPolicy = `checks:
  - id: alpha
    run: sh tests/run.sh > reports/alpha.tap
    report: {path: reports/alpha.tap, format: tap}
  - id: bravo
    run: sh tests/run.sh > reports/bravo.tap
    report: {path: reports/bravo.tap, format: tap}
  - id: charlie
    run: sh tests/run.sh > reports/charlie.tap
    report: {path: reports/charlie.tap, format: tap}
  - id: delta
    run: sh tests/run.sh > reports/delta.tap
    report: {path: reports/delta.tap, format: tap}
`

// shardKeys is one trusted key (signing shards and merges) and one the trust
// document does not name.
type shardKeys struct {
	keyFile  string
	key      *evidence.SigningKey
	trust    []byte
	stranger *evidence.SigningKey
}

func newShardKeys(t *testing.T) shardKeys {
	t.Helper()
	keyPEM, key, trust := newTestKey(t)
	_, other, _ := newTestKey(t)
	f := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(f, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return shardKeys{keyFile: f, key: key, trust: trust, stranger: other}
}

// runShard runs `runmill verify --shard K/N` as its own process (the real
// binary, runmillCLI) and returns the shard bundle's path.
// id is the verification id every shard of one verification shares.
func runShard(t *testing.T, out string, r *gittest.Repo, base, cand string, k, n int, id, keyFile string) string {
	t.Helper()
	cmd := exec.Command(runmillCLI(t), "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", out,
		"--signing-key", keyFile, "--containerd-address", containerdAddress, "--no-github", "--json",
		"--shard", strconv.Itoa(k)+"/"+strconv.Itoa(n), "--verification-id", id)
	cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=") // the id is the flag's, not a workflow run's
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shard %d/%d: %v\n%s", k, n, err, stderr.String())
	}
	var rec struct {
		Bundle string `json:"bundle"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rec); err != nil || rec.Bundle == "" {
		t.Fatalf("shard %d/%d printed no bundle: %v\n%s", k, n, err, stdout.String())
	}
	return rec.Bundle
}

func merge(t *testing.T, keys shardKeys, paths []string, mod func(*engine.MergeOptions)) (*engine.Run, error) {
	t.Helper()
	o := engine.MergeOptions{Trust: keys.trust, StateDir: t.TempDir(), SigningKey: keys.key, Version: "test"}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		o.Shards = append(o.Shards, engine.ShardBundle{Name: p, Bytes: b})
		o.ArtifactDirs = append(o.ArtifactDirs, filepath.Join(filepath.Dir(p), "artifacts"))
	}
	if mod != nil {
		mod(&o)
	}
	return engine.Merge(context.Background(), o)
}

// runFacts are the parts of a check run that do not depend on when or where
// it ran: what the two verifications must agree on.
type runFacts struct {
	Check, Phase, Commit, TreeBefore, TreeAfter, Stdout string
	Exit                                                int
	Status                                              record.Status
	Coverage                                            record.Coverage
	Inventory                                           *record.Inventory
	Findings                                            []record.Finding
}

func factsOf(d *evidence.Delivery) []runFacts {
	var out []runFacts
	for _, r := range d.Checks {
		f := runFacts{Check: r.CheckID, Phase: string(r.Phase), Commit: r.Commit, TreeBefore: r.TreeBefore, TreeAfter: r.TreeAfter,
			Stdout: r.Stdout.SHA256, Exit: r.ExitCode, Status: r.Status, Coverage: r.Coverage, Findings: r.Findings}
		if r.Report != nil {
			f.Inventory = r.Report.Inventory
		}
		out = append(out, f)
	}
	return out
}

func TestShardedEqualsUnsharded(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	keys := newShardKeys(t)
	r, base := shopRepo(t, shardPolicy)
	r.Checkout("ready", true)
	r.Write("tests/discount.t", "x\n")
	ready := r.Commit("adds a test")
	r.Checkout("main", false)
	r.Checkout("broken", true)
	r.Remove("tests/zero_qty.t")
	broken := r.Commit("deletes a test")

	shardsOf := map[string][]string{}
	var wholeReady *engine.Run // its state dir holds baselines a later verification may reuse
	parent := t                // shard evidence outlives the subtests: the refusals below reuse it
	for _, tc := range []struct {
		name  string
		cand  string
		ready bool
	}{{"merge-ready", ready, true}, {"not merge-ready", broken, false}} {
		t.Run(tc.name, func(t *testing.T) {
			whole := verify(t, r, base, tc.cand, func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir = keys.key, parent.TempDir() })
			if tc.ready {
				wholeReady = whole
			}
			var paths []string
			for k := 1; k <= 3; k++ {
				paths = append(paths, runShard(t, parent.TempDir(), r, base, tc.cand, k, 3, "run-of-"+tc.cand[:12], keys.keyFile))
			}
			shardsOf[tc.cand] = paths
			merged, err := merge(t, keys, paths, nil)
			if err != nil {
				t.Fatalf("merge: %v", err)
			}
			if merged.MergeReady() != tc.ready || whole.MergeReady() != tc.ready {
				t.Fatalf("merged %v, unsharded %v, want %v; merged reasons:\n%s", merged.MergeReady(), whole.MergeReady(), tc.ready, strings.Join(rules(merged), "\n"))
			}
			if got, want := rules(merged), rules(whole); !reflect.DeepEqual(got, want) {
				t.Errorf("merged reasons differ from the unsharded run's:\n got %q\nwant %q", got, want)
			}
			if got, want := factsOf(&merged.Delivery), factsOf(&whole.Delivery); !reflect.DeepEqual(got, want) {
				t.Errorf("merged check runs differ from the unsharded run's:\n got %+v\nwant %+v", got, want)
			}
			if merged.TerminalPath == "" {
				t.Error("the merge wrote no terminal statement")
			} else {
				texp, err := engine.ExpectTerminal(context.Background(), engine.ExpectOptions{
					Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: tc.cand}})
				if err != nil {
					t.Fatal(err)
				}
				texpDoc, _ := texp.Encode()
				term, _ := os.ReadFile(merged.TerminalPath)
				if res := evidence.Verify(term, keys.trust, texpDoc, evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
					t.Errorf("the merge's terminal bundle does not verify: %s %s", res.Reason, res.Message)
				}
			}
			if len(merged.Delivery.Shards) != 3 {
				t.Errorf("merged statement records %d shards, want 3", len(merged.Delivery.Shards))
			}
			// The merged bundle verifies like any other, its artifacts —
			// the shard bundles included — re-hashed.
			exp, err := engine.Expect(context.Background(), engine.ExpectOptions{
				Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: tc.cand}, StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			expDoc, _ := exp.Encode()
			bundle, err := os.ReadFile(merged.BundlePath)
			if err != nil {
				t.Fatal(err)
			}
			res := evidence.Verify(bundle, keys.trust, expDoc, evidence.VerifyOptions{Now: time.Now(),
				ArtifactsDir: filepath.Join(merged.Dir, "artifacts")})
			if !tc.ready {
				// Authentic and consistent (signature, bindings, records
				// passed), and refused for the evidence it lacks.
				if res.Valid || res.Reason != evidence.ReasonRequiredEvidence {
					t.Fatalf("the merged not-merge-ready bundle: %+v", res)
				}
				return
			}
			if !res.Valid {
				t.Fatalf("the merged bundle does not verify: %s %s", res.Reason, res.Message)
			}
			if res.Artifacts == nil || res.Artifacts.Count < 3 { // the shard bundles at least
				t.Errorf("artifacts re-hashed: %+v", res.Artifacts)
			}
		})
	}
	paths := shardsOf[ready]
	if len(paths) != 3 || len(shardsOf[broken]) != 3 {
		t.Fatal("the sharded runs did not all complete")
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	writeTemp := func(b []byte) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "shard.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// statementOf decodes shard bundle p's statement, unverified.
	statementOf := func(p string) evidence.ShardStatement {
		payload, err := evidence.PayloadUnverifiedUnsafe(read(p))
		if err != nil {
			t.Fatal(err)
		}
		var st evidence.ShardStatement
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// resign re-signs shard p's statement after mod, with key.
	resign := func(p string, key *evidence.SigningKey, mod func(*evidence.ShardStatement)) string {
		st := statementOf(p)
		mod(&st)
		b, _, err := evidence.Sign(&st, key)
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(b)
	}
	// Another verification of the ready candidate, sharded in the state
	// dir of the unsharded one: every shard reuses its baselines, and the
	// merge copies each reused record's source bundle, so the merged
	// bundle re-verifies offline with --artifacts-dir.
	var reused []string
	t.Run("baselines reused", func(t *testing.T) {
		if wholeReady == nil {
			t.Fatal("the merge-ready run did not complete")
		}
		state := filepath.Dir(filepath.Dir(wholeReady.Dir)) // STATE/runs/<id>
		for k := 1; k <= 3; k++ {
			run := verify(t, r, base, ready, func(o *engine.VerifyOptions) {
				o.SigningKey, o.StateDir = keys.key, state
				o.Shard = &evidence.ShardSpec{Index: k, Count: 3, VerificationID: "rerun-of-" + ready[:12]}
			})
			for _, c := range run.Delivery.Checks {
				if c.Phase == record.Baseline && c.ReusedFrom == nil {
					t.Fatalf("shard %d/3 executed the baseline of %s again: nothing to prove", k, c.CheckID)
				}
			}
			reused = append(reused, run.BundlePath)
		}
		merged, err := merge(t, keys, reused, nil)
		if err != nil {
			t.Fatalf("merge: %v", err)
		}
		if !merged.MergeReady() {
			t.Fatalf("not merge-ready:\n%s", strings.Join(rules(merged), "\n"))
		}
		if got, want := factsOf(&merged.Delivery), factsOf(&wholeReady.Delivery); !reflect.DeepEqual(got, want) {
			t.Errorf("merged check runs differ from the unsharded run's:\n got %+v\nwant %+v", got, want)
		}
		bundle, err := os.ReadFile(merged.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		if res := verifyOffline(t, r, base, ready, bundle, keys.trust, filepath.Join(merged.Dir, "artifacts")); !res.Valid {
			t.Fatalf("the merged bundle of reused baselines does not verify with --artifacts-dir: %s %s", res.Reason, res.Message)
		}
	})

	if len(reused) != 3 {
		t.Fatal("the sharded runs reusing baselines did not all complete")
	}
	// The same through the CLI, as a workflow's merge job runs it (the real
	// binary): evidence merge of the shards that reused baselines, then
	// evidence verify --artifacts-dir of its bundle, which re-verifies each
	// reused record against its source bundle — and fails once one is
	// gone. A merge mixing in a shard of another run of the same candidate
	// is refused, naming both shards' files and ids, and the fix.
	t.Run("through the CLI", func(t *testing.T) {
		dir := t.TempDir()
		trust, exp := filepath.Join(dir, "trust.json"), filepath.Join(dir, "expectations.json")
		if err := os.WriteFile(trust, keys.trust, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(exp, expectations(t, r, base, ready), 0o644); err != nil {
			t.Fatal(err)
		}
		cli := func(args ...string) (int, string, string) {
			t.Helper()
			cmd := exec.Command(runmillCLI(t), args...)
			cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=", "RUNMILL_SIGNING_KEY=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("runmill %s: %v", strings.Join(args, " "), err)
			}
			return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
		}
		mergeArgs := func(shards ...string) []string {
			return append(append([]string{"evidence", "merge"}, shards...), "--trust", trust, "--signing-key", keys.keyFile,
				"--out", t.TempDir(), "--no-github", "--json")
		}
		code, stdout, stderr := cli(mergeArgs(reused...)...)
		var rec struct {
			Bundle string `json:"bundle"`
		}
		if err := json.Unmarshal([]byte(stdout), &rec); code != 0 || err != nil || rec.Bundle == "" {
			t.Fatalf("evidence merge: exit %d, %v; stdout %s\nstderr:\n%s", code, err, stdout, stderr)
		}
		store := filepath.Join(filepath.Dir(rec.Bundle), "artifacts")
		verifyArgs := []string{"evidence", "verify", rec.Bundle, "--trust", trust, "--expectations", exp, "--artifacts-dir", store}
		if code, stdout, stderr := cli(verifyArgs...); code != 0 {
			t.Fatalf("evidence verify --artifacts-dir of the merged bundle: exit %d\n%s%s", code, stdout, stderr)
		}
		var sources []string
		for _, p := range reused {
			for _, c := range statementOf(p).Predicate.Checks {
				if c.ReusedFrom != nil && !slices.Contains(sources, c.ReusedFrom.Bundle) {
					sources = append(sources, c.ReusedFrom.Bundle)
				}
			}
		}
		if len(sources) == 0 {
			t.Fatal("no shard reused a baseline")
		}
		src, ok := evidence.ArtifactPath(store, sources[0])
		if !ok {
			t.Fatalf("source bundle address %q", sources[0])
		}
		if err := os.Remove(src); err != nil {
			t.Fatalf("the merge did not store the reused baselines' source bundle %s: %v", sources[0], err)
		}
		if code, stdout, stderr := cli(verifyArgs...); code == 0 || !strings.Contains(stdout+stderr, sources[0]) {
			t.Fatalf("evidence verify --artifacts-dir without the source bundle: exit %d, want a refusal naming %s\n%s%s", code, sources[0], stdout, stderr)
		}

		code, stdout, stderr = cli(mergeArgs(paths[0], paths[1], reused[2])...)
		for _, want := range []string{string(rmerr.EvidenceShard),
			`shard 3/3 (` + reused[2] + `) is of verification "rerun-of-` + ready[:12] + `"`,
			`shard 1/3 (` + paths[0] + `) of verification "run-of-` + ready[:12] + `"`,
			"every shard job of a verification is given the same --verification-id"} {
			if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
				t.Fatalf("merging shards of two runs: exit %d, want 1 naming %q; stdout %q\nstderr:\n%s", code, want, stdout, stderr)
			}
		}
	})
	tampered := read(paths[1])
	i := bytes.Index(tampered, []byte(`"payload": "`)) + len(`"payload": "`) + 40
	if tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}

	for _, tc := range []struct {
		name   string
		paths  []string
		mod    func(*engine.MergeOptions)
		code   rmerr.Code // a refusal
		rule   string     // or a not-merge-ready verdict naming this
		substr string
	}{
		{name: "missing shard", paths: paths[:2], rule: evidence.RuleShardMissing, substr: "shard 3 of 3"},
		{name: "duplicated shard", paths: []string{paths[0], paths[1], paths[1], paths[2]}, code: rmerr.EvidenceShard, substr: "given twice"},
		{name: "shard of another candidate", paths: []string{paths[0], paths[1], shardsOf[broken][2]}, code: rmerr.EvidenceShard, substr: broken},
		{name: "shard of another run of the same candidate", paths: []string{paths[0], paths[1], reused[2]}, code: rmerr.EvidenceShard,
			substr: `shard 3/3 (` + reused[2] + `) is of verification "rerun-of-` + ready[:12] + `", shard 1/3 (` + paths[0] + `) of verification "run-of-` + ready[:12] + `"`},
		{name: "shard with another manifest digest", paths: []string{paths[0], paths[1], resign(paths[2], keys.key, func(st *evidence.ShardStatement) {
			st.Predicate.Manifest.FailOnSkippedCheck = !st.Predicate.Manifest.FailOnSkippedCheck
			st.Predicate.ManifestDigest = evidence.ManifestDigest(&st.Predicate.Manifest)
		})}, code: rmerr.EvidenceShard, substr: "manifest"},
		{name: "tampered shard", paths: []string{paths[0], writeTemp(tampered), paths[2]}, code: rmerr.EvidenceSignature, substr: "signature"},
		{name: "shard signed by an untrusted key", paths: []string{paths[0], paths[1], resign(paths[2], keys.stranger, func(*evidence.ShardStatement) {})},
			code: rmerr.EvidenceSignature, substr: "no trusted key"},
		{name: "a shard job that was cancelled", paths: paths, mod: func(o *engine.MergeOptions) {
			o.JobResults = map[string]string{"shard": "cancelled"}
		}, rule: evidence.RuleShardJob, substr: "cancelled"},
		{name: "a delivery bundle is no shard", paths: []string{paths[0], paths[1], verify(t, r, base, ready, func(o *engine.VerifyOptions) { o.SigningKey = keys.key }).BundlePath},
			code: rmerr.EvidenceStatement, substr: "not a shard statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := merge(t, keys, tc.paths, tc.mod)
			if tc.code != "" {
				if err == nil {
					t.Fatalf("merged (merge-ready %v); want a refusal %s", run.MergeReady(), tc.code)
				}
				if rmerr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.substr) {
					t.Fatalf("refusal %v (code %s); want %s mentioning %q", err, rmerr.CodeOf(err), tc.code, tc.substr)
				}
				return
			}
			if err != nil {
				t.Fatalf("merge: %v", err)
			}
			if run.MergeReady() {
				t.Fatal("merge-ready; want not merge-ready")
			}
			if !hasRule(run, tc.rule) || !hasRule(run, tc.substr) {
				t.Fatalf("no reason %q mentioning %q:\n%s", tc.rule, tc.substr, strings.Join(rules(run), "\n"))
			}
		})
	}
	t.Run("a missing shard's checks fail the coverage pass", func(t *testing.T) {
		run, err := merge(t, keys, paths[:2], nil)
		if err != nil {
			t.Fatal(err)
		}
		// Without durations the checks are dealt round-robin in id
		// order: charlie is shard 3's.
		if !hasRule(run, "coverage.no-result||charlie|") || !hasRule(run, "shard-missing|"+string(rmerr.VerifyNoRunnable)+"||shard 3 of 3 produced no evidence; the checks no given shard was assigned (charlie)") {
			t.Errorf("the missing shard's check is not named:\n%s", strings.Join(rules(run), "\n"))
		}
	})
}
