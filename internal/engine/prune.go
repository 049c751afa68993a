package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/lastuse"
	"github.com/runmill/verify/pkg/printable"
)

// Retention says which run directories (STATE/runs/<run-id>) pruning
// keeps: at most MaxRuns, the newest, and none that started more than
// MaxAge ago — count and age together, so neither a busy runner (hundreds
// of young runs) nor an idle one (a few old ones) keeps more than either
// bound lets. A run's start is what its id says; a name that is not a run
// id, and an id dated after now (a clock that was ahead), start when the
// directory was last modified; a removal that was stopped (lastuse.Leftover)
// goes at once. The current run and a run a live runmill holds (HoldRun)
// are never removed. The content-keyed caches are pruned by last use
// instead (CacheLimits).
type Retention struct {
	MaxRuns int
	MaxAge  time.Duration
}

// DefaultRetention keeps at most 200 runs and none older than 14 days. A
// run is about 0.1 MB when its reports are small and can be tens of MB
// when they are not; 14 days is enough to inspect or re-verify a recent
// merge (and more than baseline reuse finds a use for: it needs a run at
// the base under verification), and 200 is those two weeks at 14 runs a
// day — a busy runner (100 runs a day) would otherwise keep 1 400.
var DefaultRetention = Retention{MaxRuns: 200, MaxAge: 14 * 24 * time.Hour}

// orDefault is r, or DefaultRetention for the zero Retention (options that
// name none).
func (r Retention) orDefault() Retention {
	if r == (Retention{}) {
		return DefaultRetention
	}
	return r
}

// runIDLayout is the time prefix of every run id (newRunID); ids sort by it.
const runIDLayout = "20060102T150405Z"

// runStarted reads the start time out of a run id.
func runStarted(id string) (time.Time, bool) {
	if len(id) != len(runIDLayout)+1+8 || id[len(runIDLayout)] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(runIDLayout, id[:len(runIDLayout)])
	return t, err == nil
}

// RunDir is one name under STATE/runs and when its directory was last
// modified.
type RunDir struct {
	Name     string
	Modified time.Time
}

// started is when the retention rule takes run to have started: its id's
// time, or — for a name that is not a run id, or an id dated after now —
// its directory's modification time, so that nothing stays for ever.
func (run RunDir) started(now time.Time) time.Time {
	if t, ok := runStarted(run.Name); ok && !t.After(now) {
		return t
	}
	return run.Modified
}

// Prunable is the retention rule, a pure function: of runs, the names r
// lets go at now, oldest first. keep vetoes a run whatever its age and
// rank (the current run); a vetoed run still counts towards MaxRuns.
func Prunable(runs []RunDir, now time.Time, r Retention, keep func(name string) bool) []string {
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b RunDir) int { // newest first
		if c := b.started(now).Compare(a.started(now)); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	var out []string
	rank := 0 // among the runs; a leftover is not one
	for _, run := range runs {
		due := lastuse.Leftover(run.Name)
		if !due {
			due = rank >= r.MaxRuns || now.Sub(run.started(now)) > r.MaxAge
			rank++
		}
		if !due || (keep != nil && keep(run.Name)) {
			continue
		}
		out = append(out, run.Name)
	}
	slices.Reverse(out)
	return out
}

// HoldRun marks the run directory as in use for as long as the returned file
// stays open (a shared flock(2) on the directory itself, released by the
// kernel however the process ends): pruneRuns of another runmill then leaves
// it alone whatever its age and rank.
func HoldRun(dir string) (*os.File, error) { return lastuse.Hold(dir) }

// PruneRuns holds the current run's directory (HoldRun) and removes what
// under stateDir/runs r lets go, never the current run nor one another
// live runmill holds. It returns the held directory, to be closed when the
// run ends, and the names it removed. A failed removal is reported, not
// fatal: the evidence of this run does not depend on it. A done ctx stops
// it between two files (lastuse.Remove: the next run finishes what it
// left) and is the error.
func PruneRuns(ctx context.Context, stateDir, current string, now time.Time, r Retention) (hold *os.File, pruned []string, err error) {
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
	var dirs []RunDir
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			dirs = append(dirs, RunDir{Name: e.Name(), Modified: info.ModTime()})
		}
	}
	var errs []error
	for _, name := range Prunable(dirs, now, r, func(name string) bool { return name == current }) {
		if ctx.Err() != nil {
			break
		}
		removed, err := lastuse.Remove(ctx, filepath.Join(runs, name), func(time.Time) bool { return true })
		if err != nil && ctx.Err() == nil {
			errs = append(errs, err)
		}
		if removed {
			pruned = append(pruned, name)
		}
	}
	if err := ctx.Err(); err != nil {
		return hold, pruned, fmt.Errorf("pruning old runs: stopped: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return hold, pruned, fmt.Errorf("pruning old runs: %w", err)
	}
	return hold, pruned, nil
}

