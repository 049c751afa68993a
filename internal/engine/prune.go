package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Retention says which run directories (STATE/runs/<run-id>) pruning keeps.
// A run is pruned only when both rules let it go: it is not among the
// KeepLast newest runs, and it started more than KeepFor ago. The caches
// (prepared dependencies, the private containerd's image store) are keyed by
// content, not by run, and are never pruned here.
type Retention struct {
	KeepLast int
	KeepFor  time.Duration
}

// DefaultRetention keeps the last 50 runs and every run of the last 14 days:
// enough to inspect or re-verify a recent merge, bounded for a busy runner.
var DefaultRetention = Retention{KeepLast: 50, KeepFor: 14 * 24 * time.Hour}

// runIDLayout is the time prefix of every run id (newRunID); ids sort by it.
const runIDLayout = "20060102T150405Z"

// runStarted reads the start time out of a run id. A name that is not a run
// id is not runmill's to delete.
func runStarted(id string) (time.Time, bool) {
	if len(id) != len(runIDLayout)+1+8 || id[len(runIDLayout)] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(runIDLayout, id[:len(runIDLayout)])
	return t, err == nil
}

// Prunable is the retention rule, a pure function: of the run ids in names,
// those r lets go at now, oldest first. keep vetoes a run whatever its age
// (the current run, a run a live runmill holds); names that are not run ids
// are never returned.
func Prunable(names []string, now time.Time, r Retention, keep func(id string) bool) []string {
	var ids []string
	for _, n := range names {
		if _, ok := runStarted(n); ok {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids) // newest first
	var out []string
	for i, id := range ids {
		started, _ := runStarted(id)
		if i < r.KeepLast || now.Sub(started) < r.KeepFor || (keep != nil && keep(id)) {
			continue
		}
		out = append(out, id)
	}
	slices.Reverse(out)
	return out
}

// HoldRun marks the run directory as in use for as long as the returned file
// stays open (a shared flock(2) on the directory itself, released by the
// kernel however the process ends): pruneRuns of another runmill then leaves
// it alone whatever its age.
func HoldRun(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// held reports whether a live runmill holds the run directory (HoldRun). A
// directory that cannot be opened counts as held: pruning never deletes
// what it could not judge.
func held(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return true
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// PruneRuns holds the current run's directory (HoldRun) and removes the run
// directories under stateDir/runs that r lets go, never the current one nor
// one another live runmill holds. It returns the held directory, to be
// closed when the run ends, and the ids it removed. A failed removal is
// reported, not fatal: the evidence of this run does not depend on it.
func PruneRuns(stateDir, current string, now time.Time, r Retention) (hold *os.File, pruned []string, err error) {
	runs := filepath.Join(stateDir, "runs")
	if current != "" {
		if hold, err = HoldRun(filepath.Join(runs, current)); err != nil {
			return nil, nil, fmt.Errorf("holding the run directory: %w", err)
		}
	}
	entries, err := os.ReadDir(runs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return hold, nil, fmt.Errorf("listing runs to prune: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	var errs []error
	for _, id := range Prunable(names, now, r, func(id string) bool { return id == current || held(filepath.Join(runs, id)) }) {
		if err := os.RemoveAll(filepath.Join(runs, id)); err != nil {
			errs = append(errs, err)
			continue
		}
		pruned = append(pruned, id)
	}
	if err := errors.Join(errs...); err != nil {
		return hold, pruned, fmt.Errorf("pruning old runs: %w", err)
	}
	return hold, pruned, nil
}

// pruneAtStart is Verify's one call, made right after the run directory
// exists: it prunes under DefaultRetention, logs what went, and returns
// the release of the current run's hold (defer it).
func pruneAtStart(stateDir, current string, now time.Time, logf func(string, ...any)) (release func()) {
	hold, pruned, err := PruneRuns(stateDir, current, now, DefaultRetention)
	for _, id := range pruned {
		logf("pruned run %s (retention: the last %d runs and those of the last %d days are kept)", id, DefaultRetention.KeepLast, int(DefaultRetention.KeepFor.Hours()/24))
	}
	if err != nil {
		logf("%v", err)
	}
	return func() {
		if hold != nil {
			hold.Close()
		}
	}
}

// StateUsage is what the state directory holds on disk.
type StateUsage struct {
	Runs      int   // run directories
	RunsBytes int64 // of which the run directories use
	Bytes     int64 // the whole state directory
}

// MeasureState sums the disk use of the state directory (allocated blocks,
// each inode once: the prepared-dependency views are hard links into the
// cache). A state directory that does not exist yet uses nothing.
func MeasureState(stateDir string) (StateUsage, error) {
	var u StateUsage
	seen := map[[2]uint64]bool{}
	runs := filepath.Join(stateDir, "runs")
	err := filepath.WalkDir(stateDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if filepath.Dir(path) == runs && d.IsDir() {
			if _, ok := runStarted(d.Name()); ok {
				u.Runs++
			}
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return nil // gone meanwhile
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[key] {
			return nil
		}
		seen[key] = true
		n := st.Blocks * 512
		u.Bytes += n
		if rel, err := filepath.Rel(runs, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			u.RunsBytes += n
		}
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("measuring the state directory %s: %w", stateDir, err)
	}
	return u, nil
}
