package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/treehash"
)

// The prepared-dependency tests run real projects: mocha installed with npm
// ci from the npm registry, and a Go module whose dependency comes from the
// module proxy. Each runs through Verify in the sandbox, network off.

const npmPolicy = `checks:
  - id: unit
    run: npm test
    dependencies: npm
    report: {path: reports/unit.xml, format: junit}
    timeout: 180s
  - id: readonly
    run: sh tests/hostile.sh > reports/ro.tap
    dependencies: npm
    report: {path: reports/ro.tap, format: tap}
    timeout: 60s
`

// hostile tries every way to change the shared cache through the view; each
// attempt that fails is a passing TAP point. The view is copy-on-write
// (deps/cow.go): a new entry at its top level is the check's own, in the
// discarded upper layer, but no installed file or package can be changed,
// renamed or removed.
const hostile = `f=node_modules/mocha/package.json
n=0
try() { n=$((n+1)); if sh -c "$2" >/dev/null 2>&1; then echo "not ok $n $1"; else echo "ok $n $1"; fi; }
echo 1..9
try write "echo x >> $f"
try chmod "chmod 666 $f"
try truncate "truncate -s 0 $f"
try rename "mv $f $f.x"
try unlink "rm $f"
try mkdir "mkdir node_modules/mocha/new"
try unlink-bin "rm node_modules/.bin/mocha"
try rename-package "mv node_modules/mocha node_modules/mocha.x"
try replace-package "rm -rf node_modules/mocha"
`

func npmProject(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	depstest.Need(t, "node", "npm")
	r := gittest.New(t)
	depstest.WriteNPM(t, r)
	r.Write(".runmill/checks.yaml", npmPolicy)
	r.Write("tests/hostile.sh", hostile)
	base := r.Commit("base")
	depstest.NPMCI(t, r.Dir)
	return r, base
}

func candidate(t *testing.T, r *gittest.Repo, name string, change func()) string {
	t.Helper()
	r.Checkout("main", false)
	r.Checkout(name, true)
	change()
	// Only what the change wrote: the installed node_modules stays out
	// (a test that un-ignores it must not commit it).
	r.Git("add", "-u")
	r.Git("add", "test")
	r.Git("commit", "-q", "--allow-empty", "-m", name)
	id := r.Git("rev-parse", "HEAD")
	// The source checkout stays at the base, as the operator keeps it.
	r.Checkout("main", false)
	return id
}

func TestVerifyNPM(t *testing.T) {
	r, base := npmProject(t)
	state := t.TempDir()
	withState := func(o *engine.VerifyOptions) { o.StateDir = state }

	cand := candidate(t, r, "adds-a-test", func() {
		r.Write("test/total.test.js", "const assert = require('assert');\nit('totals', () => assert.ok(true));\n")
	})
	run := verify(t, r, base, cand, withState)
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
	}
	for _, c := range run.Delivery.Checks {
		if c.Coverage != record.Proven || c.Report == nil || c.Report.Inventory == nil || len(c.Report.Inventory.Passed) == 0 {
			t.Errorf("%s (%s): coverage %s, report %+v", c.CheckID, c.Phase, c.Coverage, c.Report)
		}
		if c.CheckID == "readonly" && c.Report != nil && c.Report.Inventory != nil &&
			(len(c.Report.Inventory.Passed) != 9 || len(c.Report.Inventory.Failed) != 0) {
			t.Errorf("a change through the view succeeded: %+v", c.Report.Inventory)
		}
		if !strings.Contains(strings.Join(c.Notes, "\n"), "prepared dependencies npm") {
			t.Errorf("%s: notes %v lack the receipt", c.CheckID, c.Notes)
		}
	}
	// The readonly check passed: every write, chmod, truncate, rename and
	// unlink through the view failed. Reuse re-verifies every cached byte.
	again := verify(t, r, base, cand, withState)
	if !again.MergeReady() {
		t.Fatalf("second run not merge-ready:\n%s", strings.Join(rules(again), "\n"))
	}
	if n := strings.Join(again.Delivery.Checks[0].Notes, "\n"); !strings.Contains(n, "reused, every byte verified") {
		t.Fatalf("second run did not reuse the verified cache: %s", n)
	}

	// A mutated cache fails the next run with RM-VERIFY-005.
	matches, _ := filepath.Glob(filepath.Join(state, "deps", "npm", "*", "tree", "mocha", "package.json"))
	if len(matches) != 1 {
		t.Fatalf("cache entries: %v", matches)
	}
	os.Chmod(matches[0], 0o644)
	if err := os.WriteFile(matches[0], []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	mutated := verify(t, r, base, cand, withState)
	if mutated.MergeReady() || !hasRule(mutated, "RM-VERIFY-005") || !hasRule(mutated, "was mutated") {
		t.Fatalf("mutated cache: merge-ready %v\n%s", mutated.MergeReady(), strings.Join(rules(mutated), "\n"))
	}

	for _, tc := range []struct {
		name   string
		change func()
		want   string
	}{
		{"edits-the-lockfile", func() {
			b, _ := os.ReadFile(filepath.Join(r.Dir, "package-lock.json"))
			r.Write("package-lock.json", strings.Replace(string(b), `"version": "1.0.0"`, `"version": "1.0.3"`, 1))
		}, "package-lock.json changed in the candidate"},
		{"un-ignores-node-modules", func() { r.Write(".gitignore", "reports/\n") }, "node_modules/ is not ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cand := candidate(t, r, tc.name, tc.change)
			run := verify(t, r, base, cand, nil)
			if run.MergeReady() || !hasRule(run, "dependencies.unprepared|RM-VERIFY-005") || !hasRule(run, tc.want) {
				t.Fatalf("merge-ready %v\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
			}
		})
	}
}

