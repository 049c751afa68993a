package engine_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/record"
)

// The pnpm strategy through Verify: is-number and ms from the npm registry,
// installed by pnpm 9 outside verification on each commit's manifests
// alone and imported for that commit; node --test in the sandbox requires
// them through pnpm's symlinked node_modules.

const pnpmPolicy = `checks:
  - id: unit
    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml
    dependencies: pnpm
    report: {path: reports/unit.xml, format: junit}
    timeout: 60s
`

// pnpmTest pins ms's version: the bump to 2.1.3 breaks "ms is pinned"
// unless the change updates it too.
func pnpmTest(ms string) string {
	return "const test = require('node:test');\nconst assert = require('node:assert');\n" +
		"test('one minute', () => assert.strictEqual(require('ms')('1m'), 60000));\n" +
		"test('seven is a number', () => assert.ok(require('is-number')(7)));\n" +
		"test('ms is pinned', () => assert.strictEqual(require('ms/package.json').version, '" + ms + "'));\n"
}

func TestVerifyPnpm(t *testing.T) {
	depstest.Need(t, "node")
	r := gittest.New(t)
	r.Write(".gitignore", "node_modules/\nreports/\n")
	r.Write(".runmill/checks.yaml", pnpmPolicy)
	depstest.WritePnpm(t, r.Dir, "pnpm-basic")
	r.Write("test/ms.test.js", pnpmTest("2.1.2"))
	base := r.Commit("base")
	pol := operatorPolicy(t, "verification:\n  fail_on_skipped_check: true\n")
	state := t.TempDir()
	opts := func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol; o.StateDir = state }
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(commit string) {
		t.Helper()
		if _, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Pnpm, Commit: commit, From: depstest.PnpmPrepare(t, r, commit), StateDir: state}); err != nil {
			t.Fatal(err)
		}
	}
	prepare(base)
	change := func(name, testMS string) string {
		r.Checkout("main", false)
		r.Checkout(name, true)
		depstest.WritePnpm(t, r.Dir, "pnpm-bump")
		r.Write("test/ms.test.js", pnpmTest(testMS))
		id := r.Commit(name)
		r.Checkout("main", false)
		return id
	}
	good, breaks := change("bump", "2.1.3"), change("breaks", "2.1.2")

	t.Run("only the base prepared", func(t *testing.T) {
		run := verify(t, r, base, good, opts)
		for _, want := range []string{
			"RM-VERIFY-005|unit|pnpm: the candidate " + good + ": pnpm-lock.yaml changed in the candidate",
			"runmill deps import --strategy pnpm --repo " + r.Dir + " --commit " + good + " --out " + state + " --from DIR",
		} {
			if run.MergeReady() || !hasRule(run, want) {
				t.Errorf("merge-ready %v; no rule contains %q:\n%s", run.MergeReady(), want, strings.Join(rules(run), "\n"))
			}
		}
	})

	prepare(good)
	t.Run("both sides prepared", func(t *testing.T) {
		_, key, trust := newTestKey(t)
		run := verify(t, r, base, good, func(o *engine.VerifyOptions) { opts(o); o.SigningKey = key })
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
		verifyBoundToLockfile(t, r, run, base, good, pol, trust, "pnpm-lock.yaml")
		for _, c := range run.Delivery.Checks {
			// The change edits package.json, so its own harness runs too
			// (candidate-harness), on the candidate's install.
			want := good
			if c.Phase == record.Baseline {
				want = base
			}
			if c.Coverage != record.Proven || c.Dependencies == nil || c.Dependencies.Strategy != deps.Pnpm || c.Dependencies.PreparedFor != want {
				t.Errorf("%s: coverage %s, dependencies %+v", c.Phase, c.Coverage, c.Dependencies)
			}
		}
		d := run.Delivery.Dependencies
		if len(d) != 1 || len(d[0].Changes) != 1 || d[0].Changes[0].Name != "ms" || d[0].Changes[0].From != "2.1.2" || d[0].Changes[0].To != "2.1.3" {
			t.Fatalf("dependency diff %+v", d)
		}
	})

	prepare(breaks)
	t.Run("a bump that breaks a test", func(t *testing.T) {
		run := verify(t, r, base, breaks, opts)
		if run.MergeReady() || !hasRule(run, "ms is pinned") {
			t.Fatalf("merge-ready %v:\n%s\n%s", run.MergeReady(), strings.Join(rules(run), "\n"), outputs(run))
		}
	})

	t.Run("an edited installed file", func(t *testing.T) {
		var lib string
		filepath.WalkDir(filepath.Join(state, "deps", deps.Pnpm), func(p string, d fs.DirEntry, err error) error {
			if strings.HasSuffix(p, filepath.Join("ms@2.1.3", "node_modules", "ms", "index.js")) {
				lib = p
			}
			return err
		})
		if lib == "" {
			t.Fatal("no cached ms@2.1.3 index.js")
		}
		os.Chmod(lib, 0o644)
		if err := os.WriteFile(lib, []byte("module.exports = () => 60000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run := verify(t, r, base, good, opts)
		if run.MergeReady() || !hasRule(run, "RM-VERIFY-005|unit|pnpm: the candidate "+good) || !hasRule(run, "was mutated") {
			t.Fatalf("merge-ready %v:\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
	})
}
