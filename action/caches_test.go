package action_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/treehash"
)

// goModuleFixture is a Go module whose check runs go test: the check the
// prepared toolchain cache is for.
func goModuleFixture(t *testing.T) fixture {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", `checks:
  - id: unit
    run: go test -json ./... > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
    timeout: 900s
`)
	r.Write(".gitignore", "reports/\n")
	r.Write("go.mod", "module example.com/shop\n\ngo 1.22\n")
	r.Write("shop.go", "package shop\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n")
	r.Write("shop_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A\" {\n\t\tt.Fatal(Up(\"a\"))\n\t}\n}\n")
	f := fixture{dir: r.Dir}
	f.base = r.Commit("base")
	r.Checkout("good", true)
	r.Write("more_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestEmpty(t *testing.T) {\n\tif Up(\"\") != \"\" {\n\t\tt.Fatal()\n\t}\n}\n")
	f.good = r.Commit("good: a test more")
	pullMerge(t, r, &f)
	return f
}

// toolCacheNotes are the notes of every check run about the prepared
// toolchain cache, from the run's statement in the uploaded evidence.
func toolCacheNotes(t *testing.T, j *job) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(j.artifacts, "runmill-evidence", j.outputs()["run-id"], "statement.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Predicate struct {
			Checks []struct {
				Notes []string `json:"notes"`
			} `json:"checks"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range st.Predicate.Checks {
		for _, n := range c.Notes {
			if strings.Contains(n, "Go toolchain cache") {
				out = append(out, n)
			}
		}
	}
	return out
}

func stepNamed(j *job, name string) stepResult {
	for _, r := range j.ran {
		if r.Name == name {
			return r
		}
	}
	j.t.Fatalf("no step %q ran", name)
	return stepResult{}
}

// TestCachesOutliveTheJob: a job that starts from an empty state dir
// builds the Go toolchain cache, seals it with the signing key and saves
// it; the next job restores it (a restore-keys match: the save key names
// what was saved), vets it — receipt, every byte, the seal — and its Go
// checks reuse it instead of compiling the standard library, saving
// nothing new. A restored entry poisoned in the cache store, its receipt
// forged to match, is refused by the vet and rebuilt by verify, and the
// rebuilt entry is saved under a key of its own.
func TestCachesOutliveTheJob(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	f := goModuleFixture(t)
	key := signingKey(t)
	runJob := func(name string) *job {
		t.Helper()
		j := newJob(t, f, "pull_request", f.good, map[string]string{
			"containerd-address": containerdAddress, "github-token": "", "signing-key": key,
		})
		standInBuild(t, j)
		j.run()
		if j.failed || j.outputs()["verdict"] != "merge-ready" {
			t.Fatalf("%s: failed %t, verdict %q\n%s", name, j.failed, j.outputs()["verdict"], j.log.String())
		}
		return j
	}
	has := func(notes []string, s string) bool {
		for _, n := range notes {
			if strings.Contains(n, s) {
				return true
			}
		}
		return false
	}

	first := runJob("the first job")
	if n := toolCacheNotes(t, first); len(n) == 0 || !has(n, "built from the toolchain's own sources") {
		t.Errorf("the first job's notes %q: want the toolchain cache built", n)
	}
	if log := stepNamed(first, "Seal the caches").Log; !strings.Contains(log, "kept, sealed") {
		t.Errorf("the first job sealed nothing:\n%s", log)
	}
	saved := stepNamed(first, "Seal the caches").Outputs["gotool-save"]
	if s := stepNamed(first, "Save the Go toolchain caches"); s.Outcome != "success" || saved == "" {
		t.Fatalf("the first job did not save the toolchain cache (%s, key %q)", s.Outcome, saved)
	}

	second := runJob("the second job")
	if got := stepNamed(second, "Restore the Go toolchain caches").Outputs["cache-matched-key"]; got != saved {
		t.Errorf("the second job restored %q, want %q", got, saved)
	}
	if log := stepNamed(second, "Vet the restored caches").Log; !strings.Contains(log, "kept, sealed") || !strings.Contains(log, "0 refused") {
		t.Errorf("the second job's vet:\n%s", log)
	}
	if n := toolCacheNotes(t, second); len(n) == 0 || !has(n, "reused, every byte verified") || has(n, "built from") {
		t.Errorf("the second job's notes %q: want the restored cache reused", n)
	}
	if s := stepNamed(second, "Save the Go toolchain caches"); s.Outcome != "skipped" {
		t.Errorf("the second job saved again (%s): nothing was new", s.Outcome)
	}

	// The cache store's copy poisoned: a compiled package replaced, the
	// fingerprint beside the tree recomputed, as anyone saving under the
	// prefix could.
	stored := filepath.Join(first.cacheScope(), saved)
	var victim string
	filepath.WalkDir(stored, func(p string, d fs.DirEntry, err error) error {
		if err == nil && victim == "" && d.Type().IsRegular() && strings.HasSuffix(p, "-d") {
			victim = p
		}
		return nil
	})
	if victim == "" {
		t.Fatalf("no compiled output in the saved cache %s", stored)
	}
	if err := os.WriteFile(victim, []byte("a package whose tests always pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Dir(filepath.Dir(filepath.Dir(victim))) // <entry>/cache/<fan>/<file>
	d, _, err := treehash.Sum(context.Background(), filepath.Join(entry, "cache"), treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "fingerprint"), []byte(d.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	third := runJob("the job after the poisoning")
	if log := stepNamed(third, "Vet the restored caches").Log; !strings.Contains(log, "refused and removed: its seal is of another tree") {
		t.Errorf("the poisoned entry was not refused:\n%s", log)
	}
	if n := toolCacheNotes(t, third); !has(n, "built from the toolchain's own sources") {
		t.Errorf("the poisoned entry was not rebuilt: notes %q", n)
	}
	resaved := stepNamed(third, "Seal the caches").Outputs["gotool-save"]
	if s := stepNamed(third, "Save the Go toolchain caches"); s.Outcome != "success" || resaved == saved {
		t.Errorf("the rebuilt cache was not saved under a key of its own (%s, %q)", s.Outcome, resaved)
	}
}
