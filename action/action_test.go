package action_test

import (
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runmill/verify/internal/testreq"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
)

// runnerUID is the runner user's uid on GitHub's hosted images: the
// workspace belongs to it, and sudo says so in SUDO_UID.
const runnerUID = "1001"

const stubSudo = `#!/bin/bash
# sudo for the action test, which itself runs as root: logs each call,
# refuses all of them under RUNMILL_TEST_SUDO=deny (no passwordless sudo),
# sets SUDO_UID/SUDO_GID/SUDO_USER to the runner user as sudo does, and
# resets PATH to the secure_path (so the action must pass PATH on) and,
# without -E, the whole environment.
echo "sudo $*" >>"$RUNMILL_TEST_SUDO_LOG"
if [ "${RUNMILL_TEST_SUDO:-}" = deny ]; then
	echo "sudo: a password is required" >&2
	exit 1
fi
keep=0
while [ $# -gt 0 ]; do
	case $1 in
	-n) shift ;;
	-E) keep=1; shift ;;
	--) shift; break ;;
	-*) echo "stub sudo: unsupported option $1" >&2; exit 1 ;;
	*) break ;;
	esac
done
secure=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [ $keep = 1 ]; then
	exec env PATH="$secure" SUDO_UID=` + runnerUID + ` SUDO_GID=` + runnerUID + ` SUDO_USER=runner "$@"
fi
exec env -i PATH="$secure" HOME=/root SUDO_UID=` + runnerUID + ` SUDO_GID=` + runnerUID + ` SUDO_USER=runner "$@"
`

const tapRunner = `#!/bin/sh
# One TAP point per tests/*.t file.
n=$(ls tests/*.t | wc -l)
echo "1..$n"
i=0
for f in tests/*.t; do i=$((i+1)); echo "ok $i $(basename "$f" .t)"; done
`

type fixture struct {
	dir                    string
	base, good, bad, merge string
}

// shop builds the repository under test: a base, a good and a bad pull
// request head, and the merge commit GitHub would put in GITHUB_SHA. The
// workspace then belongs to the runner user, as on a hosted runner.
func shop(t *testing.T) fixture {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: sh tests/run.sh > reports/unit.tap\n    report: {path: reports/unit.tap, format: tap}\n    timeout: 60s\n")
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/total.t", "x\n")
	r.Write("tests/zero_qty.t", "x\n")
	// A test whose name is a workflow command: deleting it puts the name
	// in runmill's output, where the runner must not obey it.
	r.Write("tests/::warning title=fake::from a test name.t", "x\n")
	f := baseAndGood(r)
	r.Checkout("main", false)
	r.Checkout("bad", true)
	r.Remove("tests/zero_qty.t")
	r.Remove("tests/::warning title=fake::from a test name.t")
	f.bad = r.Commit("bad: two tests less")
	pullMerge(t, r, &f)
	return f
}

// baseAndGood commits what r holds as the base, then a good pull request
// head on branch good that adds a passing test (left checked out).
func baseAndGood(r *gittest.Repo) fixture {
	f := fixture{dir: r.Dir}
	f.base = r.Commit("base")
	r.Checkout("good", true)
	r.Write("tests/discount.t", "x\n")
	f.good = r.Commit("good: a test more")
	return f
}

