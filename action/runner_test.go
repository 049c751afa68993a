package action_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/actions/actionstest"
)

// This file is a small GitHub Actions runner for one composite action: it
// reads action.yml, evaluates the expressions the action uses (any other is
// a test failure, so the runner cannot silently mis-evaluate one), and runs
// each step as the runner does — `run:` steps with bash --noprofile --norc
// -eo pipefail, a fresh GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and
// GITHUB_STEP_SUMMARY per step, `if:` with the implicit success(), a step's
// env: over what GITHUB_ENV set, and a comparison in an expression written
// into env: as true or false. The `uses:` steps are stood in for:
// upload-artifact copies its path into the workflow run's artifacts with
// its if-no-files-found rule and v4's names, unique in a run unless
// overwrite replaces the earlier one (a re-run job's upload), and a
// retention-days of 1 to 90; download-artifact (downloadArtifact, for the
// workflow's own steps) sees only the current attempt's uploads unless
// given github-token and run-id, which list the whole run's, as GitHub's
// artifact service does after "re-run failed jobs"; cache/restore and
// cache/save keep directories by key in a store every job of one
// repository (a test's fixture) shares (GitHub's cache service: a later job
// restores what an earlier one saved — the exact key, else the newest
// entry under each of restore-keys' prefixes in turn — and a saved key is
// never overwritten).
//
// Where it is not the runner: the tests run as root, so the steps do too
// (the runner user on GitHub's images is uid 1001 with passwordless sudo);
// the stub sudo of action_test.go logs each call and runs it as root with
// sudo's secure_path and environment reset. What only the runner user
// cannot do is therefore proven where it matters by a third user: the
// package managers the Prepare step confines run as a throwaway uid for
// real, and a hostile program of the pull request running there would
// leave its mark in a world-writable directory.

type actionMeta struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string     `yaml:"using"`
		Steps []stepMeta `yaml:"steps"`
	} `yaml:"runs"`
}

type stepMeta struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

func loadAction(t *testing.T, path string) *actionMeta {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a actionMeta
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("%s: runs.using is %q, want composite", path, a.Runs.Using)
	}
	return &a
}

// job is one job running the action once.
type job struct {
	t          *testing.T
	action     *actionMeta
	actionPath string
	root       string            // the runner's work root
	actionRef  string            // github.action_ref: the ref of uses: (empty for a local action)
	actionRepo string            // github.action_repository
	env        map[string]string // the job's environment (GITHUB_*, RUNNER_*, PATH …)
	inputs     map[string]string // with: of the workflow step
	event      map[string]any
	path       []string // GITHUB_PATH additions, latest first

	steps     map[string]*stepResult // by id
	ran       []stepResult           // in order, skipped ones included
	failed    bool
	summary   bytes.Buffer
	log       bytes.Buffer
	artifacts string // the workflow run's uploaded artifacts, one directory per name
	// store records which attempt of the workflow run uploaded each
	// artifact and its retention; jobs of one run (runJob) share it.
	store   *artifactStore
	attempt int // github.run_attempt
	// afterStep, when set, is called after each step that ran, for a test
	// to look at the runner between steps (the runner itself has no such
	// hook).
	afterStep func(i int, r stepResult)
}

type stepResult struct {
	Name     string
	Outcome  string // success, failure, skipped
	Outputs  map[string]string
	ExitCode int
	Log      string
	// Annotations are the ::error/::warning/::notice commands the runner
	// would obey in Log (stop-commands honoured), as "level title: message".
	Annotations []string
}

