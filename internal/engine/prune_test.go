package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/lastuse"
)

var pruneNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// runID is a run id started d before pruneNow (the layout of newRunID).
func runID(d time.Duration, n int) string {
	return pruneNow.Add(-d).Format("20060102T150405Z") + fmt.Sprintf("-%08x", n)
}

// TestPrunable: a run goes when it is beyond the newest MaxRuns whatever its
// age, or older than MaxAge whatever its rank; a name that is not a run id,
// and an id dated after now, are dated by their directory's modification
// time; a stopped removal's leftover goes at once; the veto always stays
// (and still counts towards MaxRuns).
func TestPrunable(t *testing.T) {
	day := 24 * time.Hour
	r := engine.Retention{MaxRuns: 3, MaxAge: 14 * day}
	old1, old2, old3 := runID(40*day, 1), runID(30*day, 2), runID(20*day, 3)
	new1, new2, new3 := runID(10*day, 4), runID(2*day, 5), runID(time.Hour, 6)
	future := runID(-365*day, 7) // a year ahead: a clock that was wrong
	// Run ids are dated by their names whatever their directories say.
	dirs := func(names ...string) []engine.RunDir {
		var out []engine.RunDir
		for _, n := range names {
			out = append(out, engine.RunDir{Name: n, Modified: pruneNow})
		}
		return out
	}
	aged := func(name string, age time.Duration) engine.RunDir {
		return engine.RunDir{Name: name, Modified: pruneNow.Add(-age)}
	}
	for _, tc := range []struct {
		name string
		runs []engine.RunDir
		r    engine.Retention
		keep func(string) bool
		want []string
	}{
		{"nothing to prune", nil, r, nil, nil},
		{"runs older than the age go, oldest first, however few", dirs(new3, old2, old1), r, nil, []string{old1, old2}},
		{"young runs within the count stay", dirs(new1, new2, new3), r, nil, nil},
		{"runs beyond the count go however young", dirs(new1, new2, new3), engine.Retention{MaxRuns: 2, MaxAge: 14 * day}, nil, []string{new1}},
		{"both bounds at once", dirs(old1, old2, old3, new1, new2, new3), engine.Retention{MaxRuns: 2, MaxAge: 14 * day}, nil, []string{old1, old2, old3, new1}},
		{"the veto stays beyond the count and the age, and counts", dirs(old1, new1, new2, new3), engine.Retention{MaxRuns: 2, MaxAge: 14 * day},
			func(id string) bool { return id == old1 || id == new3 }, []string{new1}},
		{"a name that is not a run id goes by its directory's age",
			[]engine.RunDir{aged("notes", 20*day), aged("20201201T000000Z-xyz", 15*day), aged("2020", time.Hour), aged(new1, 0), aged(new2, 0)},
			r, nil, []string{"notes", "20201201T000000Z-xyz"}},
		{"a future-dated id goes by its directory's age, stays while it is recent",
			[]engine.RunDir{aged(future, 20*day), aged(new2, 0), aged(new3, 0)}, r, nil, []string{future}},
		{"a recent future-dated id counts as the newest",
			[]engine.RunDir{aged(future, time.Minute), aged(new1, 0), aged(new2, 0)}, engine.Retention{MaxRuns: 1, MaxAge: 14 * day}, nil, []string{new1, new2}},
		{"a stopped removal's leftover goes however recent, and does not count", []engine.RunDir{aged(".pruning-0123abcd", 0), aged(new3, 0), aged(new2, 0)}, engine.Retention{MaxRuns: 2, MaxAge: 14 * day}, nil, []string{".pruning-0123abcd"}},
		{"zero retention prunes every run not vetoed", dirs(new3, old1), engine.Retention{}, func(id string) bool { return id == new3 }, []string{old1}},
		{"defaults keep 14 days", dirs(old1, new1), engine.DefaultRetention, nil, []string{old1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.Prunable(tc.runs, pruneNow, tc.r, tc.keep); !slices.Equal(got, tc.want) {
				t.Errorf("Prunable = %v, want %v", got, tc.want)
			}
		})
	}
	// The defaults' count: 200 runs of the last hour, and one more.
	var many []engine.RunDir
	for i := range 201 {
		many = append(many, engine.RunDir{Name: runID(time.Duration(i)*time.Second, i)})
	}
	if got := engine.Prunable(many, pruneNow, engine.DefaultRetention, nil); !slices.Equal(got, []string{many[200].Name}) {
		t.Errorf("defaults over 201 young runs prune %v, want only the oldest %s", got, many[200].Name)
	}
}

