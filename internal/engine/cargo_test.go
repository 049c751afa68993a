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

// The cargo strategy through Verify: real crates from Debian's
// librust-*-dev packages (semver 0.9.0 with semver-parser 0.7.0, semver
// 1.0.14) imported per commit as a directory source, cargo test in the
// sandbox with the network off, on the rustup toolchain of the user
// running the tests (bound like harness_discover_test's cargo check).

// cargoPolicy runs libtest's JUnit formatter (unstable: RUSTC_BOOTSTRAP=1)
// over the library's unit tests, one document.
const cargoPolicy = `checks:
  - id: cargo
    run: RUSTUP_HOME=$HOME_RUSTUP RUSTC_BOOTSTRAP=1 cargo test --lib --locked --offline -q -- -Z unstable-options --format junit > reports/cargo.xml
    dependencies: cargo
    report: {path: reports/cargo.xml, format: junit}
    timeout: 600s
`

func TestVerifyCargo(t *testing.T) {
	depstest.Need(t, "cargo")
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	r := gittest.New(t)
	depstest.WriteCargo(t, r, "0.9")
	r.Write(".gitignore", "target/\nreports/\n")
	r.Write(".runmill/checks.yaml", strings.ReplaceAll(cargoPolicy, "$HOME_RUSTUP", filepath.Join(home, ".rustup")))
	base := r.Commit("base")
	pol := operatorPolicy(t, "verification:\n  fail_on_skipped_check: true\n")
	state := t.TempDir()
	opts := func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol; o.StateDir = state }
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// The operator's preparation, outside verification: each commit's
	// crates as a directory source, imported for that commit.
	prepare := func(commit string, crates ...string) {
		t.Helper()
		if _, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Cargo, Commit: commit, From: depstest.CargoCrates(t, crates...), StateDir: state}); err != nil {
			t.Fatal(err)
		}
	}
	prepare(base, "semver-0.9.0", "semver-parser-0.7.0")

	change := func(name, semver string) string {
		r.Checkout("main", false)
		r.Checkout(name, true)
		depstest.WriteCargo(t, r, semver)
		id := r.Commit(name)
		r.Checkout("main", false)
		return id
	}
	both, bump := change("both", "both"), change("bump", "1")

	t.Run("only the base prepared", func(t *testing.T) {
		run := verify(t, r, base, bump, opts)
		for _, want := range []string{
			"RM-VERIFY-005|cargo|cargo: the candidate " + bump + " has no prepared crates",
			"runmill deps import --strategy cargo --repo " + r.Dir + " --commit " + bump + " --out " + state + " --from DIR",
		} {
			if run.MergeReady() || !hasRule(run, want) {
				t.Errorf("merge-ready %v; no rule contains %q:\n%s", run.MergeReady(), want, strings.Join(rules(run), "\n"))
			}
		}
	})

	prepare(both, "semver-0.9.0", "semver-parser-0.7.0", "semver-1.0.14")
	t.Run("both sides prepared", func(t *testing.T) {
		_, key, trust := newTestKey(t)
		run := verify(t, r, base, both, func(o *engine.VerifyOptions) { opts(o); o.SigningKey = key })
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
		// evidence verify holds each side's key to the Cargo.lock it
		// observes at the bound commit, and refuses another one.
		verifyBoundToLockfile(t, r, run, base, both, pol, trust, "Cargo.lock")
		for _, c := range run.Delivery.Checks {
			want := base
			if c.Phase == record.Candidate {
				want = both
			}
			if c.Coverage != record.Proven || c.Dependencies == nil || c.Dependencies.Strategy != deps.Cargo || c.Dependencies.PreparedFor != want {
				t.Errorf("%s: coverage %s, dependencies %+v", c.Phase, c.Coverage, c.Dependencies)
			}
		}
		d := run.Delivery.Dependencies
		if len(d) != 1 || len(d[0].Changes) != 1 || d[0].Changes[0].Name != "semver" || d[0].Changes[0].To != "0.9.0, 1.0.14" {
			t.Fatalf("dependency diff %+v", d)
		}
	})

	prepare(bump, "semver-1.0.14")
	t.Run("a bump that breaks a test", func(t *testing.T) {
		run := verify(t, r, base, bump, opts)
		if run.MergeReady() || !hasRule(run, "tests::build_metadata_is_the_same_release") {
			t.Fatalf("merge-ready %v:\n%s\n%s", run.MergeReady(), strings.Join(rules(run), "\n"), outputs(run))
		}
	})

	t.Run("an edited installed file", func(t *testing.T) {
		var lib string
		filepath.WalkDir(filepath.Join(state, "deps", deps.Cargo), func(p string, d fs.DirEntry, err error) error {
			if strings.HasSuffix(p, filepath.Join("semver-1.0.14", "src", "lib.rs")) {
				lib = p
			}
			return err
		})
		if lib == "" {
			t.Fatal("no cached semver-1.0.14/src/lib.rs")
		}
		os.Chmod(lib, 0o644)
		if err := os.WriteFile(lib, []byte("pub fn planted() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run := verify(t, r, base, both, opts)
		if run.MergeReady() || !hasRule(run, "RM-VERIFY-005|cargo|cargo: the candidate "+both+" has no prepared crates") || !hasRule(run, "was mutated") {
			t.Fatalf("merge-ready %v:\n%s", run.MergeReady(), strings.Join(rules(run), "\n"))
		}
	})

	t.Run("a declared directory source", func(t *testing.T) {
		// Debian's registry itself, named in the operator policy: each
		// commit's crates are imported from it on first use, no
		// runmill deps import.
		pol := operatorPolicy(t, "verification:\n  fail_on_skipped_check: true\ndependencies:\n  cargo:\n    registry: "+depstest.DebianRegistry+"\n")
		run := verify(t, r, base, both, func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol })
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
	})
}