// pullMerge makes the merge commit GitHub would put in GITHUB_SHA (main
// with the good head merged) and gives the workspace to the runner user,
// as on a hosted runner.
func pullMerge(t *testing.T, r *gittest.Repo, f *fixture) {
	t.Helper()
	r.Checkout("main", false)
	r.Checkout("pull-merge", true)
	r.Git("merge", "-q", "--no-ff", "-m", "Merge good into main", "good")
	f.merge = r.Git("rev-parse", "HEAD")
	if out, err := exec.Command("chown", "-R", runnerUID+":"+runnerUID, r.Dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

func actionRoot(t *testing.T) string {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// newJob lays out a runner for one job on a pull_request event whose head is
// head (or on eventName with an empty payload).
func newJob(t *testing.T, f fixture, eventName, head string, inputs map[string]string) *job {
	root := t.TempDir()
	j := &job{t: t, actionPath: actionRoot(t), root: root, inputs: inputs, artifacts: filepath.Join(root, "artifacts"), store: &artifactStore{}, attempt: 1}
	j.action = loadAction(t, filepath.Join(j.actionPath, "action.yml"))
	for _, d := range []string{"_temp", "_tool", "stub", "artifacts"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "stub", "sudo"), []byte(stubSudo), 0o755); err != nil {
		t.Fatal(err)
	}
	event := "{}"
	if eventName == "pull_request" {
		b, err := os.ReadFile(filepath.Join("testdata", "pull_request.json"))
		if err != nil {
			t.Fatal(err)
		}
		event = strings.NewReplacer("BASE_SHA", f.base, "HEAD_SHA", head, "MERGE_SHA", f.merge).Replace(string(b))
	}
	if err := json.Unmarshal([]byte(event), &j.event); err != nil {
		t.Fatal(err)
	}
	eventPath := filepath.Join(root, "event.json")
	if err := os.WriteFile(eventPath, []byte(event), 0o644); err != nil {
		t.Fatal(err)
	}
	j.env = map[string]string{
		"PATH":                  filepath.Join(root, "stub") + ":" + os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
		"LANG":                  "C.UTF-8",
		"CI":                    "true",
		"GITHUB_ACTIONS":        "true",
		"RUNNER_OS":             "Linux",
		"RUNNER_TEMP":           filepath.Join(root, "_temp"),
		"RUNNER_TOOL_CACHE":     filepath.Join(root, "_tool"), // /opt/hostedtoolcache on GitHub's images
		"GITHUB_WORKSPACE":      f.dir,
		"GITHUB_EVENT_NAME":     eventName,
		"GITHUB_EVENT_PATH":     eventPath,
		"GITHUB_SHA":            f.merge, // the merge commit: never the candidate
		"GITHUB_REF":            "refs/pull/42/merge",
		"GITHUB_REPOSITORY":     "octo-org/shop",
		"GITHUB_RUN_ID":         "4242",
		"GITHUB_SERVER_URL":     "https://github.com",
		"GITHUB_API_URL":        "http://127.0.0.1:9", // nothing may call GitHub here
		"RUNMILL_TEST_TOKEN":    "ghs_test",
		"RUNMILL_TEST_SUDO_LOG": filepath.Join(root, "sudo.log"),
		// The build may use this machine's Go caches, which nothing
		// restored from actions/cache (a fresh build per job takes minutes
		// here); build.sh makes fresh ones without it.
		"RUNMILL_TRUST_GO_CACHE": "true",
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN"} {
		if v, ok := os.LookupEnv(k); ok {
			j.env[k] = v
		}
	}
	// The Go toolchain the Build step fetches comes from the module cache
	// scripts/setup.sh filled (go mod download golang.org/toolchain@…),
	// as a file:// proxy before the job's own: the same bytes the public
	// proxy serves, checked against the same pin.
	j.env["GOPROXY"] = "file://" + filepath.Join(goModCache(t), "cache", "download") + "," + cmp.Or(j.env["GOPROXY"], "https://proxy.golang.org,direct")
	return j
}

var goModCacheDir = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	return strings.TrimSpace(string(out)), err
})

func goModCache(t *testing.T) string {
	dir, err := goModCacheDir()
	if err != nil || dir == "" {
		t.Fatalf("go env GOMODCACHE: %q %v", dir, err)
	}
	return dir
}

func (j *job) sudoLog() string {
	b, _ := os.ReadFile(j.env["RUNMILL_TEST_SUDO_LOG"])
	return string(b)
}

var wantOrder = []string{"Preflight", "Install the released runmill", "Restore the build cache", "Build runmill",
	"Locate the caches", "Restore the Go toolchain caches", "Vet the restored caches",
	"runmill verify", "Upload the evidence", "Summarize", "Seal the caches", "Gate on the verdict"}

func signingKey(t *testing.T) string {
	key, _, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return string(key)
}

