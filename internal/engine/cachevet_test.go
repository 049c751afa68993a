package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/treehash"
)

// restoredState is a state dir as actions/cache restores it: one prepared
// Go toolchain cache and one npm entry, each with a receipt that matches
// its tree, plus what is no entry (a crashed build, the digests memo).
type restoredState struct {
	dir, tool, npm string
}

func newRestoredState(t *testing.T) restoredState {
	t.Helper()
	s := restoredState{dir: t.TempDir()}
	s.tool = filepath.Join(s.dir, "toolcache", "go", strings.Repeat("a1", 32))
	writeFiles(t, filepath.Join(s.tool, "cache"), map[string]string{
		"README": "go build cache\n", "0f/" + strings.Repeat("0f", 32) + "-d": "compiled testing package\n",
	})
	forgeToolReceipt(t, s.tool)
	os.WriteFile(filepath.Join(s.dir, "toolcache", "go", "file-digests.json"), []byte(`{}`), 0o644)
	os.MkdirAll(filepath.Join(s.dir, "toolcache", "go", ".build-x"), 0o755)

	inputs := map[string]string{"package.json": "sha256:" + strings.Repeat("1", 64), "package-lock.json": "sha256:" + strings.Repeat("2", 64)}
	key := evidence.DependencyKey(deps.NPM, inputs)
	s.npm = filepath.Join(s.dir, "deps", deps.NPM, strings.TrimPrefix(key, "sha256:"))
	writeFiles(t, filepath.Join(s.npm, "tree"), map[string]string{"node_modules/left-pad/index.js": "module.exports = s => s\n"})
	forgeDepsReceipt(t, s.npm, key, inputs)
	return s
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// forgeToolReceipt writes the fingerprint that matches the tree as it is:
// what anyone saving a poisoned entry can do.
func forgeToolReceipt(t *testing.T, entry string) {
	t.Helper()
	d, _, err := treehash.Sum(context.Background(), filepath.Join(entry, "cache"), treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "fingerprint"), []byte(d.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func forgeDepsReceipt(t *testing.T, entry, key string, inputs map[string]string) {
	t.Helper()
	d, st, err := treehash.Sum(context.Background(), filepath.Join(entry, "tree"), treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := deps.Receipt{Schema: deps.ReceiptSchema, Strategy: deps.NPM, Key: key, Inputs: inputs, Fingerprint: d.String(),
		Files: st.Files, Dirs: st.Dirs, Symlinks: st.Symlinks, Bytes: st.Bytes}
	b, _ := json.Marshal(r)
	p := filepath.Join(entry, "receipt.json")
	os.Remove(p)
	if err := os.WriteFile(p, b, 0o444); err != nil {
		t.Fatal(err)
	}
}

func vetResult(es []engine.CacheEntry) map[string]string {
	out := map[string]string{}
	for _, e := range es {
		v := "kept"
		if e.Sealed {
			v = "kept sealed"
		}
		if !e.Kept {
			v = "refused: " + e.Cause
		}
		out[e.Cache+"/"+e.Name[:min(len(e.Name), 8)]] = v
	}
	return out
}

// TestVetRestoredRefusesTamperedEntries: a restored entry is kept only
// when its receipt and every byte verify and, given a trust, its seal was
// made with the trusted key over exactly its name and tree. A poisoned
// tree with a receipt forged to match, an unsealed entry, another key's
// seal and a sealed entry moved under another name are refused and
// removed; so is whatever is no entry.
func TestVetRestoredRefusesTamperedEntries(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Now() }
	_, key, _ := newTestKey(t)
	_, other, _ := newTestKey(t)
	trust, err := engine.CacheTrustOfKey(key, now())
	if err != nil {
		t.Fatal(err)
	}
	const (
		tool = "go-toolchain/a1a1a1a1"
		junk = "go-toolchain/.build-x"
		memo = "go-toolchain/file-dig"
	)
	var npm string
	seal := func(t *testing.T, s restoredState, k *evidence.SigningKey) {
		t.Helper()
		es, err := engine.SealCaches(ctx, engine.CacheOptions{StateDir: s.dir, SigningKey: k, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Cache != "go-toolchain" && e.Cache != "deps/npm" {
				continue
			}
			if !strings.HasPrefix(e.Name, ".") && !strings.HasPrefix(e.Name, "file-") && !e.Sealed {
				t.Fatalf("not sealed: %+v", e)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		trust bool
		edit  func(t *testing.T, s restoredState)
		want  map[string]string // prefix of each verdict
	}{
		{"no trust: receipts and bytes only", false, nil,
			map[string]string{tool: "kept", junk: "refused: not a cache entry", memo: "refused: not a cache entry"}},
		{"unsealed with a trust", true, nil,
			map[string]string{tool: "refused: it has no seal", junk: "refused: not a cache entry", memo: "refused: not a cache entry"}},
		{"sealed with the trusted key", true, func(t *testing.T, s restoredState) { seal(t, s, key) },
			map[string]string{tool: "kept sealed"}},
		{"sealed, then the toolchain cache poisoned and its receipt forged", true, func(t *testing.T, s restoredState) {
			seal(t, s, key)
			writeFiles(t, filepath.Join(s.tool, "cache"), map[string]string{"0f/" + strings.Repeat("0f", 32) + "-d": "a testing package whose tests always pass\n"})
			forgeToolReceipt(t, s.tool)
		}, map[string]string{tool: "refused: its seal is of another tree"}},
		{"sealed, then a dependency poisoned and its receipt forged", true, func(t *testing.T, s restoredState) {
			seal(t, s, key)
			var r deps.Receipt
			b, _ := os.ReadFile(filepath.Join(s.npm, "receipt.json"))
			json.Unmarshal(b, &r)
			writeFiles(t, filepath.Join(s.npm, "tree"), map[string]string{"node_modules/left-pad/index.js": "require('child_process')\n"})
			forgeDepsReceipt(t, s.npm, r.Key, r.Inputs)
		}, map[string]string{tool: "kept sealed", "npm": "refused: its seal is of another tree"}},
		{"sealed, then poisoned without a forged receipt", true, func(t *testing.T, s restoredState) {
			seal(t, s, key)
			writeFiles(t, filepath.Join(s.tool, "cache"), map[string]string{"README": "changed\n"})
		}, map[string]string{tool: "refused: its tree hashes to"}},
		{"sealed with another key", true, func(t *testing.T, s restoredState) { seal(t, s, other) },
			map[string]string{tool: "refused: its seal does not verify against the trusted key", "npm": "refused: its seal does not verify"}},
		{"a sealed entry moved under another key", true, func(t *testing.T, s restoredState) {
			seal(t, s, key)
			if err := os.Rename(s.tool, filepath.Join(filepath.Dir(s.tool), strings.Repeat("b2", 32))); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"go-toolchain/b2b2b2b2": "refused: its seal is of another tree"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRestoredState(t)
			npm = "deps/npm/" + filepath.Base(s.npm)[:8]
			if tc.edit != nil {
				tc.edit(t, s)
			}
			o := engine.CacheOptions{StateDir: s.dir, Now: now}
			if tc.trust {
				o.Trust = trust
			}
			es, err := engine.VetCaches(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			got := vetResult(es)
			for k, want := range tc.want {
				if k == "npm" {
					k = npm
				}
				if !strings.HasPrefix(got[k], want) {
					t.Errorf("%s: got %q, want %q…\nall: %v", k, got[k], want, got)
				}
			}
			for _, e := range es {
				_, err := os.Stat(e.Dir)
				if e.Kept != (err == nil) {
					t.Errorf("%s/%s: kept %t, on disk %t", e.Cache, e.Name, e.Kept, err == nil)
				}
			}
		})
	}
}

// TestCacheKeys: the restore prefixes depend on the toolchain and the
// base's lockfiles only; the save keys add what the caches hold, so they
// change when an entry is sealed and are empty for an empty cache.
func TestCacheKeys(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Now() }
	_, key, _ := newTestKey(t)
	empty := t.TempDir()
	k0, err := engine.ComputeCacheKeys(ctx, engine.CacheOptions{StateDir: empty}, nil, "", os.Getenv("PATH"))
	if err != nil {
		t.Fatal(err)
	}
	if k0.GoToolchainSave != "" || k0.DepsSave != "" || !strings.HasPrefix(k0.GoToolchain, "runmill-gotool-") || !strings.HasSuffix(k0.Deps, "-") {
		t.Fatalf("empty state dir: %+v", k0)
	}
	s := newRestoredState(t)
	k1, _ := engine.ComputeCacheKeys(ctx, engine.CacheOptions{StateDir: s.dir}, nil, "", os.Getenv("PATH"))
	if _, err := engine.SealCaches(ctx, engine.CacheOptions{StateDir: s.dir, SigningKey: key, Now: now}); err != nil {
		t.Fatal(err)
	}
	k2, _ := engine.ComputeCacheKeys(ctx, engine.CacheOptions{StateDir: s.dir}, nil, "", os.Getenv("PATH"))
	if k1.GoToolchain != k0.GoToolchain || k1.Deps != k0.Deps {
		t.Errorf("restore prefixes moved with the contents: %+v, %+v", k0, k1)
	}
	if !strings.HasPrefix(k1.GoToolchainSave, k1.GoToolchain) || !strings.HasPrefix(k1.DepsSave, k1.Deps) || k1.GoToolchainSave == k2.GoToolchainSave || k1.DepsSave == k2.DepsSave {
		t.Errorf("save keys do not follow the contents: %+v, %+v", k1, k2)
	}
	k3, _ := engine.ComputeCacheKeys(ctx, engine.CacheOptions{StateDir: empty}, nil, "", t.TempDir())
	if !strings.Contains(k3.GoToolchain, "-none-") || k3.GoToolchain == k0.GoToolchain {
		t.Errorf("a PATH without go keys %q, the test's PATH %q", k3.GoToolchain, k0.GoToolchain)
	}
}
