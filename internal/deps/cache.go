package deps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/treehash"
)

// ReceiptSchema names the receipt format.
const ReceiptSchema = evidence.DependencyReceiptSchema

// cacheDir is where the content-keyed entries of one strategy live.
func cacheDir(stateDir, strategy string) string {
	return filepath.Join(stateDir, "deps", strategy)
}

// contentKey is the entry's key; evidence verify recomputes it from the
// inputs a check run records.
func contentKey(strategy string, inputs map[string]string) string {
	return evidence.DependencyKey(strategy, inputs)
}

// entry returns the cached tree for inputs: verified byte for byte when it
// exists (a mismatch removes the entry and fails), imported from src
// otherwise. src is hashed before and after the copy is hashed, so an
// install that changes while it is imported is refused rather than cached
// half-old, half-new.
//
// The import is assembled in scratch (the run's own directory, on the
// cache's filesystem) and renamed into place, so a crash never leaves a
// half-made entry, and what it leaves is swept with the run's other
// leftovers; with no scratch it is assembled beside the entry (and pruned
// by age if a crash leaves it, prune.go).
//
// The entry is held in objs' Set from before it is read until the Set is
// closed (prune.go: a pruner never takes an entry a live run holds), and
// an import holds the object store while it fills its tree.
func entry(ctx context.Context, stateDir, scratch, strategy string, inputs map[string]string, objs *objects, fill func(tree string) error) (string, Receipt, error) {
	key := contentKey(strategy, inputs)
	dir := filepath.Join(cacheDir(stateDir, strategy), key[len("sha256:"):])
	tree := filepath.Join(dir, "tree")
	if err := objs.uses.Use(dir); !errors.Is(err, fs.ErrNotExist) {
		// Held, or there but not a directory it could hold: reuse judges
		// it (and removes what is not an entry).
		r, err := reuse(ctx, dir, strategy, key, inputs)
		return tree, r, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", Receipt{}, err
	}
	if scratch == "" {
		scratch = filepath.Dir(dir)
	} else if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", Receipt{}, err
	}
	tmp := filepath.Join(scratch, ".import-"+fsname.Random(8))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", Receipt{}, err
	}
	defer removeTree(tmp) // a no-op once renamed
	filling, err := objs.fill(tmp)
	if err != nil {
		return "", Receipt{}, err
	}
	defer filling()
	if err := fill(filepath.Join(tmp, "tree")); err != nil {
		return "", Receipt{}, err
	}
	sum, st, err := treehash.Sum(ctx, filepath.Join(tmp, "tree"), treehash.Options{})
	if err != nil {
		return "", Receipt{}, err
	}
	r := Receipt{Schema: ReceiptSchema, Strategy: strategy, Key: key, Inputs: inputs, Fingerprint: sum.String(),
		Files: st.Files, Dirs: st.Dirs, Symlinks: st.Symlinks, Bytes: st.Bytes}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "receipt.json"), append(b, '\n'), 0o444); err != nil {
		return "", Receipt{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run imported the same key first: use (and verify) its entry.
		if serr := objs.uses.Use(dir); serr == nil {
			r, err := reuse(ctx, dir, strategy, key, inputs)
			return tree, r, err
		}
		return "", Receipt{}, err
	}
	if err := objs.uses.Use(dir); err != nil {
		return "", Receipt{}, err
	}
	return tree, r, nil
}

// maxReceipt bounds the receipt read back from disk.
const maxReceipt = 1 << 20