// TestActionOnPullRequests runs the composite action's steps in order with a
// real runmill, built by the action from this source tree, on a real
// repository and a real containerd: a merge-ready pull request passes the
// gate; one that deletes a test is uploaded, then fails the gate. With
// comment: true the first run creates the pull request's comment and the
// second updates it in place (GitHub's API: internal/githubtest).
func TestActionOnPullRequests(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	f := shop(t)
	api := githubtest.New(t)
	const comments = "/repos/octo-org/shop/issues/42/comments"
	commentBody := func(want ...string) func(testing.TB, []byte) {
		return func(t testing.TB, b []byte) {
			var c struct{ Body string }
			if err := json.Unmarshal(b, &c); err != nil {
				t.Errorf("comment request %s: %v", b, err)
			}
			for _, w := range want {
				if !strings.Contains(c.Body, w) {
					t.Errorf("the comment lacks %q:\n%s", w, c.Body)
				}
			}
		}
	}
	for _, tc := range []struct {
		name, head, verdict string
		gate                string
		counts              [4]string // passed, failed, missing, skipped
		comment             []githubtest.Exchange
		commented           string
	}{
		{"merge-ready", f.good, "merge-ready", "success", [4]string{"4", "0", "0", "0"}, []githubtest.Exchange{
			{Path: comments, Query: "per_page=100&page=1", Status: 200, File: "issue_comments_empty.json"},
			{Method: "POST", Path: comments, Status: 201, File: "issue_comment.json", Check: commentBody(
				"<!-- runmill verify: runmill-evidence -->\n### ✅ runmill: merge-ready", "| at the candidate | 4 | 0 | 0 | 1 | 0 | 0 | 0 |",
				"[evidence](https://github.com/octo-org/shop/actions/runs/4242/artifacts/1)")},
		}, "runmill: commented on pull request #42 (comment 2510000002)"},
		{"not merge-ready", f.bad, "not-merge-ready", "failure", [4]string{"1", "0", "2", "0"}, []githubtest.Exchange{
			{Path: comments, Query: "per_page=100&page=1", Status: 200, File: "issue_comments_sticky.json"},
			{Method: "PATCH", Path: "/repos/octo-org/shop/issues/comments/2510000002", Status: 200, File: "issue_comment.json", Check: commentBody(
				"<!-- runmill verify: runmill-evidence -->\n### ❌ runmill: not merge-ready", "| at the candidate | 1 | 0 | 0 | 0 | 2 | 0 | 2 |",
				"**Missing (passed at the base, gone without a declaration): 2**", "`unit: zero_qty`")},
		}, "runmill: updated the comment 2510000002 on pull request #42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, f, "pull_request", tc.head, map[string]string{
				"policy":             "autonomy: pr-only\nverification:\n  fail_on_skipped_check: true\n",
				"signing-key":        signingKey(t),
				"agent-proposals":    "unit\ncurl-evil-sh",
				"containerd-address": containerdAddress,
				"parallel":           "2",
				"github-token":       "", // no token: runmill verify makes no GitHub call
				"comment":            "true",
			})
			// The action used at a branch of a repository of its own: no
			// release checksums, so it builds its source, stamped with the
			// ref; its error codes link that repository's docs at that ref.
			j.actionRef, j.actionRepo = "main", "octo-org/runmill-verify"
			// A pull request of the repository itself, whose token can
			// write the comment (a fork's cannot: TestSummaryCommand).
			head := j.event["pull_request"].(map[string]any)["head"].(map[string]any)
			head["repo"].(map[string]any)["full_name"] = "octo-org/shop"
			j.env["GITHUB_API_URL"] = api.URL()
			for _, e := range tc.comment {
				api.Add(e)
			}
			// Only the Summarize step gets the token (the input, read when
			// the step starts): verify consults no GitHub here, the comment
			// is what is tested.
			j.afterStep = func(i int, _ stepResult) {
				if i == stepUpload {
					j.inputs["github-token"] = githubtest.Token
				}
			}
			envBefore := maps.Clone(j.env)
			j.run()
			defer func() {
				if t.Failed() {
					t.Logf("job log:\n%s", j.log.String())
				}
			}()
			// The first job saves the build cache, the second restores it.
			hit := j.ran[stepRestore].Outputs["cache-hit"] == "true"
			order := slices.DeleteFunc(j.order(), func(s string) bool { return s == "Save the build cache" })
			if !slices.Equal(order, wantOrder) {
				t.Fatalf("steps ran %q, want %q", j.order(), wantOrder)
			}
			var outcomes []string
			for _, r := range j.ran {
				outcomes = append(outcomes, r.Outcome)
			}
			save := map[bool]string{false: "success", true: "skipped"}[hit]
			// Prepare dependencies (and the dependency caches with it) is
			// opt-in: skipped without prepare-dependencies; so is the base
			// proof, without base-proof or prove-base. A check that is not a
			// Go check makes no toolchain cache: nothing to save.
			want := []string{"success", "success", "success", "success", save,
				"success", "success", "skipped", "success",
				"skipped", "skipped", "skipped", "success", "skipped",
				"success", "success", "success",
				"skipped", "skipped", tc.gate}
			if !slices.Equal(outcomes, want) {
				t.Fatalf("step outcomes %q, want %q", outcomes, want)
			}
			// The job's PATH and environment are the workflow's: no step
			// added to PATH (the action's Go is its own) or wrote GITHUB_ENV.
			if len(j.path) > 0 || !maps.Equal(j.env, envBefore) {
				t.Errorf("the action changed the job's environment: GITHUB_PATH added %q; PATH %q, was %q", j.path, j.env["PATH"], envBefore["PATH"])
			}
			if log := j.ran[stepBuild].Log; !strings.Contains(log, "runmill dev+main\n") || !strings.Contains(log, "matches the action's pin") && !hit {
				t.Errorf("the build did not stamp dev+main or check its Go:\n%s", log)
			}
			if j.failed != (tc.gate == "failure") {
				t.Errorf("job failed %v", j.failed)
			}
			out := j.outputs()
			if out["verdict"] != tc.verdict || !regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{8}$`).MatchString(out["run-id"]) ||
				!strings.HasSuffix(out["bundle-path"], "/"+out["run-id"]+"/evidence.json") {
				t.Fatalf("action outputs %q", out)
			}
			if got := [4]string{out["passed"], out["failed"], out["missing"], out["skipped"]}; got != tc.counts {
				t.Errorf("outputs passed, failed, missing, skipped = %q, want %q", got, tc.counts)
			}
			// The summary-path output is the job summary, as a file that
			// outlives the step.
			if b, err := os.ReadFile(out["summary-path"]); err != nil || string(b)+"\n" != j.summary.String() {
				t.Errorf("summary-path %q (%v) does not hold the job summary:\n%s", out["summary-path"], err, b)
			}
			if log := j.ran[stepSummary].Log; !strings.Contains(log, tc.commented) {
				t.Errorf("the Summarize step did not say %q:\n%s", tc.commented, log)
			}
			// The evidence was uploaded, and it is about the pull request's
			// head, not GITHUB_SHA's merge commit.
			dir := filepath.Join(j.artifacts, "runmill-evidence", out["run-id"])
			stmt, err := os.ReadFile(filepath.Join(dir, "statement.json"))
			if err != nil {
				t.Fatalf("the artifact holds no statement: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "evidence.json")); err != nil {
				t.Errorf("the artifact holds no signed bundle: %v", err)
			}
			if got := evidence.Digest(stmt); got != out["bundle-digest"] {
				t.Errorf("bundle-digest %s, the uploaded statement's digest %s", out["bundle-digest"], got)
			}
			var st evidence.DeliveryStatement
			if err := json.Unmarshal(stmt, &st); err != nil {
				t.Fatal(err)
			}
			c := st.Predicate.Candidate
			if c.Head != tc.head || c.Base != f.base || c.Repository.Name != "octo-org/shop" {
				t.Errorf("the evidence is about head %s base %s in %q; want head %s base %s (GITHUB_SHA is %s)", c.Head, c.Base, c.Repository.Name, tc.head, f.base, f.merge)
			}
			if st.Predicate.Manifest.Policies.Operator == nil {
				t.Error("the policy input did not reach runmill")
			}
			if st.Predicate.RunmillVersion != "dev+main" {
				t.Errorf("runmill_version %q, want the version stamped from the action's ref", st.Predicate.RunmillVersion)
			}
			sum := j.summary.String()
			// The evidence is the uploaded artifact, by its URL, and the
			// command that checks it; no runner path.
			for _, want := range []string{"runmill: " + strings.Replace(tc.verdict, "not-", "not ", 1),
				"`runmill evidence download --repo octo-org/shop --run-id 4242 --name runmill-evidence --verify",
				"[runmill\\-evidence](https://github.com/octo-org/shop/actions/runs/4242/artifacts/1)"} {
				if !strings.Contains(sum, want) {
					t.Errorf("the job summary lacks %q:\n%s", want, sum)
				}
			}
			if strings.Contains(sum, j.env["RUNNER_TEMP"]) {
				t.Errorf("the job summary names a runner path:\n%s", sum)
			}
			if tc.verdict == "not-merge-ready" && !strings.Contains(sum, "(https://github.com/octo-org/runmill-verify/blob/main/docs/errors.md#rm-verify-003)") {
				t.Errorf("RM-VERIFY-003 does not link the action's own docs at its ref:\n%s", sum)
			}
			sudo := j.sudoLog()
			// runmill runs as root by the absolute path it was installed at.
			bin := j.ran[stepBuild].Outputs["runmill"]
			if !strings.HasPrefix(bin, "/var/lib/runmill-action/job.") || !strings.Contains(sudo, "sudo -E env PATH=") ||
				!strings.Contains(sudo, " "+bin+" verify --github-actions") || !strings.Contains(sudo, "sudo -n chown -R 0:0 ") {
				t.Errorf("runmill at %q; sudo calls:\n%s", bin, sudo)
			}
			verifyLog := j.ran[stepVerify].Log
			// What the runner shows: runmill's own annotations only.
			for _, a := range j.ran[stepVerify].Annotations {
				if strings.Contains(a, "fake") && !strings.HasPrefix(a, "error runmill: RM-VERIFY-003") {
					t.Errorf("the runner would show an annotation from a test name: %q", a)
				}
				if !strings.HasPrefix(a, "error runmill: ") && !strings.HasPrefix(a, "warning runmill: ") {
					t.Errorf("an annotation runmill did not make: %q", a)
				}
			}
			if tc.verdict == "not-merge-ready" {
				want := "error runmill: RM-VERIFY-003 in check unit: 2 tests that passed at the base are missing at the candidate and not declared:\n  \\x3a:warning title=fake::from a test name\n  zero_qty"
				if !slices.ContainsFunc(j.ran[stepVerify].Annotations, func(a string) bool { return strings.HasPrefix(a, want) }) {
					t.Errorf("annotations %q lack %q", j.ran[stepVerify].Annotations, want)
				}
				if !strings.Contains(j.ran[stepGate].Log, "::error title=runmill::not merge-ready") {
					t.Errorf("gate log:\n%s", j.ran[stepGate].Log)
				}
			}
			if strings.Contains(verifyLog, "from the title") {
				t.Error("the pull request's title reached the log")
			}
		})
	}
}