// String states what r keeps, for a person.
func (r Retention) String() string {
	return fmt.Sprintf("at most the newest %d runs, none older than %s", r.MaxRuns, printable.Days(r.MaxAge))
}

// pruneAtStart is Verify's one call, made right after the run directory
// exists: it prunes runs under r, starts pruning the
// content-keyed caches under DefaultCacheLimits, logs what went, and
// returns the release (defer it): it waits for the cache pruning and lets
// go of the current run's hold.
//
// Why the caches are pruned while the run works: measuring them for the
// size bound is an lstat per cached file (100 000 files: 2.4–3.7 s at load
// 25–30 on 2 cores, docs/benchmarks.md), which would otherwise delay every
// start. Meanwhile is safe: the run holds each entry it uses before it
// reads it, and the pruner never takes a held one.
//
// Both honour ctx (SIGTERM): the runs' prune stops between two files, and
// the caches' between two files of the walk or the removals.
func pruneAtStart(ctx context.Context, stateDir, goToolCacheDir, current string, now time.Time, r Retention, logf func(string, ...any)) (release func()) {
	hold, pruned, err := PruneRuns(ctx, stateDir, current, now, r)
	for _, id := range pruned {
		logf("pruned run %s (retention keeps %s)", id, r)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("%v", err)
	}
	caches := async(func() struct{} {
		pruneCachesLogged(ctx, stateDir, goToolCacheDir, now, logf)
		return struct{}{}
	})
	return func() {
		// A run that ends first waits: a trivial run's start would
		// otherwise never prune. A cancelled run (SIGTERM) stops it between
		// two files.
		caches.wait()
		if hold != nil {
			hold.Close()
		}
	}
}

// pruneCachesLogged is PruneCaches under DefaultCacheLimits, saying what
// went.
func pruneCachesLogged(ctx context.Context, stateDir, goToolCacheDir string, now time.Time, logf func(string, ...any)) {
	removed, tidied, _, err := PruneCaches(ctx, stateDir, goToolCacheDir, now, DefaultCacheLimits)
	for _, r := range removed {
		logf("pruned cache entry %s", r)
	}
	if tidied.Index > 0 || tidied.Objects > 0 {
		logf("pruned %s and %s (%s) of the prepared dependencies that no kept entry needs",
			printable.Plural(tidied.Index, "install record", "install records"), printable.Plural(tidied.Objects, "object", "objects"), printable.Bytes(tidied.ObjectBytes))
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("pruning the caches: %v", err)
	}
}

// DefaultCacheLimits bound the content-keyed caches of a state dir: the
// prepared dependencies (STATE/deps), the prepared Go toolchain caches
// (STATE/toolcache/go) and the images imported into runmill's containerd
// namespace. Why these numbers:
//
//   - an entry no run used for 14 days goes (the runs' own MaxAge): what a
//     state dir holds is what its last two weeks used. Making one again
//     costs an import (seconds), a `go build std` (20 s to a few minutes)
//     or an image import (seconds) — once, when it is next needed;
//   - together the dependency and toolchain caches stay under 10 GiB, the
//     least recently used going first: room for a few installs of a large
//     project (a node_modules of 0.5–1 GB; base and candidate share their
//     files through the object store), a few toolchain caches (about 170 MB
//     each) and a few copies of an operator's build cache (one per listing,
//     so each change of it is a new copy), on a runner disk that also holds
//     the repository and the toolchains. Images are not counted (their
//     layers are shared inside containerd's store); they go by age alone;
//   - the size bound never takes an entry used in the last hour: `runmill
//     deps import` makes an entry a few minutes before the verify that
//     holds it (the Action's prepare step), and the bound must not undo it.
//     Past the bound by what the last hour used, the caches stay so until
//     those entries age.
var DefaultCacheLimits = lastuse.Limits{UnusedFor: 14 * 24 * time.Hour, MaxBytes: 10 << 30, MinAge: time.Hour}