// reuse checks the receipt of an existing entry and re-hashes every byte of
// its tree (spec § 3 step 4: "reuse verifies the receipt and every cached
// byte"). A mutated entry is removed so the next run imports afresh.
func reuse(ctx context.Context, dir, strategy, key string, inputs map[string]string) (Receipt, error) {
	r, err := func() (Receipt, error) {
		f, _, err := bounded.OpenRegular(filepath.Join(dir, "receipt.json"))
		if err != nil {
			return Receipt{}, fmt.Errorf("its receipt is unreadable: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxReceipt+1))
		if err != nil || len(b) > maxReceipt {
			return Receipt{}, fmt.Errorf("its receipt is unreadable or too large")
		}
		var r Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return Receipt{}, fmt.Errorf("its receipt is malformed: %w", err)
		}
		if r.Schema != ReceiptSchema || r.Strategy != strategy || r.Key != key || !maps.Equal(r.Inputs, inputs) || contentKey(r.Strategy, r.Inputs) != key {
			return Receipt{}, errors.New("its receipt does not describe this key")
		}
		sum, st, err := treehash.Sum(ctx, filepath.Join(dir, "tree"), treehash.Options{})
		if err != nil {
			return Receipt{}, fmt.Errorf("hashing it failed: %w", err)
		}
		if sum.String() != r.Fingerprint || st.Files != r.Files || st.Dirs != r.Dirs || st.Symlinks != r.Symlinks || st.Bytes != r.Bytes {
			return Receipt{}, fmt.Errorf("its tree hashes to %s (%d files, %d bytes), the receipt says %s (%d files, %d bytes)",
				sum, st.Files, st.Bytes, r.Fingerprint, r.Files, r.Bytes)
		}
		r.Reused = true
		return r, nil
	}()
	if ctx.Err() != nil {
		return Receipt{}, ctx.Err()
	}
	if err != nil {
		rmErr := removeTree(dir)
		e := refuse(strategy, "the cache entry %s was mutated: %v; it has been removed", dir, err)
		if rmErr != nil {
			e = refuse(strategy, "the cache entry %s was mutated: %v; removing it failed too (%v): delete it by hand", dir, err, rmErr)
		}
		return Receipt{}, e
	}
	return r, nil
}

// hashTree is the fingerprint of a cached or source tree.
func hashTree(ctx context.Context, dir string) (treehash.Digest, treehash.Stats, error) {
	return treehash.Sum(ctx, dir, treehash.Options{})
}

// Entry is one content-keyed entry of a dependency cache, as it lies in a
// state dir (a restored one, say).
type Entry struct {
	Strategy string // NPM, GoModules or the operators' Go build caches
	Name     string // its directory name: the content key's hex
	Dir      string
}

// Tree is the entry's cached tree.
func (e Entry) Tree() string { return filepath.Join(e.Dir, "tree") }

// Entries lists the directories of stateDir's dependency caches (what
// CacheRoots prunes), entry or not: a name that is not a content key is
// listed too, for the caller to refuse.
func Entries(stateDir string) ([]Entry, error) {
	var out []Entry
	for _, s := range cached {
		dir := cacheDir(stateDir, s)
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			out = append(out, Entry{Strategy: s, Name: e.Name(), Dir: filepath.Join(dir, e.Name())})
		}
	}
	return out, nil
}

// Vet is reuse for an entry found in a state dir rather than asked for by
// a commit: the receipt must describe the entry's own name, and every byte
// of its tree is hashed again. An entry that fails is removed and the
// error (RM-VERIFY-005) says why.
func (e Entry) Vet(ctx context.Context) (Receipt, error) {
	key := "sha256:" + e.Name
	var r Receipt
	b, err := bounded.ReadFile(filepath.Join(e.Dir, "receipt.json"), maxReceipt)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		rmErr := removeTree(e.Dir)
		if rmErr != nil {
			return Receipt{}, refuse(e.Strategy, "the cache entry %s has no readable receipt (%v); removing it failed too (%v): delete it by hand", e.Dir, err, rmErr)
		}
		return Receipt{}, refuse(e.Strategy, "the cache entry %s has no readable receipt (%v); it has been removed", e.Dir, err)
	}
	return reuse(ctx, e.Dir, e.Strategy, key, r.Inputs)
}

// Remove removes the entry.
func (e Entry) Remove() error { return removeTree(e.Dir) }