// TestPreflightWithoutSudo: without passwordless sudo the preflight step
// says so with its code, nothing runs or uploads, and the gate fails.
func TestPreflightWithoutSudo(t *testing.T) {
	f := shop(t)
	j := newJob(t, f, "pull_request", f.good, map[string]string{"github-token": ""})
	j.env["RUNMILL_TEST_SUDO"] = "deny"
	j.run()
	if got, want := j.order(), []string{"Preflight", "Gate on the verdict"}; !slices.Equal(got, want) {
		t.Fatalf("steps ran %q, want %q", got, want)
	}
	if j.ran[stepPreflight].Outcome != "failure" || !strings.Contains(j.ran[stepPreflight].Log, "RM-ACTIONS-002") || !strings.Contains(j.ran[stepPreflight].Log, "sudo -n true") {
		t.Errorf("preflight: %s\n%s", j.ran[stepPreflight].Outcome, j.ran[stepPreflight].Log)
	}
	if j.ran[stepGate].Outcome != "failure" || !strings.Contains(j.ran[stepGate].Log, "no verdict") {
		t.Errorf("gate: %s\n%s", j.ran[stepGate].Outcome, j.ran[stepGate].Log)
	}
}

// TestNoPullRequest: outside a pull_request event the base and candidate
// must be given; without them the verify step stops with RM-ACTIONS-003
// before running anything, and the gate fails.
func TestNoPullRequest(t *testing.T) {
	f := shop(t)
	j := newJob(t, f, "push", "", map[string]string{"github-token": "", "containerd-address": containerdAddress})
	if containerdAddress == "" {
		j.env["RUNMILL_TEST_SUDO"] = ""
		j.inputs["containerd-address"] = ""
	}
	j.run()
	if j.ran[stepVerify].Outcome != "failure" || !strings.Contains(j.ran[stepVerify].Log, "RM-ACTIONS-003") || strings.Contains(j.sudoLog(), "runmill verify") {
		t.Errorf("verify: %s\n%s", j.ran[stepVerify].Outcome, j.ran[stepVerify].Log)
	}
	if j.ran[stepUpload].Outcome != "skipped" || j.ran[stepGate].Outcome != "failure" {
		t.Errorf("upload %s, gate %s; want skipped (no run directory), failure", j.ran[stepUpload].Outcome, j.ran[stepGate].Outcome)
	}
}

