package engine_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/record"
)

// sharedGoToolCache is one prepared-toolchain-cache directory for every
// test of the package: the standard library is compiled once per test
// binary, not once per Verify (each test has its own state dir).
var sharedGoToolCache = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "rm-gotoolcache-")
	if err != nil {
		panic(err)
	}
	madeGoToolCache = dir
	return dir
})

// madeGoToolCache is what testMain removes at the end.
var madeGoToolCache string

func removeSharedGoToolCache() {
	if madeGoToolCache != "" {
		os.RemoveAll(madeGoToolCache)
	}
}

const goToolPolicy = `checks:
  - id: unit
    run: go test -json ./... > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
    timeout: 600s
`

func goToolRepo(t *testing.T) (*gittest.Repo, string, string) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", goToolPolicy)
	r.Write(".gitignore", "reports/\n")
	r.Write("go.mod", "module example.com/tc\n\ngo 1.22\n")
	r.Write("tc.go", "package tc\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n")
	r.Write("tc_test.go", "package tc\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A\" {\n\t\tt.Fatal(Up(\"a\"))\n\t}\n}\n")
	base := r.Commit("base")
	r.Checkout("cand", true)
	r.Write("more_test.go", "package tc\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestMore(t *testing.T) {\n\tif fmt.Sprint(1) != \"1\" {\n\t\tt.Fatal()\n\t}\n}\n")
	return r, base, r.Commit("adds a test")
}

func toolCacheNote(c record.CheckRun) string {
	for _, n := range c.Notes {
		if strings.HasPrefix(n, "prepared Go toolchain cache") || strings.HasPrefix(n, "no prepared Go toolchain cache") {
			return n
		}
	}
	return ""
}

// TestGoToolchainCache: a Go check without an operator build cache gets the
// prepared toolchain cache (recorded in its notes), passes with it, and a
// later verification on another state dir reuses it after verifying every
// byte (a cache whose bytes changed is discarded:
// TestGoToolCacheReuseVerifies).
func TestGoToolchainCache(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Fatalf("this test needs the Go toolchain on the host paths: %v", err)
	}
	r, base, cand := goToolRepo(t)
	dir := t.TempDir()
	withCache := func(o *engine.VerifyOptions) { o.GoToolCacheDir = dir }
	check := func(run *engine.Run, want string) {
		t.Helper()
		if !run.MergeReady() {
			t.Fatalf("not merge-ready:\n%s\n%s", strings.Join(rules(run), "\n"), outputs(run))
		}
		if len(run.Delivery.Checks) != 2 {
			t.Fatalf("%d check runs, want baseline and candidate", len(run.Delivery.Checks))
		}
		var notes []string
		for _, c := range run.Delivery.Checks {
			if c.Coverage != record.Proven {
				t.Errorf("%s: coverage %s", c.Phase, c.Coverage)
			}
			n := toolCacheNote(c)
			notes = append(notes, n)
			if !strings.HasPrefix(n, "prepared Go toolchain cache") {
				t.Errorf("%s: no prepared toolchain cache: %q", c.Phase, n)
			}
			if want == "built" && !strings.Contains(n, "built from the toolchain's own sources") {
				t.Errorf("%s: %q, want a cache built in this run", c.Phase, n)
			}
			if want == "reused" && !strings.Contains(n, "reused, every byte verified") {
				t.Errorf("%s: %q, want a reused cache", c.Phase, n)
			}
		}
		// Baseline and candidate share the run's one build or check.
		if notes[0] != notes[1] {
			t.Errorf("baseline and candidate used different caches:\n%s\n%s", notes[0], notes[1])
		}
	}
	check(verify(t, r, base, cand, withCache), "built")
	check(verify(t, r, base, cand, withCache), "reused")

}