// annotations reads a step's log as the runner's command manager does: a
// line that starts with "::" (after leading blanks) is a command, unless
// commands are stopped by ::stop-commands::TOKEN until a line ::TOKEN::.
func annotations(log string) []string {
	var out []string
	stop := ""
	for _, line := range strings.Split(log, "\n") {
		l := strings.TrimLeft(line, " \t")
		if stop != "" {
			if l == "::"+stop+"::" {
				stop = ""
			}
			continue
		}
		if tok, ok := strings.CutPrefix(l, "::stop-commands::"); ok {
			stop = tok
			continue
		}
		for _, level := range []string{"error", "warning", "notice"} {
			rest, ok := strings.CutPrefix(l, "::"+level)
			if !ok || (rest != "" && rest[0] != ' ' && rest[0] != ':') {
				continue
			}
			props, msg, _ := strings.Cut(strings.TrimPrefix(rest, " "), "::")
			title := ""
			for _, p := range strings.Split(props, ",") {
				if v, ok := strings.CutPrefix(p, "title="); ok {
					title = strings.NewReplacer("%3A", ":", "%2C", ",", "%0A", "\n", "%0D", "\r", "%25", "%").Replace(v)
				}
			}
			msg = strings.NewReplacer("%0A", "\n", "%0D", "\r", "%25", "%").Replace(msg)
			out = append(out, level+" "+title+": "+msg)
		}
	}
	return out
}

func (j *job) run() {
	t := j.t
	j.steps = map[string]*stepResult{}
	for i, s := range j.action.Runs.Steps {
		r := stepResult{Name: s.Name, Outputs: map[string]string{}}
		if !j.condition(s.If) {
			r.Outcome = "skipped"
		} else {
			r = j.exec(i, s)
		}
		j.ran = append(j.ran, r)
		if s.ID != "" {
			j.steps[s.ID] = &j.ran[len(j.ran)-1]
		}
		if r.Outcome == "failure" {
			j.failed = true
		}
		t.Logf("step %q: %s", s.Name, r.Outcome)
		if j.afterStep != nil && r.Outcome != "skipped" {
			j.afterStep(i, r)
		}
	}
}

// outputs evaluates the action's outputs after the run.
func (j *job) outputs() map[string]string {
	out := map[string]string{}
	for name, o := range j.action.Outputs {
		out[name] = j.expand(o.Value)
	}
	return out
}

// condition evaluates an if: as the runner does: without a status
// function, success() is implied.
func (j *job) condition(cond string) bool {
	cond = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(cond), "${{"), "}}"))
	status := regexp.MustCompile(`\b(always|success|failure|cancelled)\(\)`)
	if !status.MatchString(cond) {
		if cond == "" {
			cond = "success()"
		} else {
			cond = "success() && (" + cond + ")"
		}
	}
	if strings.Contains(cond, "||") {
		j.t.Fatalf("the test runner evaluates conjunctions only, not %q", cond)
	}
	// A chain of && only: grouping parentheses change nothing, so they go
	// (a call's "()" stays).
	var flat strings.Builder
	for i, c := range cond {
		switch {
		case c == '(' && (i == 0 || !isIdent(cond[i-1])):
		case c == ')' && (i == 0 || cond[i-1] != '('):
		default:
			flat.WriteRune(c)
		}
	}
	return j.boolExpr(flat.String())
}