// TestMergeGroup: in a merge queue the commits come from the merge_group
// event; the verify step gets as far as running runmill on them (here
// without sudo, so the run stops there).
func TestMergeGroup(t *testing.T) {
	f := shop(t)
	j := newJob(t, f, "merge_group", "", map[string]string{"github-token": ""})
	j.event = map[string]any{"merge_group": map[string]any{"base_sha": f.base, "head_sha": f.good}}
	j.env["RUNMILL_TEST_SUDO"] = "deny"
	standInBuild(t, j)
	j.action.Runs.Steps[stepVerify].If = "always()" // past the preflight, which fails without sudo
	j.run()
	if !strings.Contains(j.sudoLog(), "--base "+f.base+" --candidate "+f.good+" ") {
		t.Errorf("runmill was not called on the merge group's commits:\n%s\n%s", j.sudoLog(), j.ran[stepVerify].Log)
	}
	// The queue's base is a commit of the branch it merges into: its proof
	// is the push job's, keyed by that branch.
	j = newJob(t, f, "merge_group", "", map[string]string{"github-token": "", "base-proof": "true"})
	j.event = map[string]any{"merge_group": map[string]any{"base_sha": f.base, "head_sha": f.good, "base_ref": "refs/heads/main"}}
	for i := range j.action.Runs.Steps {
		j.action.Runs.Steps[i].If = "cancelled()"
	}
	j.action.Runs.Steps[stepNameBaseProof].If = "always()"
	j.run()
	if got := j.ran[stepNameBaseProof].Outputs["base-proof-key"]; got != "runmill-base-proof-main-"+f.base {
		t.Errorf("a merge group's base proof key %q, want main's proof of %s:\n%s", got, f.base, j.ran[stepNameBaseProof].Log)
	}
}

