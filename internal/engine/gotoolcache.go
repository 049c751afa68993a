package engine

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/lastuse"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/treehash"
)

// The prepared Go toolchain cache (issue 16). A Go check's private, empty
// GOCACHE made every run recompile the standard library (20 s and more on
// this kind of machine, twice per verification). runmill now builds, once
// per toolchain identity, a build cache holding the compiled standard
// library — by running only `go build std` in a sandbox task with the
// check's own toolchain root (host paths or image) and environment: no
// repository code, no checkout of the change, no network — keeps it in
// StateDir/toolcache/go/<key>, and offers it read-only as GOCACHE to every
// Go check — joined under the operator's build_cache when one is given
// (goToolchainCache). The go command tolerates a cache it cannot write:
// what it misses it builds in the task's TMPDIR.
//
// Why the key may be approximate: the go command addresses its cache by
// action ids that hash every input of a compile (the compiler's own id,
// GOROOT, GOOS/GOARCH, flags, the C compiler for cgo packages). An entry
// built for another toolchain is never read, it only stops hitting. The
// key therefore only decides how many caches runmill keeps; it cannot make
// a check see a result it did not compute. It hashes what picks the
// toolchain and its build settings: the image file or the Go toolchain
// found on the task's PATH (by content: GOROOT/VERSION, bin/go and the
// pkg/tool programs, toolident.go), the C compilers on that PATH, and the
// task's whole environment.
//
// Nothing a check run compiles is ever added: the cache is made from the
// toolchain's own sources only, and a candidate run (the change under
// test) can write nothing a later run reads.

// goToolCacheSchema changes when the layout or the build script does.
const goToolCacheSchema = "runmill-go-toolchain-cache/3"

// goToolCacheTimeout bounds the one `go build std` of a toolchain.
const goToolCacheTimeout = 10 * time.Minute

// maxGoToolCache bounds the archive the task hands back (the report file's
// own limit, sandbox.Limits.FileBytes, is 1 GiB).
const maxGoToolCache = 1 << 30

// goCommand matches a command that runs the go command: go test, go build,
// go vet… as a word of the shell command, not "cargo test" or "gotest".
var goCommand = regexp.MustCompile(`(^|[\s;&|(\x60$])go[ \t]+(test|build|vet|run|install|list|generate|tool)\b`)

// isGoCheck reports whether a check uses the go command: it declares the
// go-modules strategy or its command runs go.
func isGoCheck(c discovery.Check) bool {
	return c.Dependencies == deps.GoModules || goCommand.MatchString(c.Command)
}

// goToolCaches builds and hands out prepared toolchain caches; one per
// executor, safe for concurrent use (a check's baseline and candidate may
// ask for the same key at once: one builds, the other waits).
type goToolCaches struct {
	dir string // StateDir/toolcache/go
	mu  sync.Mutex
	// builds are this run's results by key: built or verified once, then
	// shared by every check run of the run.
	builds map[string]*goToolBuild
	// fileDigs memoises toolchain file digests in dir (toolident.go).
	digestsOnce sync.Once
	fileDigs    *fileDigests
	// uses are the caches this run holds while its checks use them: a
	// pruner (PruneCaches) never takes one, and each use is stamped.
	uses lastuse.Set
}

// release lets go of the caches the run held.
func (g *goToolCaches) release() {
	if g != nil {
		g.uses.Close()
	}
}

// digests is the executor's memo of toolchain file digests, kept beside
// the caches; nil without a cache directory.
func (g *goToolCaches) digests() *fileDigests {
	if g == nil || g.dir == "" {
		return nil
	}
	g.digestsOnce.Do(func() { g.fileDigs = &fileDigests{path: filepath.Join(g.dir, fileDigestsName)} })
	return g.fileDigs
}

type goToolBuild struct {
	done chan struct{}
	path string // the cache directory ("" when none could be made)
	note string // what the check run's record says about it
	err  error  // why there is none (never fails a check)
}

// receiptName is the file beside each cache tree that holds its
// fingerprint: a tree that no longer hashes to it is rebuilt.
const receiptName = "fingerprint"

