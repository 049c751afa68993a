package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
)

var pruneNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// runID is a run id started d before pruneNow (the layout of newRunID).
func runID(d time.Duration, n int) string {
	return pruneNow.Add(-d).Format("20060102T150405Z") + fmt.Sprintf("-%08x", n)
}

// TestPrunable: a run goes when it is beyond the newest MaxRuns whatever its
// age, or beyond the newest KeepLast AND older than KeepFor; a name that is
// not a run id, and an id dated after now, are dated by their directory's
// modification time; the veto always stays.
func TestPrunable(t *testing.T) {
	day := 24 * time.Hour
	r := engine.Retention{KeepLast: 2, KeepFor: 14 * day, MaxRuns: 100}
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
		{"old runs beyond the last N go, oldest first", dirs(new3, old2, old1, old3), r, nil, []string{old1, old2}},
		{"the last N stay however old", dirs(old1, old2, old3), r, nil, []string{old1}},
		{"young runs stay beyond the last N", dirs(new1, new2, new3), r, nil, nil},
		{"both rules: only old and beyond N", dirs(old1, old2, old3, new1, new2, new3), r, nil, []string{old1, old2, old3}},
		{"runs beyond the cap go however young", dirs(new1, new2, new3), engine.Retention{KeepLast: 2, KeepFor: 14 * day, MaxRuns: 2}, nil, []string{new1}},
		{"the cap wins over the last N", dirs(old3, new1, new2, new3), engine.Retention{KeepLast: 10, KeepFor: 14 * day, MaxRuns: 1}, nil, []string{old3, new1, new2}},
		{"the veto stays beyond the cap and the age", dirs(old1, old2, old3, new1), r, func(id string) bool { return id == old1 }, []string{old2}},
		{"a name that is not a run id goes by its directory's age",
			[]engine.RunDir{aged("notes", 20*day), aged("20201201T000000Z-xyz", 15*day), aged("2020", time.Hour), aged(old1, 0), aged(new1, 0), aged(new2, 0)},
			r, nil, []string{old1, "notes", "20201201T000000Z-xyz"}},
		{"a future-dated id goes by its directory's age, stays while it is recent",
			[]engine.RunDir{aged(future, 20*day), aged(new2, 0), aged(new3, 0)}, r, nil, []string{future}},
		{"a recent future-dated id counts as the newest",
			[]engine.RunDir{aged(future, time.Minute), aged(new1, 0), aged(new2, 0)}, engine.Retention{KeepLast: 1, KeepFor: 0, MaxRuns: 10}, nil, []string{new1, new2}},
		{"zero retention prunes every run not vetoed", dirs(new3, old1), engine.Retention{}, func(id string) bool { return id == new3 }, []string{old1}},
		{"defaults keep 50 and 14 days", dirs(old1, new1), engine.DefaultRetention, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.Prunable(tc.runs, pruneNow, tc.r, tc.keep); !slices.Equal(got, tc.want) {
				t.Errorf("Prunable = %v, want %v", got, tc.want)
			}
		})
	}
	// The defaults' cap: 200 runs of the last hour, and one more.
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
	r := engine.Retention{KeepLast: 1, KeepFor: 7 * day, MaxRuns: 100}
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
	hold, pruned, err := engine.PruneRuns(state, current, pruneNow, r)
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
	if _, pruned, err = engine.PruneRuns(state, "", pruneNow, engine.Retention{}); err != nil {
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

// TestMeasureStateMissing: a state directory not created yet uses nothing.
func TestMeasureStateMissing(t *testing.T) {
	u, err := engine.MeasureState(filepath.Join(t.TempDir(), "absent"))
	if err != nil || u != (engine.StateUsage{}) {
		t.Errorf("MeasureState = %+v, %v; want zero, nil", u, err)
	}
}

// TestVerifyPrunesStateDir: a real Verify prunes when it starts, and says
// so on stderr: runs beyond the cap though young, a name that is not a run
// id and a future-dated id by their directories' age (recent ones stay), a
// held run never; cache entries whose last use is older than the bound
// (the toolchain cache, a dependency entry and its install record), recent
// ones and the digest memo kept.
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
	// 199 young runs: with this run and the two recent foreign names, 202,
	// so the cap of 200 lets the two oldest young ones go.
	var young []string
	for i := 1; i <= 199; i++ {
		young = append(young, id(time.Duration(i)*time.Minute, i))
		mkdir(t, filepath.Join(runs, young[len(young)-1]), 0)
	}
	futureOld, futureNew := id(-300*day, 1000), id(-301*day, 1001)
	heldOld := id(60*day, 1002)
	for name, age := range map[string]time.Duration{"notes": 20 * day, "recent-notes": 0, futureOld: 20 * day, futureNew: 0, heldOld: 0} {
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
	depOld := strings.Repeat("3", 64)
	mkdir(t, filepath.Join(state, "deps", "npm", depOld), 20*day)
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
	})
	if !run.MergeReady() {
		t.Fatalf("not merge-ready: %v", rules(run))
	}
	log := progress.String()
	gone := []string{young[197], young[198], "notes", futureOld}
	for _, name := range gone {
		if _, err := os.Stat(filepath.Join(runs, name)); !os.IsNotExist(err) {
			t.Errorf("run %s not pruned (%v)", name, err)
		}
		if !strings.Contains(log, "pruned run "+name+" (retention keeps the newest 50 runs and those of the last 14 days, never more than 200)") {
			t.Errorf("progress does not say run %s was pruned:\n%s", name, log)
		}
	}
	for _, name := range []string{young[0], young[196], "recent-notes", futureNew, heldOld, filepath.Base(run.Dir)} {
		if _, err := os.Stat(filepath.Join(runs, name)); err != nil {
			t.Errorf("run %s pruned: %v", name, err)
		}
	}
	for p, want := range map[string]bool{filepath.Join(tools, toolOld): false, filepath.Join(tools, toolNew): true,
		filepath.Join(tools, "file-digests.json"): true, filepath.Join(state, "deps", "npm", depOld): false, record: false} {
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
}