// TestVerifyInputs runs the verify step alone (after a stand-in for the
// build step) on inputs it must refuse or translate (runmill itself is not
// reached: sudo refuses, after logging the command line it was given).
func TestVerifyInputs(t *testing.T) {
	f := shop(t)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("autonomy: pr-only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reuseDir := filepath.Join(t.TempDir(), "runmill-runs")
	for _, tc := range []struct {
		name   string
		inputs map[string]string
		log    string // in the step's log (refused) or in the sudo log (passed on)
		sudo   string
	}{
		{"policy and policy-file", map[string]string{"policy": "autonomy: pr-only", "policy-file": policyFile}, "RM-ACTIONS-003", ""},
		{"policy path missing", map[string]string{"policy": "/nonexistent/policy.yaml"}, "the policy file /nonexistent/policy.yaml does not exist", ""},
		{"parallel", map[string]string{"parallel": "two"}, "parallel must be a number", ""},
		{"check-run", map[string]string{"check-run": "yes"}, "check-run must be true or false", ""},
		{"policy text", map[string]string{"policy": "autonomy: pr-only\nverification: {fail_on_skipped_check: true}"}, "", "/policy.yaml --parallel 0"},
		{"policy path", map[string]string{"policy": policyFile}, "", "--policy " + policyFile + " "},
		{"policy-file", map[string]string{"policy-file": policyFile, "parallel": "3"}, "", "--policy " + policyFile + " --parallel 3"},
		{"proposals text", map[string]string{"agent-proposals": "unit\nlint"}, "", "/agent-proposals.txt"},
		{"explicit commits", map[string]string{"base": "main", "candidate": "good"}, "", "--base main --candidate good "},
		{"shallow checkout", map[string]string{"base": strings.Repeat("0", 40)}, "is not in the checkout", ""},
		{"shard", map[string]string{"shard": "2/3", "signing-key": "PEM"}, "", "--parallel 0 --shard 2/3 --github-job verify"},
		{"shard and merge job", map[string]string{"shard": "1/2", "merge-job": "gate", "signing-key": "PEM"}, "", "--shard 1/2 --github-job gate"},
		{"retention-days", map[string]string{"retention-days": "91"}, "retention-days must be a number of days from 1 to 90", ""},
		{"policy-required", map[string]string{"policy-required": "yes"}, "policy-required must be true or false", ""},
		{"shard not K/N", map[string]string{"shard": "2 of 3"}, "shard must be K/N", ""},
		{"merge not a boolean", map[string]string{"merge": "yes"}, "merge must be true or false", ""},
		{"merge without shards-dir", map[string]string{"merge": "true", "trust": "{}"}, "merge: true needs shards-dir", ""},
		{"merge without trust", map[string]string{"merge": "true", "shards-dir": "shards"}, "without the trust document the shard bundles must verify against", ""},
		{"merge and shard", map[string]string{"merge": "true", "shards-dir": "shards", "shard": "1/2"}, "not both", ""},
		{"reuse-dir", map[string]string{"reuse-dir": reuseDir, "signing-key": "PEM"}, "", "--parallel 0 --reuse " + reuseDir},
		{"reuse-dir without signing-key", map[string]string{"reuse-dir": reuseDir}, "reuse-dir needs signing-key", ""},
		{"prove-base", map[string]string{"prove-base": "main", "signing-key": "PEM"}, "", "verify --github-actions --repo " + f.dir + " --prove-base main --out "},
		{"prove-base without signing-key", map[string]string{"prove-base": "main"}, "prove-base needs signing-key", ""},
		{"prove-base and shard", map[string]string{"prove-base": "main", "shard": "1/2", "signing-key": "PEM"}, "drop shard", ""},
		{"prove-base for a pull request", map[string]string{"prove-base": "main", "comment": "true", "signing-key": "PEM"}, "prove-base verifies no pull request", ""},
		{"prove-base not a commit", map[string]string{"prove-base": strings.Repeat("0", 40), "signing-key": "PEM"}, "is not in the checkout", ""},
		{"base-proof not a boolean", map[string]string{"base-proof": "yes"}, "base-proof must be true or false", ""},
		{"base-proof restored", map[string]string{"signing-key": "PEM", "base-proof": "true"}, "", "_temp/runmill-base-proof --no-job-summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.inputs["github-token"] = ""
			j := newJob(t, f, "pull_request", f.good, tc.inputs)
			var also []int
			if tc.inputs["base-proof"] == "true" {
				// Named by its step, put there as the Restore step would.
				also = append(also, stepNameBaseProof)
				if err := os.MkdirAll(filepath.Join(j.env["RUNNER_TEMP"], "runmill-base-proof"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := verifyAlone(t, j, also...)
			if r.Outcome != "failure" {
				t.Fatalf("verify step %s (sudo refuses, so it cannot succeed)", r.Outcome)
			}
			if tc.log != "" && !strings.Contains(r.Log, tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, r.Log)
			}
			if tc.sudo != "" && !strings.Contains(j.sudoLog(), tc.sudo) {
				t.Errorf("sudo log lacks %q:\n%s\n%s", tc.sudo, j.sudoLog(), r.Log)
			}
			if tc.log != "" && strings.Contains(j.sudoLog(), "runmill") {
				t.Errorf("runmill was started on a refused input:\n%s", j.sudoLog())
			}
		})
	}
}

// verifyAlone runs the verify step alone (and the steps also names) after
// a stand-in for the build step, with sudo refusing (runmill is never reached; the sudo log shows
// the command line it was given), and returns its result.
func verifyAlone(t *testing.T, j *job, also ...int) stepResult {
	t.Helper()
	j.env["RUNMILL_TEST_SUDO"] = "deny"
	for i := range j.action.Runs.Steps {
		if !slices.Contains(also, i) {
			j.action.Runs.Steps[i].If = "cancelled()"
		}
	}
	standInBuild(t, j)
	j.action.Runs.Steps[stepVerify].If = "always()"
	j.run()
	return j.ran[stepVerify]
}

// TestRunmillVersion: runmill-version must be a module version; anything
// else stops the install step before anything is downloaded or built.
func TestRunmillVersion(t *testing.T) {
	f := shop(t)
	j := newJob(t, f, "pull_request", f.good, map[string]string{"runmill-version": "latest; curl evil"})
	buildOnly(j)
	j.run()
	if r := j.ran[stepInstall]; r.Outcome != "failure" || !strings.Contains(r.Log, "RM-ACTIONS-003") {
		t.Errorf("install step %s:\n%s", r.Outcome, r.Log)
	}
	if r := j.ran[stepBuild]; r.Outcome != "skipped" {
		t.Errorf("build step %s:\n%s", r.Outcome, r.Log)
	}
}

// TestInputsAreMapped: composite steps get no INPUT_* variables, so every
// input must reach a step through env:, and no run: script may hold an
// expression (it would be spliced into the script unquoted).
func TestInputsAreMapped(t *testing.T) {
	a := loadAction(t, filepath.Join(actionRoot(t), "action.yml"))
	used := map[string]bool{}
	ref := regexp.MustCompile(`inputs\.([a-z-]+)`)
	for _, s := range a.Runs.Steps {
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q has an expression in run:", s.Name)
		}
		for _, v := range s.Env {
			for _, m := range ref.FindAllStringSubmatch(v, -1) {
				used[m[1]] = true
			}
		}
	}
	for name := range a.Inputs {
		if !used[name] {
			t.Errorf("input %q is mapped into no step's env:", name)
		}
	}
	for _, name := range []string{"verdict", "bundle-path", "bundle-digest", "run-id"} {
		if a.Outputs[name].Value != "${{ steps.verify.outputs."+name+" }}" {
			t.Errorf("output %s = %q, want runmill's step output", name, a.Outputs[name].Value)
		}
	}
	for _, name := range []string{"policy", "policy-file", "signing-key", "base", "candidate", "agent-proposals", "github-token",
		"parallel", "containerd-address", "check-run", "artifact-name", "runmill-version"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %q of issue 6 is missing", name)
		}
	}
	for _, name := range []string{"shard", "merge-job", "merge", "shards-dir", "trust", "shard-results"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %q of issue 17 is missing", name)
		}
	}
	if _, ok := a.Inputs["reuse-dir"]; !ok {
		t.Error(`input "reuse-dir" of issue 16 is missing`)
	}
	for _, name := range []string{"policy-required", "retention-days", "comment"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %q of issue 27 is missing", name)
		}
	}
	if d := a.Inputs["comment"].Default; d != "false" {
		t.Errorf("comment defaults to %q: a comment needs pull-requests: write, so it is opt-in", d)
	}
	for _, name := range []string{"passed", "failed", "missing", "skipped", "summary-path"} {
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("output %q of issue 27 is missing", name)
		}
	}
	for _, name := range []string{"base-proof", "prove-base"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %q of issue 26 is missing", name)
		}
	}
	if d := a.Inputs["base-proof"].Default; d != "false" {
		t.Errorf("base-proof defaults to %q: restoring needs the signing key, so it is opt-in", d)
	}
	if d := a.Inputs["caches"].Default; d != "true" {
		t.Errorf("input \"caches\" of issue 26 defaults to %q, want true", d)
	}
	if len(a.Inputs) != 27 || len(a.Outputs) != 9 {
		t.Errorf("%d inputs and %d outputs, want 27 and 9", len(a.Inputs), len(a.Outputs))
	}
	// The Summarize step talks to GitHub with the token after the verdict:
	// it never holds the signing key.
	for _, s := range a.Runs.Steps {
		for k, v := range s.Env {
			if s.Name == "Summarize" && (strings.Contains(v, "signing-key") || strings.Contains(v, "secrets.") || k == "RUNMILL_SIGNING_KEY") {
				t.Errorf("the Summarize step maps %s = %s", k, v)
			}
		}
	}
	for _, name := range []string{"prepare-dependencies", "dependency-scripts"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %q of issue 15 is missing", name)
		}
	}
	// Issue 15: the step that runs the package manager (with the network)
	// never sees the signing key or a token, and scripts are off by default.
	found := false
	for _, s := range a.Runs.Steps {
		if s.Name != "Prepare dependencies" {
			continue
		}
		found = true
		for k, v := range s.Env {
			// It is told whether the job holds the key, to refuse
			// dependency-scripts there, and nothing more.
			if k == "RUNMILL_SIGNING_KEY_SET" && v == "${{ inputs.signing-key != '' }}" {
				continue
			}
			if strings.Contains(v, "signing-key") || strings.Contains(v, "github-token") || strings.Contains(v, "secrets.") {
				t.Errorf("the dependency step maps %s = %s", k, v)
			}
		}
		for _, k := range []string{"RUNMILL_SIGNING_KEY", "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN"} {
			if v, ok := s.Env[k]; !ok || v != "" {
				t.Errorf("the dependency step does not blank %s (%q)", k, v)
			}
		}
	}
	if !found {
		t.Error("no Prepare dependencies step")
	}
	if d := a.Inputs["dependency-scripts"].Default; d != "false" {
		t.Errorf("dependency-scripts defaults to %q", d)
	}
}