// goToolchainCache gives a Go check the prepared toolchain cache: it adds
// it to view and returns the note for the record. Without an operator build
// cache it is the GOCACHE (read-only bind, GODEBUG=goindex=0); with one it
// is joined under it (view.GoCacheLayers: one read-only GOCACHE holding
// both, the operator's entries first). A check that is not a Go check is
// left as it is. A cache that cannot be made or joined is a note, never a
// failure: the check then compiles what its GOCACHE lacks itself, as before.
//
// Why a union of two caches is a valid cache: the go command names an
// action entry by the hash of every input of the action (sources, flags,
// the toolchain's own id) and an output by the hash of its bytes, so an
// entry present in either cache is a result of exactly the computation
// that looks it up. Where both hold an action id (the operator compiled
// std too), either output is a result of that action; the operator's is
// seen, and its output file is in the same layer. Nothing is written.
func (e *executor) goToolchainCache(ctx context.Context, c discovery.Check, view *deps.View, env []string) string {
	if e.goCaches == nil || !isGoCheck(c) {
		return ""
	}
	operator := view.GoCache
	if operator != "" {
		if u, ok := e.sb.(interface{ UnionsGoCaches() bool }); !ok || !u.UnionsGoCaches() {
			return "no prepared Go toolchain cache: the kernel has no overlayfs to join it with the operator's build cache, which is the GOCACHE alone"
		}
		if strings.ContainsAny(operator+e.goCaches.dir, ":,\\") {
			// overlayfs cannot name such a layer (sandbox.Spec.GoCacheLayers).
			return "no prepared Go toolchain cache: the path of the operator's build cache or of the prepared caches holds ':', ',' or '\\', which an overlay cannot join; the operator's build cache is the GOCACHE alone"
		}
	}
	key := goToolKey(e.goCaches.digests(), c.Image, e.hostPaths, env)
	b := e.goCaches.get(ctx, e, key, c.Image, env)
	if b.path == "" {
		if b.err != nil {
			e.logf("%s: no prepared Go toolchain cache (%v); the standard library is compiled in the check", c.ID, b.err)
			return "no prepared Go toolchain cache: " + b.err.Error()
		}
		return ""
	}
	if operator != "" {
		view.GoCacheLayers = append(view.GoCacheLayers, b.path)
		return b.note + "; offered read-only under the operator's build cache as one GOCACHE (the operator's entries first)"
	}
	view.ReadOnly = append(view.ReadOnly, b.path)
	view.GoCache = b.path
	if !slices.ContainsFunc(view.Env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }) {
		// The module index is the one cache write the go command does not
		// tolerate failing (see deps.goPrepared.attach).
		view.Env = append(view.Env, goIndexOff)
	}
	return b.note
}

// goIndexOff is what a read-only GOCACHE needs (deps.goPrepared.attach sets
// it too).
const goIndexOff = "GODEBUG=goindex=0"

// goViewOnlyEnv are the exact settings the go-modules view adds besides
// where modules come from: the module index off and -mod=readonly, which
// change how the go command loads a module, never how std compiles. The key
// leaves them out, so a go-modules check (with or without the operator's
// build cache) shares the toolchain's cache with every other Go check.
var goViewOnlyEnv = []string{goIndexOff, "GOFLAGS=-mod=readonly"}

// goModuleOnlyEnv say where modules come from, which the standard library
// never does: a go-modules check's prepared GOMODCACHE, at a path of its
// own per go.sum, shares the toolchain's cache with every other Go check.
var goModuleOnlyEnv = []string{"GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE", "GOVCS"}

