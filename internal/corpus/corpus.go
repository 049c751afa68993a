// Package corpus locates the shared report corpus: real reports written by
// other projects' test suites. The files belong to those projects: tests read
// them in place and never copy them into this repository.
//
// The corpus lives beside the repository (../shared/corpus) on the machines
// the project is developed on; a clone on GitHub has no ../shared, so there
// the files are fetched from their pinned upstream sources (testdata/manifest.tsv:
// repository, commit, path, size and SHA-256 of each) into a cache outside the
// repository, and a file is used only when its bytes are the pinned ones.
// Without that, the project's own CI on GitHub could only skip the
// conformance tests or fail.
package corpus

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/runmill/verify/internal/testreq"
	"time"

	"github.com/runmill/verify/pkg/digest"
)

//go:embed testdata/manifest.tsv
var manifestTSV []byte

// DefaultSource is where the pinned files are fetched from:
// <source>/<repository>/<commit>/<path>.
const DefaultSource = "https://raw.githubusercontent.com"

// Entry is one pinned corpus file.
type Entry struct {
	File       string // slash path under the corpus directory: junit/x.xml
	SHA256     string // hex
	Size       int64
	Repository string // owner/name
	Commit     string // full commit id
	Path       string // path in Repository at Commit
}

// Manifest parses testdata/manifest.tsv.
func Manifest() ([]Entry, error) { return parseManifest(manifestTSV) }

func parseManifest(b []byte) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("manifest line %d: %d fields, want 6 (file, sha256, size, repository, commit, path)", n, len(f))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("manifest line %d: size %q is not a byte count", n, f[2])
		}
		e := Entry{File: f[0], SHA256: f[1], Size: size, Repository: f[3], Commit: f[4], Path: f[5]}
		// The file name becomes a path in the cache and the source a URL:
		// refuse anything that could leave either.
		if !localSlashPath(e.File) || !localSlashPath(e.Path) || strings.Count(e.Repository, "/") != 1 || !localSlashPath(e.Repository) {
			return nil, fmt.Errorf("manifest line %d: file, repository or path is not a plain relative path", n)
		}
		if !digest.LowerHex(e.SHA256, 64) || !digest.LowerHex(e.Commit, 40) {
			return nil, fmt.Errorf("manifest line %d: sha256 must be 64 and commit 40 lowercase hex digits", n)
		}
		if seen[e.File] {
			return nil, fmt.Errorf("manifest line %d: %s listed twice", n, e.File)
		}
		seen[e.File] = true
		out = append(out, e)
	}
	return out, sc.Err()
}

func localSlashPath(p string) bool {
	return p != "" && path.Clean(p) == p && !path.IsAbs(p) && p != "." && !strings.HasPrefix(p, "../") && filepath.IsLocal(filepath.FromSlash(p))
}

// Dir returns the corpus directory: RUNMILL_CORPUS when set, else
// <repo>/../shared/corpus when present, else the pinned files fetched into
// the user's cache (RUNMILL_CORPUS_SOURCE overrides DefaultSource). Where
// none is available the test is skipped and says so; under CI=true that is
// a failure, so CI cannot silently stop exercising the corpus.
func Dir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("RUNMILL_CORPUS"); dir != "" {
		return present(t, dir)
	}
	_, file, _, _ := runtime.Caller(0)
	shared := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus")
	if st, err := os.Stat(shared); err == nil && st.IsDir() {
		return shared
	}
	dir, err := cached()
	if err != nil {
		unavailable(t, fmt.Sprintf("no corpus at %s, and fetching it from its pinned sources failed: %v", shared, err))
	}
	return dir
}

func present(t testing.TB, dir string) string {
	t.Helper()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		unavailable(t, fmt.Sprintf("RUNMILL_CORPUS=%s is not a directory", dir))
	}
	return dir
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	testreq.Need(t, false, "corpus: %s; set RUNMILL_CORPUS to run the conformance tests", why)
}

// One fetch per test process, whatever number of tests ask.
var (
	cacheOnce sync.Once
	cacheDir  string
	cacheErr  error
)

func cached() (string, error) {
	cacheOnce.Do(func() {
		entries, err := Manifest()
		if err != nil {
			cacheErr = err
			return
		}
		base, err := os.UserCacheDir()
		if err != nil {
			cacheErr = err
			return
		}
		// Named by the manifest's digest: a changed manifest fills a new
		// directory instead of mixing pins.
		dir := filepath.Join(base, "runmill-corpus", digest.Hex(manifestTSV)[:16])
		source := os.Getenv("RUNMILL_CORPUS_SOURCE")
		if source == "" {
			source = DefaultSource
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cacheErr = Fetch(ctx, http.DefaultClient, source, dir, entries)
		cacheDir = dir
	})
	return cacheDir, cacheErr
}

// Fetch makes dir hold every entry: a file already there is kept when its
// bytes are the pinned ones, any other is fetched from source and written
// only after its size and SHA-256 match. Each file is renamed into place
// whole, so test processes fetching at once never read a partial file.
func Fetch(ctx context.Context, c *http.Client, source, dir string, entries []Entry) error {
	var errs []error
	for _, e := range entries {
		dst := filepath.Join(dir, filepath.FromSlash(e.File))
		if b, err := os.ReadFile(dst); err == nil && matches(b, e) {
			continue
		}
		if err := fetchOne(ctx, c, source, dst, e); err != nil {
			errs = append(errs, err)
			if len(errs) == 5 || ctx.Err() != nil {
				break // the source is unreachable or wrong: five say enough
			}
		}
	}
	return errors.Join(errs...)
}

// escapePath escapes each segment: corpus names hold '#' and spaces.
func escapePath(p string) string {
	seg := strings.Split(p, "/")
	for i := range seg {
		seg[i] = url.PathEscape(seg[i])
	}
	return strings.Join(seg, "/")
}

func matches(b []byte, e Entry) bool {
	return int64(len(b)) == e.Size && digest.Hex(b) == e.SHA256
}

func fetchOne(ctx context.Context, c *http.Client, source, dst string, e Entry) error {
	u := strings.TrimSuffix(source, "/") + "/" + escapePath(e.Repository) + "/" + e.Commit + "/" + escapePath(e.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", e.File, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: GET %s: %s", e.File, u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, e.Size+1))
	if err != nil {
		return fmt.Errorf("%s: GET %s: %w", e.File, u, err)
	}
	if !matches(b, e) {
		return fmt.Errorf("%s: GET %s: %d bytes with SHA-256 %s, pinned %d bytes %s: refused", e.File, u, len(b), digest.Hex(b), e.Size, e.SHA256)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// Read-only, as ../shared/corpus is: a test that writes to a corpus
	// file fails here too.
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
