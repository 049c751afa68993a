package deps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runmill/verify/internal/lastuse"
)

// goBuild is the cache of operators' Go build caches (prepareBuildCache).
const goBuild = "go-build"

// cached are the caches under StateDir/deps whose entries are keyed by
// content: a directory of entries each.
var cached = []string{NPM, GoModules, goBuild, Cargo}

// CacheRoots are the directories of content-keyed entries under
// stateDir/deps, for lastuse.Prune: a run holds every entry it uses, from
// before it reads it until Prepared.Close, and stamps each use (entry,
// indexed). What else is in them — an import a crash left beside the
// cache — goes by the same rule, by its age.
func CacheRoots(stateDir string) []lastuse.Root {
	var out []lastuse.Root
	for _, s := range cached {
		out = append(out, lastuse.Root{Dir: cacheDir(stateDir, s)})
	}
	return out
}

// Tidied is what Tidy removed.
type Tidied struct {
	Index       int   // install records (StateDir/deps/index)
	Objects     int   // objects no entry links
	ObjectBytes int64 // their bytes
}

// Tidy removes what the entries left after pruning no longer need: an
// install record (a commit's pointer to its entry) whose entry is gone or
// that no run read for longer than unusedFor, and every object of the
// shared store that no entry links (its link count is 1: the store's own).
// Objects are judged only while no import holds the store (objects.fill):
// a new object has no other link until its import makes one; when an
// import is under way they wait for the next run. A done ctx stops it
// between two files, and is the error.
func Tidy(ctx context.Context, stateDir string, unusedFor time.Duration, now time.Time) (Tidied, error) {
	var t Tidied
	var errs []error
	for _, s := range cached {
		dir := filepath.Join(stateDir, "deps", "index", s)
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if ctx.Err() != nil {
				return t, errors.Join(append(errs, ctx.Err())...)
			}
			p := filepath.Join(dir, e.Name())
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			gone := now.Sub(info.ModTime()) > unusedFor
			if !gone {
				b, err := os.ReadFile(p)
				hexKey, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "sha256:")
				if err == nil && ok && !strings.ContainsAny(hexKey, "/.") && hexKey != "" {
					_, err := os.Lstat(filepath.Join(cacheDir(stateDir, s), hexKey))
					gone = errors.Is(err, fs.ErrNotExist)
				}
			}
			if gone {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
					continue
				}
				t.Index++
			}
		}
	}
	store := newObjects(stateDir).dir
	release, ok := lastuse.Exclusive(store)
	if !ok {
		return t, errors.Join(errs...)
	}
	defer release()
	fans, err := os.ReadDir(store)
	if err != nil {
		return t, errors.Join(append(errs, err)...)
	}
	for _, fan := range fans {
		if !fan.IsDir() {
			continue
		}
		dir := filepath.Join(store, fan.Name())
		objs, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			if ctx.Err() != nil {
				return t, errors.Join(append(errs, ctx.Err())...)
			}
			p := filepath.Join(dir, o.Name())
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
				continue
			}
			if err := os.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("removing the unlinked object %s: %w", p, err))
				continue
			}
			t.Objects++
			t.ObjectBytes += st.Blocks * 512
		}
	}
	return t, errors.Join(errs...)
}