// goToolKey is the toolchain identity the cache is kept under; d memoises
// the toolchain files' digests (nil: hashed every time).
func goToolKey(d *fileDigests, image string, hostPaths, env []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", goToolCacheSchema)
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(goModuleOnlyEnv, k) || slices.Contains(goViewOnlyEnv, kv)
	})
	sort.Strings(env)
	for _, kv := range env {
		fmt.Fprintf(h, "env %q\n", kv)
	}
	if image != "" {
		fmt.Fprintf(h, "image %s\n", d.sum(image))
		return hex.EncodeToString(h.Sum(nil))
	}
	fmt.Fprintf(h, "host_paths %q\n", hostPaths)
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	// The first go and C compilers on the task's PATH, as the host has
	// them (a task with host paths sees them at the same paths), by
	// content (toolident.go).
	for _, tool := range []string{"go", "cc", "gcc", "clang"} {
		for _, dir := range filepath.SplitList(path) {
			real, err := filepath.EvalSymlinks(filepath.Join(dir, tool))
			if err != nil {
				continue
			}
			if tool == "go" {
				fmt.Fprintf(h, "go %s\n", d.goToolchainIdentity(real))
			} else {
				fmt.Fprintf(h, "%s %s\n", tool, d.sum(real))
			}
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// get returns the cache of key, building it at most once per run.
func (g *goToolCaches) get(ctx context.Context, e *executor, key, image string, env []string) *goToolBuild {
	g.mu.Lock()
	b, ok := g.builds[key]
	if !ok {
		if g.builds == nil {
			g.builds = map[string]*goToolBuild{}
		}
		b = &goToolBuild{done: make(chan struct{})}
		g.builds[key] = b
	}
	g.mu.Unlock()
	if ok {
		select {
		case <-b.done:
		case <-ctx.Done():
			return &goToolBuild{err: ctx.Err()}
		}
		return b
	}
	defer close(b.done)
	b.path, b.note, b.err = g.prepare(ctx, e, key, image, env)
	return b
}

// prepare reuses the cache of key when its tree still hashes to its
// recorded fingerprint, and builds it otherwise.
func (g *goToolCaches) prepare(ctx context.Context, e *executor, key, image string, env []string) (string, string, error) {
	final := filepath.Join(g.dir, key)
	tree := filepath.Join(final, "cache")
	if err := g.uses.Use(final); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("holding the toolchain cache %s: %w", final, err)
	}
	if want, err := bounded.ReadFile(filepath.Join(final, receiptName), 1<<10); err == nil {
		d, st, err := treehash.Sum(ctx, tree, treehash.Options{})
		if err == nil && d.String() == strings.TrimSpace(string(want)) {
			return tree, fmt.Sprintf("prepared Go toolchain cache %s: tree %s (%d files), reused, every byte verified", key[:16], d, st.Files), nil
		}
		// Changed or damaged: set it aside and build it again.
		if err := os.RemoveAll(final); err != nil {
			return "", "", fmt.Errorf("removing the damaged toolchain cache %s: %w", final, err)
		}
	}
	if err := e.waitGate(ctx); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return "", "", err
	}
	work, err := os.MkdirTemp(g.dir, ".build-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(work)
	// A build a crash left goes by age (PruneCaches); this one is held.
	building, err := lastuse.Hold(work)
	if err != nil {
		return "", "", err
	}
	defer building.Close()
	start := time.Now()
	if err := g.build(ctx, e, work, image, env); err != nil {
		return "", "", err
	}
	d, st, err := treehash.Sum(ctx, filepath.Join(work, "cache"), treehash.Options{})
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(work, receiptName), []byte(d.String()+"\n"), 0o644); err != nil {
		return "", "", err
	}
	os.RemoveAll(filepath.Join(work, "co"))
	if err := os.Chmod(work, 0o755); err != nil {
		return "", "", err
	}
	if err := os.Rename(work, final); err != nil {
		// Another runmill built the same key meanwhile: use its tree.
		if _, serr := os.Stat(filepath.Join(final, receiptName)); serr == nil && g.uses.Use(final) == nil {
			return tree, fmt.Sprintf("prepared Go toolchain cache %s: built by a concurrent run", key[:16]), nil
		}
		return "", "", err
	}
	if err := g.uses.Use(final); err != nil {
		return "", "", err
	}
	e.logf("prepared the Go toolchain cache %s (the standard library, %d files) in %s", key[:16], st.Files, time.Since(start).Round(time.Millisecond))
	return tree, fmt.Sprintf("prepared Go toolchain cache %s: tree %s (%d files), built from the toolchain's own sources", key[:16], d, st.Files), nil
}