// CacheLimitsText states l for a person.
func CacheLimitsText(l lastuse.Limits) string {
	return fmt.Sprintf("an entry unused for %s goes, and beyond %s together the least recently used go first (never one used within %s)",
		printable.Days(l.UnusedFor), printable.Bytes(l.MaxBytes), printable.Days(l.MinAge))
}

// goToolCacheDir is where o's prepared Go toolchain caches live.
func goToolCacheDir(o VerifyOptions) string {
	return cmp.Or(o.GoToolCacheDir, filepath.Join(o.StateDir, "toolcache", "go"))
}

// PruneCaches prunes the prepared dependencies of stateDir and the prepared
// Go toolchain caches in goToolCacheDir under l (lastuse.Prune: never an
// entry a live run holds), then what the dependency entries left behind
// (deps.Tidy). It returns what it removed and what the kept entries use.
func PruneCaches(ctx context.Context, stateDir, goToolCacheDir string, now time.Time, l lastuse.Limits) ([]lastuse.Removed, deps.Tidied, lastuse.Usage, error) {
	roots := append(deps.CacheRoots(stateDir), lastuse.Root{Dir: goToolCacheDir, Keep: func(name string) bool { return name == fileDigestsName }})
	removed, usage, err := lastuse.Prune(ctx, roots, l, now)
	if ctx.Err() != nil {
		return removed, deps.Tidied{}, usage, err
	}
	tidied, terr := deps.Tidy(ctx, stateDir, l.UnusedFor, now)
	return removed, tidied, usage, errors.Join(err, terr)
}

// pruneImages deletes the images no check used for DefaultCacheLimits'
// UnusedFor (sandbox.PruneImages), and says which.
func (v *verification) pruneImages(ctx context.Context) {
	pruned, err := v.sb.PruneImages(ctx, DefaultCacheLimits.UnusedFor, v.o.Now())
	for _, img := range pruned {
		v.logf("pruned image %s (last used %s; images unused for %s go)", img.Name, img.LastUse.UTC().Format(time.RFC3339), printable.Days(DefaultCacheLimits.UnusedFor))
	}
	if err != nil {
		v.logf("pruning images: %v", err)
	}
}

// StateUsage is what the state directory holds on disk.
type StateUsage struct {
	Runs      int   // run directories
	RunsBytes int64 // of which the run directories use
	// DepsBytes are the prepared dependencies (STATE/deps), ToolCacheBytes
	// the prepared Go toolchain caches (STATE/toolcache), SandboxBytes the
	// sandbox's directory (a private containerd's image store).
	DepsBytes, ToolCacheBytes, SandboxBytes int64
	Bytes                                   int64 // the whole state directory
}

// MeasureState sums the disk use of the state directory (allocated blocks,
// each inode once: the prepared-dependency trees are hard links into one
// object store). A state directory that does not exist yet uses nothing.
func MeasureState(stateDir string) (StateUsage, error) {
	u := StateUsage{}
	entries, err := os.ReadDir(filepath.Join(stateDir, "runs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return u, fmt.Errorf("measuring the state directory %s: %w", stateDir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			u.Runs++
		}
	}
	seen := map[[2]uint64]bool{}
	var errs []error
	for _, part := range []struct {
		sub string
		n   *int64
	}{{"runs", &u.RunsBytes}, {"deps", &u.DepsBytes}, {"toolcache", &u.ToolCacheBytes}, {"sandbox", &u.SandboxBytes}} {
		n, err := lastuse.DiskUse(filepath.Join(stateDir, part.sub), seen)
		*part.n, u.Bytes = n, u.Bytes+n
		errs = append(errs, err)
	}
	rest, err := lastuse.DiskUse(stateDir, seen)
	u.Bytes += rest
	if err := errors.Join(append(errs, err)...); err != nil {
		return u, fmt.Errorf("measuring the state directory %s: %w", stateDir, err)
	}
	return u, nil
}