func isIdent(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (j *job) boolExpr(e string) bool {
	e = strings.TrimSpace(e)
	if a, b, ok := strings.Cut(e, "&&"); ok {
		return j.boolExpr(a) && j.boolExpr(b)
	}
	switch e {
	case "always()":
		return true
	case "success()":
		return !j.failed
	case "failure()":
		return j.failed
	case "cancelled()":
		return false
	}
	if a, b, ok := strings.Cut(e, "!="); ok {
		return j.value(a) != j.value(b)
	}
	if a, b, ok := strings.Cut(e, "=="); ok {
		return j.value(a) == j.value(b)
	}
	j.t.Fatalf("the test runner cannot evaluate the condition %q", e)
	return false
}

var exprRe = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// expand replaces every ${{ … }} in s.
func (j *job) expand(s string) string {
	return exprRe.ReplaceAllStringFunc(s, func(m string) string {
		return j.value(exprRe.FindStringSubmatch(m)[1])
	})
}

// value evaluates one context reference or string literal.
func (j *job) value(e string) string {
	e = strings.TrimSpace(e)
	if len(e) >= 2 && e[0] == '\'' && e[len(e)-1] == '\'' {
		return strings.ReplaceAll(e[1:len(e)-1], "''", "'")
	}
	// A comparison outside if: is a boolean, which the runner writes into
	// env: as true or false (strings compare case-insensitively).
	if a, b, ok := strings.Cut(e, "!="); ok {
		return strconv.FormatBool(!strings.EqualFold(j.value(a), j.value(b)))
	}
	if a, b, ok := strings.Cut(e, "=="); ok {
		return strconv.FormatBool(strings.EqualFold(j.value(a), j.value(b)))
	}
	parts := strings.Split(e, ".")
	switch {
	case parts[0] == "inputs" && len(parts) == 2:
		in, declared := j.action.Inputs[parts[1]]
		if !declared {
			j.t.Fatalf("expression %q names an undeclared input", e)
		}
		if v, ok := j.inputs[parts[1]]; ok {
			return v
		}
		return j.expand(in.Default)
	case e == "github.action_path":
		return j.actionPath
	case e == "github.action_ref":
		return j.actionRef
	case e == "github.action_repository":
		return j.actionRepo
	case e == "github.token":
		return j.env["RUNMILL_TEST_TOKEN"]
	case parts[0] == "github" && len(parts) > 2 && parts[1] == "event":
		var v any = j.event
		for _, p := range parts[2:] {
			m, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = m[p]
		}
		switch v := v.(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			b, _ := json.Marshal(v)
			return string(b)
		}
	case parts[0] == "steps" && len(parts) == 4 && parts[2] == "outputs":
		if s := j.steps[parts[1]]; s != nil {
			return s.Outputs[parts[3]]
		}
		return ""
	case parts[0] == "steps" && len(parts) == 3 && (parts[2] == "outcome" || parts[2] == "conclusion"):
		if s := j.steps[parts[1]]; s != nil {
			return s.Outcome
		}
		return ""
	case e == "github.run_id":
		return j.env["GITHUB_RUN_ID"]
	case e == "github.run_attempt":
		return strconv.Itoa(j.attempt)
	case e == "runner.temp":
		return j.env["RUNNER_TEMP"]
	}
	j.t.Fatalf("the test runner cannot evaluate the expression %q", e)
	return ""
}

func (j *job) exec(i int, s stepMeta) stepResult {
	t := j.t
	r := stepResult{Name: s.Name, Outputs: map[string]string{}}
	switch {
	case s.Uses != "":
		return j.uses(s)
	case s.Run == "":
		t.Fatalf("step %q has neither uses nor run", s.Name)
	case s.Shell != "bash":
		t.Fatalf("step %q: a composite run step needs shell: bash, has %q", s.Name, s.Shell)
	}
	files := filepath.Join(j.env["RUNNER_TEMP"], "_runner_file_commands")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	rt := map[string]string{}
	for _, k := range []string{"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_STATE"} {
		rt[k] = filepath.Join(files, fmt.Sprintf("%s_%d", strings.ToLower(k), i))
		if err := os.WriteFile(rt[k], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(j.env["RUNNER_TEMP"], fmt.Sprintf("step-%d.sh", i))
	if err := os.WriteFile(script, []byte(j.expand(s.Run)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for k, v := range j.env {
		env[k] = v
	}
	for k, v := range rt {
		env[k] = v
	}
	env["GITHUB_ACTION_PATH"] = j.actionPath
	if len(j.path) > 0 {
		env["PATH"] = strings.Join(j.path, ":") + ":" + env["PATH"]
	}
	for k, v := range s.Env {
		env[k] = j.expand(v)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = j.env["GITHUB_WORKSPACE"]
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	r.Log = log.String()
	r.Annotations = annotations(r.Log)
	fmt.Fprintf(&j.log, "##[group]%s\n%s##[endgroup]\n", s.Name, r.Log)
	r.Outcome = "success"
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("step %q: %v", s.Name, err)
		}
		r.Outcome, r.ExitCode = "failure", ee.ExitCode()
	}
	outs, err := actionstest.ReadFileCommands(rt["GITHUB_OUTPUT"])
	if err != nil {
		t.Fatalf("step %q wrote a GITHUB_OUTPUT the runner rejects: %v", s.Name, err)
	}
	r.Outputs = outs
	envs, err := actionstest.ReadFileCommands(rt["GITHUB_ENV"])
	if err != nil {
		t.Fatalf("step %q wrote a GITHUB_ENV the runner rejects: %v", s.Name, err)
	}
	for k, v := range envs {
		j.env[k] = v
	}
	if b, _ := os.ReadFile(rt["GITHUB_PATH"]); len(b) > 0 {
		for _, p := range strings.Fields(string(b)) {
			j.path = append([]string{p}, j.path...)
		}
	}
	sum, _ := os.ReadFile(rt["GITHUB_STEP_SUMMARY"])
	j.summary.Write(sum)
	return r
}

var pinned = regexp.MustCompile(`^[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}$`)

// caches is the cache service's store, shared by every job of the test
// binary (testMain removes it): one directory per key.
var caches struct {
	once sync.Once
	dir  string
	mu   sync.Mutex
	seq  int // saves so far: the newest entry of a prefix wins
}

// cacheScope is the directory of the repository's caches: GitHub keeps
// caches per repository, and each test's fixture is one.
func (j *job) cacheScope() string {
	sum := sha256.Sum256([]byte(j.env["GITHUB_REPOSITORY"] + "\x00" + j.env["GITHUB_WORKSPACE"]))
	return filepath.Join(caches.dir, hex.EncodeToString(sum[:8]))
}

// newestCache is the key saved last in scope that starts with prefix.
func newestCache(t *testing.T, scope, prefix string) string {
	ents, _ := os.ReadDir(scope)
	best, bestSeq := "", -1
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seq")
		key := strings.ReplaceAll(name, "%2F", "/")
		if !ok || !strings.HasPrefix(key, prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(scope, e.Name()))
		n, aerr := strconv.Atoi(string(b))
		if err != nil || aerr != nil {
			t.Fatalf("the cache store's %s: %v %v", e.Name(), err, aerr)
		}
		if n > bestSeq {
			best, bestSeq = key, n
		}
	}
	return best
}

// copyTree copies a directory as the cache's tar does: symlinks as links,
// hard links within the tree as links, modes and times kept.
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("cp", "-a", "--", src+"/.", dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a: %v %s", err, out)
	}
	return nil
}

// uses stands in for the actions action.yml uses.
func (j *job) uses(s stepMeta) stepResult {
	t := j.t
	r := stepResult{Name: s.Name, Outputs: map[string]string{}, Outcome: "success"}
	if !pinned.MatchString(s.Uses) {
		t.Fatalf("step %q uses %q: actions are pinned by full commit SHA", s.Name, s.Uses)
	}
	with := map[string]string{}
	for k, v := range s.With {
		with[k] = j.expand(v)
	}
	fail := func(format string, args ...any) stepResult {
		r.Outcome, r.Log = "failure", fmt.Sprintf(format, args...)
		fmt.Fprintf(&j.log, "##[error]%s\n", r.Log)
		return r
	}
	switch name, _, _ := strings.Cut(s.Uses, "@"); name {
	case "actions/cache/restore", "actions/cache/save":
		path, key := with["path"], with["key"]
		if path == "" || key == "" {
			return fail("Input required and not supplied: path and key")
		}
		caches.once.Do(func() {
			var err error
			if caches.dir, err = os.MkdirTemp("", "runmill-action-caches-"); err != nil {
				t.Fatal(err)
			}
		})
		scope := j.cacheScope()
		stored := filepath.Join(scope, strings.ReplaceAll(key, "/", "%2F"))
		_, err := os.Stat(stored)
		if name == "actions/cache/restore" {
			r.Outputs["cache-hit"] = "false"
			r.Outputs["cache-primary-key"] = key
			matched := ""
			if err == nil {
				matched = key
				r.Outputs["cache-hit"] = "true"
			} else {
				// restore-keys, in order: the newest entry saved under
				// each prefix.
				for _, prefix := range strings.Split(with["restore-keys"], "\n") {
					if prefix = strings.TrimSpace(prefix); prefix != "" && matched == "" {
						matched = newestCache(t, scope, prefix)
					}
				}
			}
			if matched != "" {
				if err := copyTree(filepath.Join(scope, strings.ReplaceAll(matched, "/", "%2F")), path); err != nil {
					return fail("restoring: %v", err)
				}
				r.Outputs["cache-matched-key"] = matched
				r.Log = "Cache restored from key: " + matched
			}
			return r
		}
		if err == nil {
			r.Log = "Failed to save: Unable to reserve cache with key " + key + ", another job may be creating this cache."
			return r
		}
		if _, err := os.Stat(path); err != nil {
			return fail("Path Validation Error: Path(s) specified in the action for caching do(es) not exist")
		}
		if err := copyTree(path, stored); err != nil {
			return fail("saving: %v", err)
		}
		caches.mu.Lock()
		caches.seq++
		seq := caches.seq
		caches.mu.Unlock()
		if err := os.WriteFile(stored+".seq", []byte(strconv.Itoa(seq)), 0o644); err != nil {
			t.Fatal(err)
		}
	case "actions/upload-artifact":
		name, path := with["name"], with["path"]
		if name == "" {
			name = "artifact"
		}
		if path == "" {
			return fail("Input required and not supplied: path")
		}
		dst := filepath.Join(j.artifacts, name)
		if _, err := os.Stat(dst); err == nil {
			if with["overwrite"] != "true" {
				return fail("an artifact named %q already exists in this workflow run", name)
			}
			if err := os.RemoveAll(dst); err != nil {
				return fail("overwriting: %v", err)
			}
		}
		days := with["retention-days"]
		if n, err := strconv.Atoi(days); days != "" && (err != nil || n < 1 || n > 90) {
			return fail("retention-days %q: must be a number from 1 to 90", days)
		}
		n := 0
		_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
		if n == 0 {
			if with["if-no-files-found"] == "error" {
				return fail("No files were found with the provided path: %s. No artifacts will be uploaded.", path)
			}
			return r
		}
		if err := os.CopyFS(dst, os.DirFS(path)); err != nil {
			return fail("uploading: %v", err)
		}
		j.store.put(name, j.attempt, days)
		// v4's outputs: the artifact's id and its page in the workflow run.
		r.Outputs["artifact-id"] = "1"
		r.Outputs["artifact-url"] = j.env["GITHUB_SERVER_URL"] + "/" + j.env["GITHUB_REPOSITORY"] + "/actions/runs/" + j.env["GITHUB_RUN_ID"] + "/artifacts/1"
	default:
		t.Fatalf("step %q uses %q, which the test runner does not stand in for", s.Name, s.Uses)
	}
	return r
}

// artifactStore is what GitHub knows of a workflow run's artifacts: the
// attempt that uploaded each (by name) and its retention-days.
type artifactStore struct {
	mu        sync.Mutex
	attempt   map[string]int
	retention map[string]string
}

func (a *artifactStore) put(name string, attempt int, days string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.attempt == nil {
		a.attempt, a.retention = map[string]int{}, map[string]string{}
	}
	a.attempt[name], a.retention[name] = attempt, days
}

// downloadArtifact stands in for actions/download-artifact@v4 with a
// workflow step's with: (expanded): the artifacts matching pattern (or
// name) into path, one directory each. Without github-token and run-id it
// asks the runner's artifact service, which answers for the current
// attempt only; with them the REST API, which lists the run's artifacts
// whatever attempt uploaded them (the newest of a name: overwrite leaves
// one). None found fails the step, as v4 does.
func (j *job) downloadArtifact(with map[string]string) stepResult {
	r := stepResult{Name: "download-artifact", Outputs: map[string]string{}, Outcome: "success"}
	pattern := with["pattern"]
	if pattern == "" {
		pattern = with["name"]
	}
	wholeRun := with["github-token"] != "" && with["run-id"] == j.env["GITHUB_RUN_ID"]
	j.store.mu.Lock()
	var names []string
	for name, attempt := range j.store.attempt {
		if ok, _ := filepath.Match(pattern, name); ok && (wholeRun || attempt == j.attempt) {
			names = append(names, name)
		}
	}
	j.store.mu.Unlock()
	if len(names) == 0 {
		r.Outcome, r.Log = "failure", "Unable to download artifact(s): No artifacts found for run"
		return r
	}
	for _, name := range names {
		if err := os.CopyFS(filepath.Join(with["path"], name), os.DirFS(filepath.Join(j.artifacts, name))); err != nil {
			j.t.Fatal(err)
		}
	}
	r.Log = fmt.Sprintf("downloaded %d artifacts", len(names))
	return r
}

func (j *job) order() []string {
	var out []string
	for _, r := range j.ran {
		if r.Outcome != "skipped" {
			out = append(out, r.Name)
		}
	}
	return out
}
