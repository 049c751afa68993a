package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
)

var pruneNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// runID is a run id started d before pruneNow (the layout of newRunID).
func runID(d time.Duration, n int) string {
	return pruneNow.Add(-d).Format("20060102T150405Z") + fmt.Sprintf("-%08x", n)
}

// TestPrunable: a run goes only when it is beyond the last N runs AND older
// than the age limit; the veto and names that are not run ids always stay.
func TestPrunable(t *testing.T) {
	day := 24 * time.Hour
	r := engine.Retention{KeepLast: 2, KeepFor: 14 * day}
	old1, old2, old3 := runID(40*day, 1), runID(30*day, 2), runID(20*day, 3)
	new1, new2, new3 := runID(10*day, 4), runID(2*day, 5), runID(time.Hour, 6)
	run := func(t *testing.T, names []string, r engine.Retention, keep func(string) bool, want []string) {
		t.Helper()
		got := engine.Prunable(names, pruneNow, r, keep)
		if !slices.Equal(got, want) {
			t.Errorf("Prunable = %v, want %v", got, want)
		}
	}
	for _, tc := range []struct {
		name  string
		names []string
		r     engine.Retention
		keep  func(string) bool
		want  []string
	}{
		{"nothing to prune", nil, r, nil, nil},
		{"old runs beyond the last N go, oldest first", []string{new3, old2, old1, old3}, r, nil, []string{old1, old2}},
		{"the last N stay however old", []string{old1, old2, old3}, r, nil, []string{old1}},
		{"young runs stay beyond the last N", []string{new1, new2, new3}, r, nil, nil},
		{"both rules: only old and beyond N", []string{old1, old2, old3, new1, new2, new3}, r, nil, []string{old1, old2, old3}},
		{"a held run stays", []string{old1, old2, old3, new1}, r, func(id string) bool { return id == old1 }, []string{old2}},
		{"names that are not run ids stay", []string{"notes", "2020", old1, "20201201T000000Z-xyz", new1, new2}, r, nil, []string{old1}},
		{"KeepLast 0 and KeepFor 0 prune every run not vetoed", []string{new3, old1}, engine.Retention{}, func(id string) bool { return id == new3 }, []string{old1}},
		{"defaults keep 50 and 14 days", []string{old1, new1}, engine.DefaultRetention, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.names, tc.r, tc.keep, tc.want) })
	}
}

// TestPruneRuns: on disk, the rule removes exactly the prunable runs; the
// current run, a run another holder keeps (HoldRun), the caches and foreign
// names survive.
func TestPruneRuns(t *testing.T) {
	state := t.TempDir()
	day := 24 * time.Hour
	r := engine.Retention{KeepLast: 1, KeepFor: 7 * day}
	current, heldOld, gone1, gone2 := runID(0, 1), runID(60*day, 2), runID(50*day, 3), runID(40*day, 4)
	for _, id := range []string{current, heldOld, gone1, gone2, "not-a-run"} {
		if err := os.MkdirAll(filepath.Join(state, "runs", id, "artifacts", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "runs", id, "statement.json"), []byte("{}"), 0o644); err != nil {
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
	if !slices.Equal(pruned, []string{gone1, gone2}) { // oldest first
		t.Errorf("pruned %v, want [%s %s]", pruned, gone1, gone2)
	}
	for id, want := range map[string]bool{current: true, heldOld: true, gone1: false, gone2: false, "not-a-run": true} {
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
	if !slices.Equal(pruned, []string{heldOld}) {
		t.Errorf("after release pruned %v, want only %s (the current run is held)", pruned, heldOld)
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
