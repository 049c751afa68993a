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

// The yarn strategy through Verify: is-number and ms from the npm
// registry, installed per commit outside verification by yarn 1 or by
// Berry's node-modules linker (depstest.YarnInstall) and imported for that
// commit; node:test runs in the sandbox with the network off. Under
// Plug'n'Play node loads the prepared .pnp.cjs first, as yarn run does.
const yarnPolicy = `checks:
  - id: unit
    run: node $REQUIRE--test --test-reporter=junit --test-reporter-destination=reports/unit.xml
    dependencies: yarn
    report: {path: reports/unit.xml, format: junit}
`

func TestVerifyYarn(t *testing.T) {
	for _, flavour := range []string{"classic", "berry", "pnp"} {
		t.Run(flavour, func(t *testing.T) { verifyYarn(t, flavour) })
	}
}

func verifyYarn(t *testing.T, flavour string) {
	depstest.Need(t, "node")
	r := gittest.New(t)
	depstest.WriteYarn(t, r, flavour, "2.1.2")
	require := ""
	if flavour == "pnp" {
		require = "-r ./.pnp.cjs "
	}
	r.Write(".runmill/checks.yaml", strings.ReplaceAll(yarnPolicy, "$REQUIRE", require))
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
		from := depstest.YarnInstall(t, r.Dir, commit, flavour)
		if _, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Yarn, Commit: commit, From: from, StateDir: state}); err != nil {
			t.Fatal(err)
		}
	}
	prepare(base)
	change := func(name, ms string) string {
		r.Checkout("main", false)
		r.Checkout(name, true)
		depstest.WriteYarn(t, r, flavour, ms)
		id := r.Commit(name)
		r.Checkout("main", false)
		return id
	}
	bump, breaking := change("bump", "2.1.3"), change("breaking", "2.0.0")

	t.Run("only the base prepared", func(t *testing.T) {
		run := verify(t, r, base, bump, opts)
		for _, want := range []string{
			"RM-VERIFY-005|unit|yarn: the candidate " + bump,
			"runmill deps import --strategy yarn --repo " + r.Dir + " --commit " + bump + " --out " + state + " --from DIR",
		} {
			if run.MergeReady() || !hasRule(run, want) {
				t.Errorf("merge-ready %v; no rule contains %q:\n%s", run.MergeReady(), want, strings.Join(rules(run), "\n"))
			}
		}
	})

	prepare(bump)
	t.Run("both sides prepared", func(t *testing.T) {
		_, key, trust := newTestKey(t)
		run := verify(t, r, base, bump, func(o *engine.VerifyOptions) { opts(o); o.SigningKey = key })
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
		verifyBoundToLockfile(t, r, run, base, bump, pol, trust, "yarn.lock")
		if len(run.Delivery.Checks) < 2 {
			t.Fatalf("%d check runs, want the baseline's and the candidate's", len(run.Delivery.Checks))
		}
		for _, c := range run.Delivery.Checks {
			// The candidate's own harness (its package.json changed) runs
			// on the candidate's install too.
			want := bump
			if c.Phase == record.Baseline {
				want = base
			}
			if c.Coverage != record.Proven || c.Dependencies == nil || c.Dependencies.Strategy != deps.Yarn || c.Dependencies.PreparedFor != want {
				t.Errorf("%s: coverage %s, dependencies %+v", c.Phase, c.Coverage, c.Dependencies)
			}
		}
		d := run.Delivery.Dependencies
		if len(d) != 1 || len(d[0].Changes) != 1 || d[0].Changes[0].Name != "ms" || d[0].Changes[0].To != "2.1.3" {
			t.Fatalf("dependency diff %+v", d)
		}
	})

	prepare(breaking)
	t.Run("a bump that breaks a test", func(t *testing.T) {
		run := verify(t, r, base, breaking, opts)
		if run.MergeReady() || !hasRule(run, "a week is seven days") {
			t.Fatalf("merge-ready %v:\n%s\n%s", run.MergeReady(), strings.Join(rules(run), "\n"), outputs(run))
		}
	})

	t.Run("an edited installed file", func(t *testing.T) {
		var index string
		filepath.WalkDir(filepath.Join(state, "deps", deps.Yarn), func(p string, d fs.DirEntry, err error) error {
			if flavour == "pnp" && strings.HasPrefix(filepath.Base(p), "ms-npm-2.1.3-") {
				index = p // the zip
			}
			if strings.HasSuffix(p, filepath.Join("tree", "ms", "index.js")) && index == "" {
				b, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "package.json"))
				if strings.Contains(string(b), `"version": "2.1.3"`) {
					index = p
				}
			}
			return err
		})
		if index == "" {
			t.Fatal("no cached ms 2.1.3")
		}
		os.Chmod(index, 0o644)
		if err := os.WriteFile(index, []byte("module.exports = () => 604800000;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run := verify(t, r, base, bump, opts)
		if run.MergeReady() || !hasRule(run, "yarn: the candidate "+bump) || !hasRule(run, "was mutated") {
			t.Fatalf("merge-ready %v:\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
	})
}
