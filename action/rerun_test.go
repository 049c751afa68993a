package action_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
)

// TestRerunFailedJobs (issue 27 item 5): docs/scale.md's sharded workflow
// after "re-run failed jobs" reaches the verdict "re-run all jobs" does. In
// attempt 1 shard 2's job fails before it has evidence (its runner has no
// containerd), so the merge is not merge-ready. "Re-run failed jobs" runs
// shard 2 and the merge job again as attempt 2; shard 1 is not re-run and
// its bundle is an attempt-1 artifact, which the runner's artifact service
// does not show attempt 2 (the emulator's downloadArtifact, as GitHub) —
// the workflow's download step asks the REST API for the run's artifacts,
// and the merge job's upload replaces its attempt-1 artifact. "Re-run all
// jobs" (attempt 3, earlier artifacts gone) runs both shards and the merge.
// Each shard is a real runmill verify --shard in the sandbox, each merge a
// real runmill evidence merge, through the action's steps.
func TestRerunFailedJobs(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	f := twoChecks(t)
	key, trust, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(shardedWorkflowDoc(t), &wf); err != nil {
		t.Fatal(err)
	}
	var download map[string]string // the merge job's download step, as documented
	for _, s := range wf.Jobs["verify"].Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			download = s.With
		}
	}
	if download == nil {
		t.Fatal("docs/scale.md's merge job downloads nothing")
	}

	type run struct {
		store     *artifactStore
		artifacts string
	}
	newRun := func() run {
		return run{store: &artifactStore{}, artifacts: t.TempDir()}
	}
	runnerTemp := t.TempDir()
	jobIn := func(r run, attempt int, inputs map[string]string) *job {
		inputs["github-token"] = ""
		inputs["signing-key"] = string(key)
		j := newJob(t, f, "pull_request", f.good, inputs)
		j.store, j.artifacts, j.attempt = r.store, r.artifacts, attempt
		// Every GitHub-hosted runner has the one RUNNER_TEMP
		// (/home/runner/work/_temp), emptied between jobs.
		j.env["RUNNER_TEMP"] = runnerTemp
		if err := os.RemoveAll(runnerTemp); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(runnerTemp, 0o755); err != nil {
			t.Fatal(err)
		}
		standInBuild(t, j)
		return j
	}
	shardJob := func(r run, attempt, k int, broken bool) *job {
		addr := containerdAddress
		if broken {
			addr = filepath.Join(t.TempDir(), "no-containerd.sock")
		}
		j := jobIn(r, attempt, map[string]string{
			"shard": []string{"", "1/2", "2/2"}[k], "merge-job": "verify", "artifact-name": []string{"", "runmill-shard-1", "runmill-shard-2"}[k],
			"policy": "autonomy: pr-only\n", "containerd-address": addr,
		})
		j.run()
		if j.failed != broken {
			t.Fatalf("attempt %d shard %d job failed %v:\n%s", attempt, k, j.failed, j.log.String())
		}
		return j
	}
	// mergeJob runs the workflow's download step, then the action with
	// merge: true on what it downloaded; it returns the merged statement.
	mergeJob := func(r run, attempt int, results string) (*job, evidence.DeliveryStatement, []string) {
		j := jobIn(r, attempt, map[string]string{"merge": "true", "shard-results": results, "trust": string(trust), "artifact-name": "runmill-evidence"})
		with := map[string]string{}
		for k, v := range download {
			with[k] = j.expand(v)
		}
		with["path"] = filepath.Join(j.root, with["path"])
		j.inputs["shards-dir"] = with["path"]
		d := j.downloadArtifact(with)
		got := downloaded(with["path"])
		t.Logf("attempt %d download: %s %s %q", attempt, d.Outcome, d.Log, got)
		j.run()
		var st evidence.DeliveryStatement
		b, err := os.ReadFile(filepath.Join(r.artifacts, "runmill-evidence", j.outputs()["run-id"], "statement.json"))
		if err != nil {
			t.Fatalf("attempt %d: the merge uploaded no statement (%v):\n%s", attempt, err, j.log.String())
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return j, st, got
	}
	// What a verdict was taken from: the check runs (which check, phase,
	// commit and exit code) and the verdict itself.
	facts := func(st evidence.DeliveryStatement) []string {
		var out []string
		for _, c := range st.Predicate.Checks {
			out = append(out, fmt.Sprintf("%s %s %s exit %d", c.CheckID, c.Phase, c.Commit, c.ExitCode))
		}
		slices.Sort(out)
		v, err := json.Marshal(st.Predicate.Verdict)
		if err != nil {
			t.Fatal(err)
		}
		return append(out, string(v))
	}

	// Attempt 1: shard 2's job fails; the merge is not merge-ready.
	first := newRun()
	shardJob(first, 1, 1, false)
	shardJob(first, 1, 2, true)
	j1, _, got1 := mergeJob(first, 1, "failure")
	if v := j1.outputs()["verdict"]; v != "not-merge-ready" || !slices.Equal(got1, []string{"runmill-shard-1"}) {
		t.Fatalf("attempt 1: verdict %q from %q, want not-merge-ready from shard 1 alone", v, got1)
	}

	// Attempt 2, "re-run failed jobs": shard 2 and the merge job again.
	shardJob(first, 2, 2, false)
	// What the download without the REST API would see: this attempt's
	// shard alone — the failure the documented step avoids.
	scoped := map[string]string{"pattern": download["pattern"], "path": t.TempDir()}
	(&job{t: t, store: first.store, artifacts: first.artifacts, attempt: 2}).downloadArtifact(scoped)
	if got := downloaded(scoped["path"]); !slices.Equal(got, []string{"runmill-shard-2"}) {
		t.Fatalf("a download scoped to attempt 2 found %q, want runmill-shard-2 alone", got)
	}
	j2, st2, got2 := mergeJob(first, 2, "success")
	if v := j2.outputs()["verdict"]; v != "merge-ready" || !slices.Equal(got2, []string{"runmill-shard-1", "runmill-shard-2"}) {
		t.Fatalf("attempt 2 (re-run failed jobs): verdict %q from %q, want merge-ready from both shards:\n%s", v, got2, j2.log.String())
	}
	if days := first.store.retention["runmill-shard-2"]; days != "1" {
		t.Errorf("the shard artifact's retention-days %q, want 1", days)
	}

	// Attempt 3, "re-run all jobs": every job again, no earlier artifact.
	all := newRun()
	shardJob(all, 3, 1, false)
	shardJob(all, 3, 2, false)
	j3, st3, _ := mergeJob(all, 3, "success")
	if v := j3.outputs()["verdict"]; v != j2.outputs()["verdict"] || !slices.Equal(facts(st2), facts(st3)) || len(st3.Predicate.Checks) != 4 {
		t.Errorf("re-run failed jobs: %s %q\nre-run all: %s %q\nwant the same verdict from the same check runs (two checks, base and candidate)",
			j2.outputs()["verdict"], facts(st2), v, facts(st3))
	}
}

// downloaded names the artifacts a download put in dir.
func downloaded(dir string) []string {
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	return got
}

// twoChecks is a repository of two checks (one per shard of two), each a
// TAP report, with a pull request head that adds a test.
func twoChecks(t *testing.T) fixture {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n"+
		"  - id: unit\n    run: sh tests/run.sh > reports/unit.tap\n    report: {path: reports/unit.tap, format: tap}\n    timeout: 60s\n"+
		"  - id: more\n    run: sh tests/run.sh > reports/more.tap\n    report: {path: reports/more.tap, format: tap}\n    timeout: 60s\n")
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/total.t", "x\n")
	f := baseAndGood(r)
	pullMerge(t, r, &f)
	return f
}