// build runs `go build std` in a task with the check's toolchain root and
// environment and unpacks the cache it hands back as an archive through
// its one writable file.
func (g *goToolCaches) build(ctx context.Context, e *executor, work, image string, env []string) error {
	co := filepath.Join(work, "co")
	if err := os.Mkdir(co, 0o755); err != nil {
		return err
	}
	out := filepath.Join(co, "cache.tar")
	if err := os.WriteFile(out, nil, 0o644); err != nil {
		return err
	}
	// In the task the file is under the checkout's fixed path.
	inTask := sandbox.CheckoutPath + "/cache.tar"
	script := goToolCacheScript + "cd \"$GOCACHE\"\ntar -cf " + inTask + " .\n"
	task, err := e.sb.Prepare(ctx, sandbox.Spec{
		Command: script, Checkout: co, Env: env, ReadOnly: []string{co}, ReportFile: out,
		HostPaths: e.hostPaths, Image: image, Timeout: goToolCacheTimeout, MaxOutput: 64 << 10,
	})
	if err != nil {
		return err
	}
	res, err := task.Run(ctx)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.TimedOut || res.OOMKilled {
		msg := strings.TrimSpace(string(res.Stderr.Kept))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return fmt.Errorf("go build std in the sandbox exited %d (timed out %t): %s", res.ExitCode, res.TimedOut, msg)
	}
	f, _, err := bounded.OpenRegular(out)
	if err != nil {
		return err
	}
	defer f.Close()
	return untarGoCache(f, filepath.Join(work, "cache"))
}

// goToolCacheScript fills the task's private GOCACHE with the standard
// library as a Go check's go test needs it: compiled (go build std), and
// vetted as a dependency (go test vets every package a tested package
// imports, with flags of its own for the standard library), through a test
// of a package runmill writes in TMPDIR that only imports every public
// standard package. No repository code is involved.
const goToolCacheScript = `set -e
d="$TMPDIR/runmill-stdcache"
mkdir -p "$d"
cd "$d"
go mod init runmill.invalid/stdcache >/dev/null 2>&1
{
  echo 'package stdcache'
  echo 'import ('
  go list -e -f '{{if not .Error}}{{.ImportPath}}{{end}}' std | grep -v -e '^internal/' -e '/internal/' -e '/internal$' -e '^vendor/' -e '^cmd/' | sed 's/.*/	_ "&"/'
  echo ')'
} > std_test.go
go build std
go test -count=1 -run '^$' . >/dev/null
`

// goCacheName is what a Go build cache holds: 256 fan-out directories of
// content-addressed entries ("-a" action entries, "-d" outputs), and a few
// bookkeeping files at the top.
var goCacheName = regexp.MustCompile(`^(README|trim\.txt|testexpire\.txt|[0-9a-f]{2}|[0-9a-f]{2}/[0-9a-f]{64}-[ad])$`)

// untarGoCache unpacks a Go build cache archive into dst (which it
// creates), keeping only directories and regular files with cache names:
// the archive was written by a task, so a link, a device or a path outside
// the cache is refused.
func untarGoCache(r io.Reader, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(io.LimitReader(r, maxGoToolCache))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the toolchain cache archive: %w", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" || name == "." {
			continue
		}
		if !goCacheName.MatchString(name) {
			return fmt.Errorf("the toolchain cache archive holds %q, which is not a Go build cache entry", h.Name)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("the toolchain cache archive holds %q of type %c; only directories and regular files are accepted", h.Name, h.Typeflag)
		}
	}
}

// waitGate waits until the probe has passed: nothing runs in the sandbox
// before (a toolchain cache build included).
func (e *executor) waitGate(ctx context.Context) error {
	if e.gate == nil {
		return nil
	}
	select {
	case <-e.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return e.gateErr
}
