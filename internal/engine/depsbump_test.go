package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// Issue 15: a change that updates dependencies is verifiable when each
// side runs on an install prepared for its own lockfile. Real packages
// from the npm registry (semver, mocha), real modules from the Go module
// proxy (go-cmp), through Verify in the sandbox, network off.

const bumpPolicy = `checks:
  - id: unit
    run: npm test
    dependencies: npm
    report: {path: reports/unit.xml, format: junit}
    timeout: 180s
  - id: go
    run: go test -json ./... > reports/go.json
    dependencies: go-modules
    report: {path: reports/go.json, format: go-json}
    timeout: 600s
`

// semverTest passes on semver 7.5.x; 7.6.0 made coerce honour
// includePrerelease, so a bump to 7.6.3 breaks "coerces to a release".
const semverTest = `const assert = require('assert');
const semver = require('semver');
describe('versions', function () {
  it('orders releases', function () { assert.ok(semver.gt('1.10.0', '1.9.0')); });
  it('coerces to a release', function () {
    assert.strictEqual(semver.coerce('1.2.3-rc.1', { includePrerelease: true }).version, '1.2.3');
  });
});
`

func TestVerifyDependencyBump(t *testing.T) {
	depstest.Need(t, "node", "npm", "go")
	r := gittest.New(t)
	depstest.WriteSemver(t, r, "7.5.3")
	depstest.WriteGo(t, r)
	r.Write("test/semver.test.js", semverTest)
	r.Write(".gitignore", "node_modules/\nreports/\n")
	r.Write(".runmill/checks.yaml", bumpPolicy)
	base := r.Commit("base")
	// The operator's preparation of the base: npm ci in the source
	// checkout, go mod download into the declared module cache.
	depstest.NPMCI(t, r.Dir)
	modcache := t.TempDir()
	depstest.GoModDownload(t, r.Dir, modcache)
	// A warmed build cache keeps the go check's runs to seconds; it is
	// warmed for both sides below, as an operator's preparation would.
	buildcache := t.TempDir()
	warm := func(dir string) {
		depstest.Run(t, dir, []string{"GOCACHE=" + buildcache, "GOMODCACHE=" + modcache, "GOFLAGS=-modcacherw", "GOPROXY=off"}, "go", "test", "./...")
	}
	warm(r.Dir)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("dependencies:\n  go_modules:\n    module_cache: "+modcache+"\n    build_cache: "+buildcache+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	opts := func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol; o.StateDir = state }

	bump := candidate(t, r, "bump", func() {
		depstest.WriteSemver(t, r, "7.5.4")
		depstest.WriteGoCmp07(t, r)
	})

	t.Run("only the base prepared", func(t *testing.T) {
		run := verify(t, r, base, bump, opts)
		if run.MergeReady() {
			t.Fatal("merge-ready with no install for the candidate's lockfiles")
		}
		for _, want := range []string{
			"RM-VERIFY-005|unit|npm: the candidate " + bump + ": package-lock.json changed in the candidate and no install was prepared for it",
			"runmill deps import --repo " + r.Dir + " --commit " + bump + " --out " + state + " --from DIR",
			"RM-VERIFY-005|go|go-modules: the candidate " + bump + " has no prepared module cache",
			"github.com/google/go-cmp@v0.7.0 is not in the module cache",
			"go mod download",
		} {
			if !hasRule(run, want) {
				t.Errorf("no rule contains %q:\n%s", want, strings.Join(rules(run), "\n"))
			}
		}
		for _, c := range run.Delivery.Checks {
			switch c.Phase {
			case record.Baseline:
				if !c.Started || c.Dependencies == nil || c.Dependencies.PreparedFor != base {
					t.Errorf("%s baseline: started %v, dependencies %+v", c.CheckID, c.Started, c.Dependencies)
				}
			default:
				// A refused run did not run: no exit code, no duration.
				if c.Started || c.ExitCode != 0 || c.DurationMS != 0 || c.Dependencies != nil {
					t.Errorf("%s candidate refused, yet started %v exit %d duration %d deps %+v", c.CheckID, c.Started, c.ExitCode, c.DurationMS, c.Dependencies)
				}
			}
		}
	})

	// The operator prepares the candidate, outside verification.
	wt := depstest.Worktree(t, r, bump)
	depstest.Run(t, wt, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	depstest.GoModDownload(t, wt, modcache)
	warm(wt)
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.NPM, Commit: bump, From: wt, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	// semver 7.5.3 and 7.5.4 share mocha's whole tree: only what differs
	// is copied.
	if imp.Copy.LinkedBytes == 0 || imp.Copy.CopiedBytes >= imp.Copy.LinkedBytes {
		t.Errorf("the candidate's import copied %d bytes and linked %d: equal packages were copied again", imp.Copy.CopiedBytes, imp.Copy.LinkedBytes)
	}

	t.Run("both sides prepared", func(t *testing.T) {
		_, key, trust := newTestKey(t)
		run := verify(t, r, base, bump, func(o *engine.VerifyOptions) { opts(o); o.SigningKey = key })
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
		// evidence verify holds every install's key to the lockfiles it
		// observes at the bound commits, from git (engine.Expect).
		verifyBoundToLockfile(t, r, run, base, bump, pol, trust, "package-lock.json")
		keys := map[string]map[record.Phase]string{}
		for _, c := range run.Delivery.Checks {
			u := c.Dependencies
			if u == nil || u.Key != evidence.DependencyKey(u.Strategy, u.Inputs) || u.Fingerprint == "" {
				t.Fatalf("%s %s: dependencies %+v", c.CheckID, c.Phase, u)
			}
			if u.PreparedFor != c.Commit {
				t.Errorf("%s %s ran at %s on an install prepared for %s", c.CheckID, c.Phase, c.Commit, u.PreparedFor)
			}
			if keys[c.CheckID] == nil {
				keys[c.CheckID] = map[record.Phase]string{}
			}
			keys[c.CheckID][c.Phase] = u.Key
		}
		// package.json is the npm check's harness (issue 25): the bump
		// edits it, so the check also runs with the change's own harness,
		// on the candidate's install.
		for id, k := range keys {
			if k[record.Baseline] == "" || k[record.Baseline] == k[record.Candidate] {
				t.Errorf("%s: the baseline and the candidate ran on the same install %v", id, k)
			}
			if ch, ok := k[record.CandidateHarness]; (ok || id == "unit") && ch != k[record.Candidate] {
				t.Errorf("%s: the candidate-harness run's install is not the candidate's %v", id, k)
			}
		}
		want := map[string]string{
			"npm node_modules/semver":             "changed 7.5.3 7.5.4",
			"go-modules github.com/google/go-cmp": "changed v0.6.0 v0.7.0",
		}
		got := map[string]string{}
		for _, d := range run.Delivery.Dependencies {
			if d.From != base || d.To != bump {
				t.Errorf("diff between %s and %s", d.From, d.To)
			}
			for _, c := range d.Changes {
				got[c.Strategy+" "+c.Name] = c.Change + " " + c.From + " " + c.To
			}
		}
		if len(got) != len(want) {
			t.Errorf("diff %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("diff %s = %q, want %q", k, got[k], v)
			}
		}
		table := deps.DiffTable(run.Delivery.Dependencies, 20)
		for _, s := range []string{"| npm | node_modules/semver | changed | 7.5.3 | 7.5.4 |", "| go-modules | github.com/google/go-cmp | changed | v0.6.0 | v0.7.0 |"} {
			if !strings.Contains(table, s) {
				t.Errorf("summary table lacks %q:\n%s", s, table)
			}
		}
	})

	breaks := candidate(t, r, "breaks", func() { depstest.WriteSemver(t, r, "7.6.3") })
	bwt := depstest.Worktree(t, r, breaks)
	depstest.Run(t, bwt, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")

	t.Run("an install that does not match the candidate's lockfile", func(t *testing.T) {
		// An edited installed version: the inventory no longer matches.
		hidden := filepath.Join(bwt, "node_modules", ".package-lock.json")
		b, err := os.ReadFile(hidden)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(b), `"version": "7.6.3"`, `"version": "7.5.4"`, 1)
		if edited == string(b) {
			t.Fatal("the install has no semver 7.6.3")
		}
		if err := os.WriteFile(hidden, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.NPM, Commit: breaks, From: bwt, StateDir: state})
		if err == nil || !strings.Contains(err.Error(), "RM-VERIFY-005") || !strings.Contains(err.Error(), "node_modules/semver is installed at 7.5.4, package-lock.json says 7.6.3") {
			t.Fatalf("import of an edited install: %v", err)
		}
		run := verify(t, r, base, breaks, opts)
		if run.MergeReady() || !hasRule(run, "RM-VERIFY-005|unit|npm: the candidate "+breaks) {
			t.Fatalf("merge-ready %v\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
		if err := os.WriteFile(hidden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a bump that breaks a test", func(t *testing.T) {
		if _, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.NPM, Commit: breaks, From: bwt, StateDir: state}); err != nil {
			t.Fatal(err)
		}
		run := verify(t, r, base, breaks, opts)
		if run.MergeReady() || !hasRule(run, "coerces to a release") || hasRule(run, "RM-VERIFY-005") {
			t.Fatalf("merge-ready %v\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
		var removed []string
		for _, d := range run.Delivery.Dependencies {
			for _, c := range d.Changes {
				if c.Change == "removed" {
					removed = append(removed, c.Name)
				}
			}
		}
		// semver 7.6 dropped its lru-cache dependency.
		if !strings.Contains(strings.Join(removed, " "), "node_modules/lru-cache") {
			t.Errorf("removed %v", removed)
		}
	})
}

// verifyBoundToLockfile: run's signed bundle verifies offline against the
// expectations engine.Expect derives from git for base and cand, and is
// refused once the candidate's lockfile is swapped for the base's — each
// install's key is bound to the lockfile at its commit.
func verifyBoundToLockfile(t *testing.T, r *gittest.Repo, run *engine.Run, base, cand, pol string, trust []byte, lockfile string) {
	t.Helper()
	exp, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: pol}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	expDoc, _ := exp.Encode()
	if res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now()}); !res.Valid {
		t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
	}
	exp.Lockfiles[cand][lockfile] = exp.Lockfiles[base][lockfile]
	expDoc, _ = exp.Encode()
	if res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now()}); res.Valid || !strings.Contains(res.Message, "keyed by "+lockfile) {
		t.Fatalf("verified against another %s: %s %s", lockfile, res.Reason, res.Message)
	}
}
