package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/treehash"
)

// TestToolCacheHeldAndStamped: a run that reuses a prepared toolchain cache
// holds it until release (PruneCaches leaves it, however old it looks by
// the clock) and records the use (it stays after release while recent,
// and goes once that use is older than the bound); a build a crash left
// goes by its age; the digest memo beside the caches stays.
func TestToolCacheHeldAndStamped(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "toolcache", "go")
	key := strings.Repeat("0e", 32)
	final := filepath.Join(dir, key)
	if err := os.MkdirAll(final, 0o755); err != nil {
		t.Fatal(err)
	}
	// The cache as prepare makes it: the archive a build task hands back,
	// unpacked by untarGoCache, and its fingerprint beside it.
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for name, body := range map[string]string{"README": "go cache\n", "00/" + strings.Repeat("ab", 32) + "-d": "object\n"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	tree := filepath.Join(final, "cache")
	if err := untarGoCache(&archive, tree); err != nil {
		t.Fatal(err)
	}
	d, _, err := treehash.Sum(context.Background(), tree, treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(final, receiptName), []byte(d.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, ".build-123")
	if err := os.Mkdir(crashed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileDigestsName), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	month := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{final, crashed, filepath.Join(dir, fileDigestsName)} {
		if err := os.Chtimes(p, month, month); err != nil {
			t.Fatal(err)
		}
	}
	prune := func(t *testing.T, now time.Time) []string {
		t.Helper()
		removed, _, _, err := PruneCaches(context.Background(), state, dir, now, DefaultCacheLimits)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range removed {
			out = append(out, filepath.Base(r.Path))
		}
		return out
	}

	g := &goToolCaches{dir: dir}
	got, note, err := g.prepare(context.Background(), nil, key, "", nil) // the reuse path: no build, no executor
	if err != nil || got != tree || !strings.Contains(note, "reused, every byte verified") {
		t.Fatalf("prepare = %q, %q, %v; want the cache reused", got, note, err)
	}
	if removed := prune(t, time.Now().Add(60*24*time.Hour)); !slices.Equal(removed, []string{".build-123"}) {
		t.Fatalf("while held, pruned %v; want only the crashed build", removed)
	}
	g.release()
	if removed := prune(t, time.Now()); len(removed) != 0 {
		t.Fatalf("released, used just now: pruned %v", removed)
	}
	// Cancelled (SIGTERM): what is due stays, and the error says why.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if removed, _, _, err := PruneCaches(done, state, dir, time.Now().Add(DefaultCacheLimits.UnusedFor+time.Hour), DefaultCacheLimits); len(removed) != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("PruneCaches with a done ctx = %v, %v; want nothing removed, context.Canceled", removed, err)
	}
	if removed := prune(t, time.Now().Add(DefaultCacheLimits.UnusedFor+time.Hour)); !slices.Equal(removed, []string{key}) {
		t.Fatalf("unused for longer than the bound: pruned %v, want %s", removed, key)
	}
	if _, err := os.Stat(filepath.Join(dir, fileDigestsName)); err != nil {
		t.Errorf("the digest memo went: %v", err)
	}
}
