package corpus

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestManifestMatchesSharedCorpus: the manifest names every corpus file,
// and only those, with their exact size and SHA-256, so the files fetched on
// GitHub are the ones the goldens were written from.
func TestManifestMatchesSharedCorpus(t *testing.T) {
	dir := Dir(t)
	entries, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]Entry{}
	for _, e := range entries {
		pinned[e.File] = e
	}
	onDisk := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "SOURCES.md" || strings.HasPrefix(d.Name(), ".fetch-") {
			return nil // the curators' notes, not a report; an interrupted fetch
		}
		onDisk++
		e, ok := pinned[rel]
		if !ok {
			t.Errorf("%s is in the corpus but not in testdata/manifest.tsv", rel)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !matches(b, e) {
			t.Errorf("%s: %d bytes, not the pinned %d bytes with SHA-256 %s", rel, len(b), e.Size, e.SHA256)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if onDisk != len(entries) {
		t.Errorf("corpus holds %d reports, manifest pins %d", onDisk, len(entries))
	}
}

// upstream serves the corpus files as raw.githubusercontent.com serves them
// (/<repository>/<commit>/<path>), from the real corpus; override replaces
// one file's bytes.
func upstream(t *testing.T, dir string, entries []Entry, override map[string][]byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	byURL := map[string]Entry{}
	for _, e := range entries {
		byURL["/"+e.Repository+"/"+e.Commit+"/"+e.Path] = e
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		e, ok := byURL[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if b, ok := override[e.File]; ok {
			w.Write(b)
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestFetchFromPinnedSource: a cache filled from the pinned source is the
// corpus byte for byte; a second fetch asks for nothing; a cached file that
// changed is fetched again; bytes that are not the pinned ones are refused
// and never written.
func TestFetchFromPinnedSource(t *testing.T) {
	dir := Dir(t)
	entries, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	srv, requests := upstream(t, dir, entries, nil)
	cache := t.TempDir()
	ctx := context.Background()
	if err := Fetch(ctx, srv.Client(), srv.URL, cache, entries); err != nil {
		t.Fatal(err)
	}
	if got := requests.Load(); got != int64(len(entries)) {
		t.Errorf("first fetch made %d requests, want %d", got, len(entries))
	}
	for _, e := range entries {
		want, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
		got, err := os.ReadFile(filepath.Join(cache, filepath.FromSlash(e.File)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: fetched copy differs from the corpus (%v)", e.File, err)
		}
	}

	requests.Store(0)
	victim := filepath.Join(cache, filepath.FromSlash(entries[0].File))
	os.Chmod(victim, 0o644)
	if err := os.WriteFile(victim, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Fetch(ctx, srv.Client(), srv.URL, cache, entries); err != nil {
		t.Fatal(err)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("refetch after one file changed made %d requests, want 1", got)
	}
	if b, _ := os.ReadFile(victim); !matches(b, entries[0]) {
		t.Errorf("%s was not restored to its pinned bytes", entries[0].File)
	}

	bad := entries[1]
	evil, _ := upstream(t, dir, entries, map[string][]byte{bad.File: []byte("<testsuites/>")})
	fresh := t.TempDir()
	err = Fetch(ctx, evil.Client(), evil.URL, fresh, entries)
	if err == nil || !strings.Contains(err.Error(), bad.File) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("served bytes that are not pinned: error %v, want a refusal naming %s", err, bad.File)
	}
	if _, err := os.Stat(filepath.Join(fresh, filepath.FromSlash(bad.File))); !os.IsNotExist(err) {
		t.Errorf("refused bytes were written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh, filepath.FromSlash(entries[2].File))); err != nil {
		t.Errorf("the other files were not fetched: %v", err)
	}
}

// TestFetchUnreachableSource: a source that answers 404 for everything is
// an error naming the file and the status, nothing is written, and the
// fetch gives up after five failures instead of asking for every file.
func TestFetchUnreachableSource(t *testing.T) {
	entries, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cache := t.TempDir()
	err = Fetch(context.Background(), srv.Client(), srv.URL, cache, entries)
	if err == nil || !strings.Contains(err.Error(), entries[0].File) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("error %v, want one naming %s and the 404", err, entries[0].File)
	}
	if got := requests.Load(); got != 5 {
		t.Errorf("%d requests to a source that refuses everything, want 5", got)
	}
	if left, _ := os.ReadDir(cache); len(left) != 0 {
		t.Errorf("a failed fetch wrote %v", left)
	}
}

func TestParseManifestRefuses(t *testing.T) {
	const sum = "cba7877286cebfa69a7bc2c7c36fa7205ad255076ac3ad442d7993f873c36e44"
	const commit = "305cd1f47a0fbd606dfeacc59048ea5595ea0a96"
	row := func(file, sha, size, repo, c, p string) string {
		return strings.Join([]string{file, sha, size, repo, c, p}, "\t") + "\n"
	}
	ok := row("junit/a.xml", sum, "7", "o/r", commit, "t/a.xml")
	if es, err := parseManifest([]byte("# comment\n" + ok)); err != nil || len(es) != 1 || es[0].Size != 7 {
		t.Fatalf("valid row: %v %v", es, err)
	}
	for name, in := range map[string]string{
		"fields":        "junit/a.xml\t" + sum + "\n",
		"size":          row("junit/a.xml", sum, "-1", "o/r", commit, "t/a.xml"),
		"traversal":     row("../a.xml", sum, "7", "o/r", commit, "t/a.xml"),
		"absolute":      row("/etc/passwd", sum, "7", "o/r", commit, "t/a.xml"),
		"path escapes":  row("junit/a.xml", sum, "7", "o/r", commit, "../../x"),
		"repo":          row("junit/a.xml", sum, "7", "o/r/x", commit, "t/a.xml"),
		"short sha256":  row("junit/a.xml", sum[:10], "7", "o/r", commit, "t/a.xml"),
		"short commit":  row("junit/a.xml", sum, "7", "o/r", commit[:12], "t/a.xml"),
		"upper hex":     row("junit/a.xml", strings.ToUpper(sum), "7", "o/r", commit, "t/a.xml"),
		"listed twice":  ok + ok,
		"unclean path":  row("junit//a.xml", sum, "7", "o/r", commit, "t/a.xml"),
		"dot directory": row("./a.xml", sum, "7", "o/r", commit, "t/a.xml"),
	} {
		if _, err := parseManifest([]byte(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

// FuzzParseManifest: whatever the manifest holds, an accepted entry names
// a file inside the cache directory and a URL path with no way out.
func FuzzParseManifest(f *testing.F) {
	f.Add(manifestTSV)
	f.Add([]byte("a\tb\tc\td\te\tf\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := parseManifest(b)
		if err != nil {
			return
		}
		for _, e := range es {
			for _, p := range []string{e.File, e.Path, e.Repository} {
				if !filepath.IsLocal(filepath.FromSlash(p)) || strings.Contains("/"+p+"/", "/../") {
					t.Fatalf("accepted %q in %+v", p, e)
				}
			}
			if strings.Count(e.Repository, "/") != 1 || len(e.SHA256) != 64 || len(e.Commit) != 40 || e.Size < 0 {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}