// TestActionlint lints the composite steps with actionlint, rendered as a
// reusable workflow (actionlint reads action.yml only for the inputs a
// workflow passes it), then every workflow in .github/workflows, the release
// workflow among them. scripts/test.sh sets RUNMILL_ACTIONLINT; with CI=true
// a missing actionlint fails.
func TestActionlint(t *testing.T) {
	bin := actionlintBin(t)
	var meta struct {
		Inputs  map[string]map[string]any `yaml:"inputs"`
		Outputs map[string]map[string]any `yaml:"outputs"`
		Runs    struct {
			Steps []map[string]any `yaml:"steps"`
		} `yaml:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(actionRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]any{}
	for name, in := range meta.Inputs {
		inputs[name] = map[string]any{"type": "string", "required": false, "default": in["default"]}
	}
	outputs := map[string]any{}
	for name, o := range meta.Outputs {
		outputs[name] = o["value"]
	}
	wf := map[string]any{
		"name":        "action.yml rendered for actionlint",
		"on":          map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"permissions": map[string]any{"contents": "read"},
		"jobs": map[string]any{"verify": map[string]any{
			"runs-on": "ubuntu-24.04",
			"outputs": outputs,
			"steps":   meta.Runs.Steps,
		}},
	}
	out, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	lintWorkflow(t, bin, "the composite steps, rendered as a workflow", out)
	// And every workflow of the repository, the release workflow with it.
	workflows, err := filepath.Glob(filepath.Join(actionRoot(t), ".github", "workflows", "*.yml"))
	if err != nil || len(workflows) < 2 {
		t.Fatalf("workflows %q: %v", workflows, err)
	}
	cmd := exec.Command(bin, append([]string{"-color=false"}, workflows...)...)
	cmd.Dir = actionRoot(t)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint on .github/workflows: %v\n%s", err, msg)
	}
}

// actionlintBin is RUNMILL_ACTIONLINT; a test without it skips, or fails
// with CI=true (scripts/test.sh builds actionlint and sets it).
func actionlintBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RUNMILL_ACTIONLINT")
	testreq.Need(t, bin != "", "RUNMILL_ACTIONLINT is not set (scripts/test.sh builds actionlint and sets it)")
	return bin
}

// lintWorkflow runs actionlint on wf as a workflow file of a repository of
// its own; what names it in the failure.
func lintWorkflow(t *testing.T, bin, what string, wf []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".github", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "workflow.yml")
	if err := os.WriteFile(file, wf, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-color=false", file)
	cmd.Dir = filepath.Dir(filepath.Dir(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint on %s: %v\n%s\n--- the workflow\n%s", what, err, out, wf)
	}
}

// The indices of action.yml's steps the tests drive, found by name (steps
// are added around them: the caches' restore, vet, seal and save steps, the
// base proof's name, restore and save).
var (
	stepPreflight = stepIndex("Preflight")
	stepInstall   = stepIndex("Install the released runmill")
	stepRestore   = stepIndex("Restore the build cache")
	stepBuild     = stepIndex("Build runmill")
	stepSave      = stepIndex("Save the build cache")
	stepPrepare   = stepIndex("Prepare dependencies")
	stepVerify    = stepIndex("runmill verify")
	stepUpload    = stepIndex("Upload the evidence")
	stepSummary   = stepIndex("Summarize")
	stepGate      = stepIndex("Gate on the verdict")

	stepNameBaseProof = stepIndex("Name the base proof")
)

// stepIndex is the index of the step named name in action.yml (-1 when
// there is none, which TestStepOrder reports).
func stepIndex(name string) int {
	b, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		panic(err)
	}
	var a actionMeta
	if err := yaml.Unmarshal(b, &a); err != nil {
		panic(err)
	}
	return slices.IndexFunc(a.Runs.Steps, func(s stepMeta) bool { return s.Name == name })
}

func TestStepOrder(t *testing.T) {
	// The order the steps depend on: the build before anything runs
	// runmill, the caches restored and vetted before dependencies are
	// prepared, the base proof restored before verify and saved after it, the upload and the summary before the caches are sealed
	// and saved, the gate last.
	order := []string{"Preflight", "Install the released runmill", "Restore the build cache", "Build runmill", "Save the build cache",
		"Locate the caches", "Restore the Go toolchain caches", "Restore the dependency caches", "Vet the restored caches",
		"Prepare dependencies", "Name the base proof", "Restore the base proof", "runmill verify", "Save the base proof",
		"Upload the evidence", "Summarize",
		"Seal the caches", "Save the Go toolchain caches", "Save the dependency caches", "Gate on the verdict"}
	last := -1
	for _, name := range order {
		i := stepIndex(name)
		if i <= last {
			t.Errorf("step %q is at %d, want it after %d (%s)", name, i, last, strings.Join(order, ", "))
		}
		last = max(last, i)
	}
	a := loadAction(t, filepath.Join(actionRoot(t), "action.yml"))
	if last != len(a.Runs.Steps)-1 {
		t.Errorf("the gate is step %d of %d: it must come last", last, len(a.Runs.Steps))
	}
}
