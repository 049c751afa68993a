package action_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// TestBaseProofJobs (issue 26): docs/action.md's two jobs through the
// action's steps, each a real runmill in the sandbox. The push job proves
// the branch's tip (prove-base) and saves the signed proof with
// actions/cache under the branch and commit; a pull request's job against
// that commit restores it (base-proof: true) and reuses its baseline, the
// record naming the proof as its source, and only the candidate runs. A
// pull request whose job signs with another key, or whose base moved on
// (the restore falls back to the branch's older proof), runs its baseline
// and reaches the same verdict: a proof that cannot serve is a miss.
func TestBaseProofJobs(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	key, _, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: sh tests/run.sh > reports/unit.tap\n    report: {path: reports/unit.tap, format: tap}\n    timeout: 60s\n")
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/total.t", "x\n")
	f := baseAndGood(r)
	r.Checkout("main", false)
	r.Write("README", "main moves on\n")
	moved := r.Commit("main moves on")
	r.Checkout("late", true)
	r.Write("tests/late.t", "x\n")
	late := r.Commit("late: a test more")
	pullMerge(t, r, &f)

	const policy = "autonomy: pr-only\n"
	jobOf := func(event, head string, inputs map[string]string) *job {
		inputs["github-token"], inputs["policy"], inputs["containerd-address"] = "", policy, containerdAddress
		j := newJob(t, f, event, head, inputs)
		standInBuild(t, j)
		return j
	}
	statement := func(j *job) evidence.DeliveryStatement {
		t.Helper()
		var st evidence.DeliveryStatement
		b, err := os.ReadFile(filepath.Join(j.artifacts, "runmill-evidence", j.outputs()["run-id"], "statement.json"))
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err != nil {
			t.Fatalf("the job uploaded no statement (%v):\n%s", err, j.log.String())
		}
		return st
	}
	baseline := func(st evidence.DeliveryStatement) record.CheckRun {
		t.Helper()
		for _, c := range st.Predicate.Checks {
			if c.Phase == record.Baseline {
				return c
			}
		}
		t.Fatalf("no baseline run in %+v", st.Predicate.Checks)
		return record.CheckRun{}
	}
	ran := func(j *job, name string) stepResult {
		for _, s := range j.ran {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("no step %q", name)
		return stepResult{}
	}

	// The push job: main's tip, proved and saved.
	push := jobOf("push", "", map[string]string{"prove-base": f.base, "signing-key": string(key)})
	push.env["GITHUB_REF"], push.env["GITHUB_REF_NAME"], push.env["GITHUB_SHA"] = "refs/heads/main", "main", f.base
	push.run()
	if push.failed || push.outputs()["verdict"] != "base-proof" {
		t.Fatalf("the push job: failed %v, verdict %q:\n%s", push.failed, push.outputs()["verdict"], push.log.String())
	}
	if s := ran(push, "Save the base proof"); s.Outcome != "success" || ran(push, "Restore the base proof").Outcome != "skipped" || ran(push, "Summarize").Outcome != "skipped" {
		t.Fatalf("the push job's steps: %q", push.order())
	}
	proof := statement(push)
	if !proof.Predicate.BaseProof || baseline(proof).Commit != f.base || proof.Predicate.Verdict.MergeReady {
		t.Fatalf("the push job signed no base proof of %s: %+v", f.base, proof.Predicate)
	}
	saved := filepath.Join(push.cacheScope(), "runmill-base-proof-main-"+f.base)
	if _, err := os.Stat(filepath.Join(saved, push.outputs()["run-id"], "evidence.json")); err != nil {
		t.Fatalf("the proof was not saved under the branch and commit: %v", err)
	}

	// A pull request against that commit: the proof restored and reused.
	pr := jobOf("pull_request", f.good, map[string]string{"base-proof": "true", "signing-key": string(key)})
	pr.env["GITHUB_BASE_REF"] = "main"
	pr.run()
	if pr.failed || pr.outputs()["verdict"] != "merge-ready" {
		t.Fatalf("the pull request's job: failed %v, verdict %q:\n%s", pr.failed, pr.outputs()["verdict"], pr.log.String())
	}
	if s := ran(pr, "Restore the base proof"); s.Outputs["cache-hit"] != "true" {
		t.Fatalf("the proof was not restored by its exact key: %+v", s.Outputs)
	}
	b := baseline(statement(pr))
	if ref := b.ReusedFrom; ref == nil || !ref.Proof || ref.RunID != proof.Predicate.RunID || b.Commit != f.base {
		t.Fatalf("the pull request's baseline was not reused from the proof %s: %+v\n%s", proof.Predicate.RunID, b.ReusedFrom, pr.log.String())
	}
	if ran(pr, "Save the base proof").Outcome != "skipped" {
		t.Error("a pull request's job saved a base proof")
	}

	for _, tc := range []struct {
		name, base, head, key string
	}{
		{"signed with another key", f.base, f.good, string(otherKey)},
		{"against a base that moved on", moved, late, string(key)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := jobOf("pull_request", tc.head, map[string]string{"base-proof": "true", "signing-key": tc.key, "base": tc.base})
			j.env["GITHUB_BASE_REF"] = "main"
			j.run()
			if j.failed || j.outputs()["verdict"] != "merge-ready" {
				t.Fatalf("failed %v, verdict %q:\n%s", j.failed, j.outputs()["verdict"], j.log.String())
			}
			if b := baseline(statement(j)); b.ReusedFrom != nil || !b.Started || b.Commit != tc.base {
				t.Fatalf("the baseline at %s: %+v", tc.base, b)
			}
			restore := ran(j, "Restore the base proof")
			if tc.base == moved && (restore.Outputs["cache-hit"] != "false" || restore.Outputs["cache-matched-key"] != "runmill-base-proof-main-"+f.base) {
				t.Errorf("the restore of a moved base: %+v, want the branch's older proof by its restore key", restore.Outputs)
			}
		})
	}
}

// TestBaseProofWorkflowDoc lints the push workflow docs/action.md
// documents (and examples/workflows holds, byte for byte) with actionlint,
// and holds it to what the proof needs: a push to the base branch proves
// its tip (github.sha) with the signing key. It is a workflow of its own,
// so the pull-request workflow's required job is never skipped by an if:.
func TestBaseProofWorkflowDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(actionRoot(t), "docs", "action.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- workflow: base-proof[^>]*-->\n```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/action.md has no base-proof workflow block")
	}
	wf := m[1]
	example, err := os.ReadFile(filepath.Join(actionRoot(t), "examples", "workflows", "runmill-base-proof.yml"))
	if err != nil || !slices.Equal(example, wf) {
		t.Fatalf("examples/workflows/runmill-base-proof.yml is not docs/action.md's workflow (%v)", err)
	}
	var parsed struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(wf, &parsed); err != nil {
		t.Fatal(err)
	}
	_, onPush := parsed.On["push"]
	_, onPR := parsed.On["pull_request"]
	proves := false
	for _, j := range parsed.Jobs {
		for _, s := range j.Steps {
			proves = proves || strings.HasPrefix(s.Uses, "runmill/verify@") && s.With["prove-base"] == "${{ github.sha }}" && s.With["signing-key"] != ""
		}
	}
	if !onPush || onPR || !proves {
		t.Errorf("on: push %v (pull_request %v), a job proving github.sha with the signing key %v", onPush, onPR, proves)
	}

	lintWorkflow(t, actionlintBin(t), "docs/action.md's base-proof workflow", wf)
}
