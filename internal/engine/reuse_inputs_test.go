package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// TestReuseFollowsEachInput: through Verify, a change to the command, the
// image or the dependencies of a check (here by the operator's policy, so
// the commit stays the same) executes its baseline again; the next push
// with the same inputs then reuses that run. The second half is the
// control: it shows each first half refused reuse because of the input,
// not because the run could not be reused at all.
func TestReuseFollowsEachInput(t *testing.T) {
	k := newReuseKey(t)
	r, _ := shopRepo(t, tapPolicy)
	// A module without requirements: the go-modules strategy prepares an
	// empty module cache, so declaring it changes only the key's deps.
	r.Write("go.mod", "module example.com/shop\n\ngo 1.22\n")
	base := r.Commit("module")
	image := sandboxtest.MinimalImage(t)
	// printf is dash's builtin, so the command runs on the host toolchain
	// and in the minimal image alike.
	const cmd = `cat tests/total.t > /dev/null; printf '1..1\nok 1 total\n' > reports/unit.tap`
	def := func(extra string) string {
		return "verification:\n  commands:\n    - id: unit\n      run: " + cmd + "\n      report: {path: reports/unit.tap, format: tap}\n      timeout: 60s\n" + extra
	}
	state := t.TempDir()
	policies := []struct{ name, doc string }{
		{"the operator's definition", def("")},
		{"another command", strings.Replace(def(""), "cat tests/total.t", "cat tests/fixture.t", 1)},
		{"an image", def("      image: " + image + "\n")},
		{"prepared dependencies", def("      dependencies: go-modules\n")},
	}
	for i, p := range policies {
		pol := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(pol, []byte(p.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		with := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir, o.Discover.PolicyFile = k.key, state, pol }
		run := verify(t, r, base, push(r, base, "first"+string(rune('a'+i))), with)
		if !run.MergeReady() {
			t.Fatalf("%s: not merge-ready:\n%s", p.name, strings.Join(rules(run), "\n"))
		}
		if b := baselineOf(t, run); b.ReusedFrom != nil {
			t.Errorf("%s: the baseline was reused from %+v although an input of its key changed", p.name, b.ReusedFrom)
		}
		again := verify(t, r, base, push(r, base, "again"+string(rune('a'+i))), with)
		b := baselineOf(t, again)
		if b.ReusedFrom == nil {
			t.Errorf("%s: the next push with the same inputs did not reuse the baseline", p.name)
		} else if b.ReusedFrom.RunID != run.ID {
			t.Errorf("%s: reused from run %s, want the run with the same inputs %s", p.name, b.ReusedFrom.RunID, run.ID)
		}
		if !again.MergeReady() {
			t.Fatalf("%s, again: not merge-ready:\n%s", p.name, strings.Join(rules(again), "\n"))
		}
	}
}