// vitest 3 brings platform-specific native packages (rollup, esbuild): the
// lockfile lists every platform's, the install holds this one's. With a
// config file vite bundles it into node_modules/.vite-temp before loading
// it, which failed on the read-only view at both sides (issue 24): the view
// is copy-on-write, the write lands in the run's upper layer, and the
// cached install is unchanged.
func TestVerifyNPMVitest(t *testing.T) {
	depstest.Need(t, "node", "npm")
	r := gittest.New(t)
	depstest.WriteVitest(t, r)
	r.Write("vitest.config.mjs", "import { defineConfig } from 'vitest/config';\nexport default defineConfig({ test: { include: ['test/**/*.test.js'] } });\n")
	// The command proves the view is the overlay (a silent fall-back to
	// the read-only bind fails it); the test writes a babel-style cache.
	r.Write(".runmill/checks.yaml", `checks:
  - id: unit
    run: grep -q ' /runmill/checkout/node_modules .* - overlay ' /proc/self/mountinfo && npm test
    dependencies: npm
    report: {path: reports/unit.xml, format: junit}
    timeout: 180s
`)
	r.Write("test/cache.test.js", `import { it, expect } from 'vitest';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
it('keeps a cache in node_modules', () => {
  mkdirSync('node_modules/.cache/rm', { recursive: true });
  writeFileSync('node_modules/.cache/rm/entry', 'cached');
  expect(readFileSync('node_modules/.cache/rm/entry', 'utf8')).toBe('cached');
});
`)
	base := r.Commit("base")
	depstest.NPMCI(t, r.Dir)
	cand := candidate(t, r, "adds-a-test", func() {
		r.Write("test/total.test.js", "import { it, expect } from 'vitest';\nit('totals', () => expect(1).toBe(1));\n")
	})
	state := t.TempDir()
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.StateDir = state })
	if !run.MergeReady() {
		t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
	}
	for _, c := range run.Delivery.Checks {
		if c.Coverage != record.Proven || c.Report == nil || c.Report.Inventory == nil || len(c.Report.Inventory.Passed) < 3 {
			t.Errorf("%s (%s): coverage %s, report %+v", c.CheckID, c.Phase, c.Coverage, c.Report)
		}
	}
	// Both sides used the one cache entry; every byte of it is still the
	// one its receipt recorded at import, and nothing the checks wrote
	// (.vite-temp, .cache) is in it.
	entries, _ := filepath.Glob(filepath.Join(state, "deps", "npm", "*", "receipt.json"))
	if len(entries) != 1 {
		t.Fatalf("cache entries: %v", entries)
	}
	var receipt struct{ Fingerprint string }
	if b, err := os.ReadFile(entries[0]); err != nil || json.Unmarshal(b, &receipt) != nil {
		t.Fatalf("receipt: %v %s", err, b)
	}
	tree := filepath.Join(filepath.Dir(entries[0]), "tree")
	sum, _, err := treehash.Sum(context.Background(), tree, treehash.Options{})
	if err != nil || sum.String() != receipt.Fingerprint {
		t.Fatalf("cache entry after the run: %v %s, receipt %s", err, sum, receipt.Fingerprint)
	}
	for _, w := range []string{".vite-temp", ".cache"} {
		if _, err := os.Lstat(filepath.Join(tree, w)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s reached the cache: %v", w, err)
		}
	}
	// The upper layers went with their runs: no view and no mount is left.
	if views, _ := filepath.Glob(filepath.Join(state, "checkouts", "*", "views", "*")); len(views) != 0 {
		t.Errorf("views left after the run: %v", views)
	}
	if mounts, err := mountinfo.Under(state); err != nil || len(mounts) != 0 {
		t.Errorf("mounts left under the state directory: %v %v", mounts, err)
	}

	// A lie in the runner's configuration (issue 25): a new vitest.config.js,
	// which vitest prefers over the pinned vitest.config.mjs, loads a setup
	// file that makes toBe pass whatever it is given, and a base test is
	// broken. The new config is a harness file, kept out of the base-harness
	// run: the broken test fails there, whatever the change's harness says.
	lie := candidate(t, r, "neuters-toBe", func() {
		r.Write("vitest.config.js", "import { defineConfig } from 'vitest/config';\nexport default defineConfig({ test: { include: ['test/**/*.test.js'], setupFiles: ['./test/setup.js'] } });\n")
		r.Write("test/setup.js", "import { expect } from 'vitest';\nexpect.extend({ toBe() { return { pass: true, message: () => '' }; } });\n")
		r.Write("test/cart.test.js", strings.Replace(mustRead(t, filepath.Join(r.Dir, "test/cart.test.js")), "toBe(350)", "toBe(351)", 1))
		r.Git("add", "vitest.config.js")
	})
	lied := verify(t, r, base, lie, func(o *engine.VerifyOptions) { o.StateDir = state })
	if lied.MergeReady() {
		t.Fatalf("a neutered toBe is merge-ready:\n%s", outputs(lied))
	}
	var ownPassed, baseFailed bool
	for _, c := range lied.Delivery.Checks {
		switch c.Phase {
		case record.Candidate:
			baseFailed = c.Report != nil && c.Report.Inventory != nil && len(c.Report.Inventory.Failed) == 1 &&
				strings.Contains(strings.Join(c.Notes, "\n"), "vitest.config.js")
		case record.CandidateHarness:
			// The lie works with the change's own harness: without the
			// pinning this change would pass.
			ownPassed = c.Status == record.Passed
		}
	}
	if !baseFailed || !ownPassed {
		t.Fatalf("want the base-harness run to fail the broken test naming vitest.config.js (%v) and the lie to pass with its own harness (%v):\n%s\n%s",
			baseFailed, ownPassed, strings.Join(rules(lied), "\n"), outputs(lied))
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const goPolicy = `checks:
  - id: go
    run: go test -json ./... > reports/go.json
    dependencies: go-modules
    report: {path: reports/go.json, format: go-json}
    timeout: 600s
`

func TestVerifyGoModules(t *testing.T) {
	depstest.Need(t, "go")
	r := gittest.New(t)
	depstest.WriteGo(t, r)
	r.Write(".runmill/checks.yaml", goPolicy)
	r.Write(".gitignore", "reports/\n")
	base := r.Commit("base")
	modcache := t.TempDir()
	depstest.GoModDownload(t, r.Dir, modcache)
	// The operator's prepared build cache: one go test outside verification.
	buildcache := t.TempDir()
	depstest.Run(t, r.Dir, []string{"GOCACHE=" + buildcache, "GOMODCACHE=" + modcache, "GOFLAGS=-modcacherw", "GOPROXY=off"}, "go", "test", "./...")

	r.Checkout("cand", true)
	r.Write("more_test.go", "package rmgo\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n")
	cand := r.Commit("adds a test")
	for _, tc := range []struct {
		name  string
		build string
	}{{"private GOCACHE", ""}, {"prepared build cache", buildcache}} {
		t.Run(tc.name, func(t *testing.T) {
			pol := filepath.Join(t.TempDir(), "policy.yaml")
			doc := "dependencies:\n  go_modules:\n    module_cache: " + modcache + "\n"
			if tc.build != "" {
				doc += "    build_cache: " + tc.build + "\n"
			}
			if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol })
			if !run.MergeReady() {
				t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
			}
			var checkMS []int64
			for _, c := range run.Delivery.Checks {
				if c.Coverage != record.Proven {
					t.Errorf("%s: coverage %s", c.Phase, c.Coverage)
				}
				checkMS = append(checkMS, c.DurationMS)
			}
			t.Logf("%s: run %s, check runs (base, candidate) %v ms", tc.name, time.Since(start).Round(time.Millisecond), checkMS)
		})
	}

	t.Run("go.sum changed", func(t *testing.T) {
		r.Checkout("main", false)
		r.Checkout("sum", true)
		b, _ := os.ReadFile(filepath.Join(r.Dir, "go.sum"))
		r.Write("go.sum", string(b)+"golang.org/x/text v0.3.0/go.mod h1:NqM8EUOU14njkJ3fqMW+pc6Ldnwhi/IjpwHt7yyuwOQ=\n")
		cand := r.Commit("edits go.sum")
		pol := filepath.Join(t.TempDir(), "policy.yaml")
		os.WriteFile(pol, []byte("dependencies:\n  go_modules:\n    module_cache: "+modcache+"\n"), 0o644)
		run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol })
		// Its side is verified against its own go.sum: the module cache
		// lacks the added module, and the refusal names the candidate.
		if run.MergeReady() || !hasRule(run, "RM-VERIFY-005") || !hasRule(run, "the candidate "+cand+" has no prepared module cache") ||
			!hasRule(run, "golang.org/x/text@v0.3.0: go.mod is not in the module cache") {
			t.Fatalf("merge-ready %v\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
	})
}

// outputs are the kept stdout and stderr of every check run, for failures.
func outputs(run *engine.Run) string {
	var b strings.Builder
	for _, c := range run.Delivery.Checks {
		outs := []struct{ name, addr string }{{"stdout", c.Stdout.Artifact}, {"stderr", c.Stderr.Artifact}}
		if c.Report != nil {
			outs = append(outs, struct{ name, addr string }{"report", c.Report.Artifact})
		}
		for _, o := range outs {
			data, _ := os.ReadFile(filepath.Join(run.Dir, "artifacts", o.addr))
			b.WriteString(c.CheckID + " " + string(c.Phase) + " " + o.name + ":\n" + string(data) + "\n")
		}
	}
	return b.String()
}