// TestPruneRuns: on disk, the rule removes exactly the prunable runs —
// names that are not run ids and future-dated ids by their directory's
// age; the current run, a run another holder keeps (HoldRun) and the
// caches survive.
func TestPruneRuns(t *testing.T) {
	state := t.TempDir()
	day := 24 * time.Hour
	r := engine.Retention{MaxRuns: 100, MaxAge: 7 * day}
	current, heldOld, gone1, gone2 := runID(0, 1), runID(60*day, 2), runID(50*day, 3), runID(40*day, 4)
	future := runID(-300*day, 5)
	// What each directory was last modified: a run id's own age does not
	// depend on it; the others are judged by it.
	modified := map[string]time.Duration{current: 0, heldOld: 0, gone1: 0, gone2: 0,
		"not-a-run": day, "old-notes": 25 * day, future: 20 * day}
	for id, age := range modified {
		if err := os.MkdirAll(filepath.Join(state, "runs", id, "artifacts", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "runs", id, "statement.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := pruneNow.Add(-age)
		if err := os.Chtimes(filepath.Join(state, "runs", id), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(state, "deps", "npm", "cache-file")
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := engine.HoldRun(filepath.Join(state, "runs", heldOld)) // another live runmill's
	if err != nil {
		t.Fatal(err)
	}
	// Cancelled (SIGTERM before it began): nothing goes, and it says why.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	hold, pruned, err := engine.PruneRuns(done, state, current, pruneNow, r)
	if !errors.Is(err, context.Canceled) || len(pruned) != 0 {
		t.Fatalf("PruneRuns with a done ctx = %v, %v; want nothing pruned, context.Canceled", pruned, err)
	}
	hold.Close()
	for id := range modified {
		if _, err := os.Stat(filepath.Join(state, "runs", id)); err != nil {
			t.Fatalf("a cancelled prune removed %s: %v", id, err)
		}
	}
	hold, pruned, err = engine.PruneRuns(context.Background(), state, current, pruneNow, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{gone1, gone2, "old-notes", future}; !slices.Equal(pruned, want) { // oldest first
		t.Errorf("pruned %v, want %v", pruned, want)
	}
	for id, want := range map[string]bool{current: true, heldOld: true, gone1: false, gone2: false, "not-a-run": true, "old-notes": false, future: false} {
		_, err := os.Stat(filepath.Join(state, "runs", id))
		if exists := err == nil; exists != want {
			t.Errorf("run %s exists = %v, want %v", id, exists, want)
		}
	}
	if _, err := os.Stat(cache); err != nil {
		t.Errorf("the cache was touched: %v", err)
	}
	// Released, the old run is prunable; the current run is still held.
	other.Close()
	if _, pruned, err = engine.PruneRuns(context.Background(), state, "", pruneNow, engine.Retention{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pruned, []string{heldOld, "not-a-run"}) {
		t.Errorf("after release pruned %v, want only %s and not-a-run (the current run is held)", pruned, heldOld)
	}
	hold.Close()
	u, err := engine.MeasureState(state)
	if err != nil {
		t.Fatal(err)
	}
	if u.Runs != 1 || u.RunsBytes <= 0 || u.Bytes <= u.RunsBytes {
		t.Errorf("MeasureState = %+v, want 1 run, its bytes, and more in total (the cache)", u)
	}
}

// TestPruneRunsByCount: a state dir with 50 runs of the last day keeps
// only the count, the newest, the current run among them; the age bound
// alone would keep them all.
func TestPruneRunsByCount(t *testing.T) {
	state := t.TempDir()
	var ids []string // newest first; ids[0] is the current run
	for i := range 50 {
		ids = append(ids, runID(time.Duration(i)*28*time.Minute, i))
		if err := os.MkdirAll(filepath.Join(state, "runs", ids[i], "artifacts"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hold, pruned, err := engine.PruneRuns(context.Background(), state, ids[0], pruneNow, engine.Retention{MaxRuns: 10, MaxAge: 14 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	want := slices.Clone(ids[10:])
	slices.Reverse(want) // oldest first
	if !slices.Equal(pruned, want) {
		t.Errorf("pruned %v, want the 40 oldest %v", pruned, want)
	}
	left, err := os.ReadDir(filepath.Join(state, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	kept := slices.Clone(ids[:10])
	slices.Sort(kept)
	if !slices.Equal(names, kept) {
		t.Errorf("runs left %v, want the newest 10 %v", names, kept)
	}
}

// TestMeasureStateMissing: a state directory not created yet uses nothing.
func TestMeasureStateMissing(t *testing.T) {
	u, err := engine.MeasureState(filepath.Join(t.TempDir(), "absent"))
	if err != nil || u != (engine.StateUsage{}) {
		t.Errorf("MeasureState = %+v, %v; want zero, nil", u, err)
	}
}

// TestVerifyPrunesStateDir: a real Verify prunes when it starts, under the
// retention its options name, and says so on stderr: of 50 runs of the last
// day only the count stays (the newest, this run among them), a name that
// is not a run id and a future-dated id by their directories' age (recent
// ones stay and count), a stopped removal's leftover at once, a held run
// never; cache entries whose last use is older than the bound (the
// toolchain cache, a dependency entry and its install record) go, while an
// entry as old that a concurrent run holds, recent ones and the digest memo
// stay.
func TestVerifyPrunesStateDir(t *testing.T) {
	r, base := shopRepo(t, tapPolicy)
	r.Write("tests/extra.t", "x\n")
	cand := r.Commit("candidate")
	state := t.TempDir()
	now := time.Now()
	day := 24 * time.Hour
	mkdir := func(t *testing.T, p string, age time.Duration) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(p, "artifacts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "artifacts", "x"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := now.Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	id := func(age time.Duration, n int) string {
		return now.Add(-age).UTC().Format("20060102T150405Z") + fmt.Sprintf("-%08x", n)
	}
	runs := filepath.Join(state, "runs")
	// 50 runs of the last day. Kept at most 10: this run and the two recent
	// foreign names are the newest three, so 7 of the 50 stay.
	var young []string
	for i := 1; i <= 50; i++ {
		young = append(young, id(time.Duration(i)*28*time.Minute, i))
		mkdir(t, filepath.Join(runs, young[len(young)-1]), 0)
	}
	futureOld, futureNew := id(-300*day, 1000), id(-301*day, 1001)
	heldOld := id(60*day, 1002)
	leftover := ".pruning-0123abcd"
	for name, age := range map[string]time.Duration{"notes": 20 * day, "recent-notes": 0, futureOld: 20 * day, futureNew: 0, heldOld: 0, leftover: 0} {
		mkdir(t, filepath.Join(runs, name), age)
	}
	other, err := engine.HoldRun(filepath.Join(runs, heldOld)) // another live runmill's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	toolOld, toolNew := strings.Repeat("1", 64), strings.Repeat("2", 64)
	tools := filepath.Join(state, "toolcache", "go")
	mkdir(t, filepath.Join(tools, toolOld), 20*day)
	mkdir(t, filepath.Join(tools, toolNew), day)
	if err := os.WriteFile(filepath.Join(tools, "file-digests.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(tools, "file-digests.json"), now.Add(-30*day), now.Add(-30*day))
	depOld, depHeld := strings.Repeat("3", 64), strings.Repeat("4", 64)
	mkdir(t, filepath.Join(state, "deps", "npm", depOld), 20*day)
	mkdir(t, filepath.Join(state, "deps", "npm", depHeld), 20*day)
	// A concurrent run uses depHeld: it holds the entry as every run does
	// (lastuse.Set.Use in deps), from its own open file.
	inUse, err := lastuse.Hold(filepath.Join(state, "deps", "npm", depHeld))
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.Close()
	record := filepath.Join(state, "deps", "index", "npm", strings.Repeat("a", 40))
	if err := os.MkdirAll(filepath.Dir(record), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, []byte("sha256:"+depOld+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var progress strings.Builder
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) {
		o.StateDir, o.GoToolCacheDir, o.Progress = state, "", &progress
		o.Retention = engine.Retention{MaxRuns: 10, MaxAge: 14 * day}
	})
	if !run.MergeReady() {
		t.Fatalf("not merge-ready: %v", rules(run))
	}
	log := progress.String()
	gone := append(slices.Clone(young[7:]), "notes", futureOld, leftover)
	for _, name := range gone {
		if _, err := os.Stat(filepath.Join(runs, name)); !os.IsNotExist(err) {
			t.Errorf("run %s not pruned (%v)", name, err)
		}
		if !strings.Contains(log, "pruned run "+name+" (retention keeps at most the newest 10 runs, none older than 14 days)") {
			t.Errorf("progress does not say run %s was pruned:\n%s", name, log)
		}
	}
	for _, name := range append(slices.Clone(young[:7]), "recent-notes", futureNew, heldOld, filepath.Base(run.Dir)) {
		if _, err := os.Stat(filepath.Join(runs, name)); err != nil {
			t.Errorf("run %s pruned: %v", name, err)
		}
	}
	for p, want := range map[string]bool{filepath.Join(tools, toolOld): false, filepath.Join(tools, toolNew): true,
		filepath.Join(tools, "file-digests.json"): true, filepath.Join(state, "deps", "npm", depOld): false, record: false,
		filepath.Join(state, "deps", "npm", depHeld, "artifacts", "x"): true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", p, err == nil, want)
		}
	}
	for _, want := range []string{"pruned cache entry " + filepath.Join(tools, toolOld) + " (", "pruned cache entry " + filepath.Join(state, "deps", "npm", depOld) + " (",
		"unused for more than 14 days", "pruned 1 install record and 0 objects"} {
		if !strings.Contains(log, want) {
			t.Errorf("progress lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, depHeld) {
		t.Errorf("progress names the held entry %s:\n%s", depHeld, log)
	}
}
