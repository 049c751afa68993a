package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/lastuse"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/treehash"
)

// Caches that outlive a job (the Action restores and saves them with
// actions/cache): the prepared Go toolchain caches and the prepared
// dependencies of a state dir. Whoever can save into a cache scope writes
// what a later job restores — on GitHub any workflow a pull request adds or
// edits saves into that pull request's scope, which its later runs search
// first — so a restored entry is a claim, not a fact. VetCaches judges every
// restored entry before anything uses it: its receipt and every byte of its
// tree, as a run reuses an entry, and, given a trust document, a seal
// signed with the verification's key over the entry's name and tree hash
// (evidence.Seal), which no one without the key can make for a poisoned
// tree. What fails is removed: a miss, built again by the run that needs
// it. SealCaches seals, after the run, what this state dir made.

// sealName is the seal beside each entry's tree.
const sealName = "seal.json"

// Cache names of the seals (evidence.Seal.Cache).
const (
	cacheGoToolchain = "go-toolchain"
	cacheDepsPrefix  = "deps/"
)

// CacheEntry is what VetCaches or SealCaches made of one entry.
type CacheEntry struct {
	Cache string // "go-toolchain", "deps/npm" …
	Name  string // the entry's directory name
	Dir   string
	// Kept: the entry stays. Sealed: it carries a seal that verified (or
	// SealCaches just wrote one). Cause says why it was refused.
	Kept, Sealed bool
	Fingerprint  string
	Bytes        int64
	Cause        string
}

// CacheOptions say which state dir's caches to judge and what to trust.
type CacheOptions struct {
	StateDir string
	// GoToolCacheDir is VerifyOptions.GoToolCacheDir (STATE/toolcache/go
	// when empty).
	GoToolCacheDir string
	// Trust is the trust document seals must verify against; nil judges
	// receipts and bytes alone (which trusts whoever could write the
	// entries).
	Trust []byte
	// SigningKey seals what has no seal yet (SealCaches only).
	SigningKey     *evidence.SigningKey
	RunmillVersion string
	Now            func() time.Time
}

// cacheSealWindow is how old a seal may be when the trust is the signing
// key's own (TrustOfKey): past it an entry is rebuilt and sealed afresh.
// Longer than baseline reuse's window: a toolchain cache stays right for as
// long as its toolchain is used.
const cacheSealWindow = 180 * 24 * time.Hour

// CacheTrustOfKey is the trust seals are held to when the verification's
// own key is the trust.
func CacheTrustOfKey(key *evidence.SigningKey, now time.Time) ([]byte, error) {
	return evidence.TrustOfKey(key, now, cacheSealWindow)
}

// cacheCandidate is one directory found where entries live.
type cacheCandidate struct {
	cache, name, dir, tree string
	// check verifies the receipt and re-hashes the tree (removing the
	// entry when it fails: deps' entries do so themselves).
	check func(ctx context.Context) (treehash.Digest, treehash.Stats, error)
}

// VetCaches judges every entry of o's caches (see above) and removes what
// fails, including what is no entry at all (a leftover build, the
// toolchain digests memo, which records file digests a restored copy could
// misstate). It returns one CacheEntry per directory it found.
func VetCaches(ctx context.Context, o CacheOptions) ([]CacheEntry, error) {
	return judgeCaches(ctx, o, false)
}

// SealCaches is VetCaches with o's signing key as the trust, except that
// an entry whose receipt and bytes verify but that has no seal yet is
// sealed rather than refused: the run that made it (this state dir's) is
// the key holder's. Call it after the run, on a state dir VetCaches judged
// before it, so nothing restored is unsealed by then.
func SealCaches(ctx context.Context, o CacheOptions) ([]CacheEntry, error) {
	if o.SigningKey == nil {
		return nil, errors.New("sealing the caches needs the signing key")
	}
	trust, err := CacheTrustOfKey(o.SigningKey, o.Now())
	if err != nil {
		return nil, err
	}
	o.Trust = trust
	return judgeCaches(ctx, o, true)
}

func judgeCaches(ctx context.Context, o CacheOptions, seal bool) ([]CacheEntry, error) {
	cands, err := cacheCandidates(o)
	if err != nil {
		return nil, err
	}
	var uses lastuse.Set
	defer uses.Close()
	out := make([]CacheEntry, 0, len(cands))
	for _, c := range cands {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		e := CacheEntry{Cache: c.cache, Name: c.name, Dir: c.dir}
		refuse := func(cause string) {
			e.Cause = cause
			// Never from under a live run on a shared state dir (a build
			// under way, an entry a run holds): that run judges it itself.
			removed, err := lastuse.Remove(ctx, c.dir, func(time.Time) bool { return true })
			switch {
			case err != nil:
				e.Cause += fmt.Sprintf("; removing it failed (%v): delete it by hand", err)
			case !removed:
				if _, serr := os.Lstat(c.dir); serr == nil {
					e.Cause += "; a live run holds it, so it stays until that run ends (and is judged again when next used)"
				}
			}
		}
		if c.check == nil {
			refuse("not a cache entry")
			out = append(out, e)
			continue
		}
		d, st, err := c.check(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			refuse(err.Error())
			out = append(out, e)
			continue
		}
		e.Fingerprint, e.Bytes = d.String(), st.Bytes
		want := evidence.Seal{Cache: c.cache, Key: c.name, Fingerprint: d.String(), Files: st.Files, Dirs: st.Dirs, Symlinks: st.Symlinks, Bytes: st.Bytes}
		switch err := checkSeal(c.dir, want, o.Trust, o.Now()); {
		case o.Trust == nil:
			e.Kept = true
		case err == nil:
			e.Kept, e.Sealed = true, true
		case seal && errors.Is(err, fs.ErrNotExist):
			want.RunmillVersion, want.IssuedAt = cmp.Or(o.RunmillVersion, "dev"), o.Now().UTC().Format(time.RFC3339Nano)
			b, serr := evidence.SignSeal(want, o.SigningKey)
			if serr == nil {
				serr = os.WriteFile(filepath.Join(c.dir, sealName), b, 0o644)
			}
			if serr != nil {
				return out, fmt.Errorf("sealing the cache entry %s: %w", c.dir, serr)
			}
			e.Kept, e.Sealed = true, true
		case errors.Is(err, fs.ErrNotExist):
			refuse("it has no seal: nothing shows that a holder of the signing key made it")
		default:
			refuse(err.Error())
		}
		if e.Kept {
			// Restored entries carry their old stamps; pruning must see
			// this use.
			_ = uses.Use(c.dir)
		}
		out = append(out, e)
	}
	return out, nil
}

// checkSeal verifies the seal beside an entry against trust and holds it
// to the entry as it hashes now; fs.ErrNotExist when there is none.
func checkSeal(dir string, want evidence.Seal, trust []byte, now time.Time) error {
	if trust == nil {
		return nil
	}
	b, err := bounded.ReadFile(filepath.Join(dir, sealName), evidence.MaxSealBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("its seal is unreadable: %w", err)
	}
	s, err := evidence.VerifySeal(b, trust, now)
	if err != nil {
		return fmt.Errorf("its seal does not verify against the trusted key: %w", err)
	}
	want.RunmillVersion, want.IssuedAt = s.RunmillVersion, s.IssuedAt
	if *s != want {
		return fmt.Errorf("its seal is of another tree (%s, sealed as %s %s with %d files), the entry is %s %s with %d files",
			s.Fingerprint, s.Cache, s.Key, s.Files, want.Fingerprint, want.Cache, want.Files)
	}
	return nil
}

// cacheCandidates lists every directory where o's entries live.
func cacheCandidates(o CacheOptions) ([]cacheCandidate, error) {
	var out []cacheCandidate
	tool := cmp.Or(o.GoToolCacheDir, filepath.Join(o.StateDir, "toolcache", "go"))
	ents, err := os.ReadDir(tool)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		c := cacheCandidate{cache: cacheGoToolchain, name: e.Name(), dir: filepath.Join(tool, e.Name())}
		if e.IsDir() && digest.LowerHex(e.Name(), 64) {
			c.tree = filepath.Join(c.dir, "cache")
			c.check = func(ctx context.Context) (treehash.Digest, treehash.Stats, error) {
				return checkToolCache(ctx, c.dir, c.tree)
			}
		}
		out = append(out, c)
	}
	entries, err := deps.Entries(o.StateDir)
	if err != nil {
		return nil, err
	}
	for _, de := range entries {
		c := cacheCandidate{cache: cacheDepsPrefix + de.Strategy, name: de.Name, dir: de.Dir, tree: de.Tree()}
		if digest.LowerHex(de.Name, 64) {
			c.check = func(ctx context.Context) (treehash.Digest, treehash.Stats, error) {
				r, err := de.Vet(ctx)
				if err != nil {
					return treehash.Digest{}, treehash.Stats{}, err
				}
				d, err := treehash.ParseDigest(r.Fingerprint)
				return d, treehash.Stats{Files: r.Files, Dirs: r.Dirs, Symlinks: r.Symlinks, Bytes: r.Bytes}, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkToolCache is the toolchain cache's receipt (prepare's check): the
// tree hashes to the fingerprint beside it.
func checkToolCache(ctx context.Context, dir, tree string) (treehash.Digest, treehash.Stats, error) {
	want, err := bounded.ReadFile(filepath.Join(dir, receiptName), 1<<10)
	if err != nil {
		return treehash.Digest{}, treehash.Stats{}, fmt.Errorf("its fingerprint is unreadable: %w", err)
	}
	d, st, err := treehash.Sum(ctx, tree, treehash.Options{})
	if err != nil {
		return d, st, fmt.Errorf("hashing it failed: %w", err)
	}
	if d.String() != strings.TrimSpace(string(want)) {
		return d, st, fmt.Errorf("its tree hashes to %s, its fingerprint says %s", d, strings.TrimSpace(string(want)))
	}
	return d, st, nil
}

// CacheKeys are the actions/cache keys of a state dir's caches, computed
// in one place for every step that restores or saves them. A restore
// matches by prefix (the newest entry saved under it); a save adds what
// the caches hold, so a job that built or sealed something new saves a new
// key and one that changed nothing saves nothing.
type CacheKeys struct {
	// GoToolchain is the prefix of the toolchain caches' key: the Go on
	// PATH by content (toolident.go), the platform and the layout.
	GoToolchain string
	// Deps is the prefix of the dependency caches' key: the base's
	// lockfiles by content; DepsAny is any dependency cache of the
	// platform (most packages of a lockfile survive its change).
	Deps, DepsAny string
	// GoToolchainSave and DepsSave are the prefixes with what the caches
	// hold now (empty when they hold nothing).
	GoToolchainSave, DepsSave string
}

// cacheKeySchema changes when what a cache holds, or a key, does.
const cacheKeySchema = "v1"

// ComputeCacheKeys computes o's cache keys; repo and base (both optional)
// name the base commit whose lockfiles key the dependency caches, path is
// the PATH the checks' go is found on.
func ComputeCacheKeys(ctx context.Context, o CacheOptions, repo *git.Repo, base, path string) (CacheKeys, error) {
	platform := runtime.GOOS + "-" + runtime.GOARCH
	goID := "none"
	for _, dir := range filepath.SplitList(path) {
		if real, err := filepath.EvalSymlinks(filepath.Join(dir, "go")); err == nil {
			goID = strings.TrimPrefix((*fileDigests)(nil).goToolchainIdentity(real), "sha256:")[:16]
			break
		}
	}
	k := CacheKeys{
		GoToolchain: fmt.Sprintf("runmill-gotool-%s-%s-%s-%s-", cacheKeySchema, goToolCacheSchemaTag(), platform, goID),
		DepsAny:     fmt.Sprintf("runmill-deps-%s-%s-", cacheKeySchema, platform),
	}
	locks := sha256.New()
	if repo != nil && base != "" {
		for _, p := range []string{"package-lock.json", "package.json", "go.sum"} {
			b, err := repo.ReadAt(ctx, base, p, 64<<20)
			if err != nil {
				continue // absent (or not a file): not a lockfile of this base
			}
			fmt.Fprintf(locks, "%s %s\n", p, digest.Of(b))
		}
	}
	k.Deps = k.DepsAny + hex.EncodeToString(locks.Sum(nil))[:16] + "-"
	cands, err := cacheCandidates(o)
	if err != nil {
		return k, err
	}
	held := map[bool][]string{}
	for _, c := range cands {
		if c.check == nil {
			continue
		}
		seal, _ := bounded.ReadFile(filepath.Join(c.dir, sealName), evidence.MaxSealBytes)
		held[c.cache == cacheGoToolchain] = append(held[c.cache == cacheGoToolchain], c.cache+"/"+c.name+" "+digest.Of(seal))
	}
	content := func(lines []string) string {
		if len(lines) == 0 {
			return ""
		}
		slices.Sort(lines)
		return digest.Of([]byte(strings.Join(lines, "\n")))[len("sha256:"):][:16]
	}
	if c := content(held[true]); c != "" {
		k.GoToolchainSave = k.GoToolchain + c
	}
	if c := content(held[false]); c != "" {
		k.DepsSave = k.Deps + c
	}
	return k, nil
}

// goToolCacheSchemaTag is the toolchain cache layout's version as a key
// word ("3" of ".../3").
func goToolCacheSchemaTag() string {
	return "l" + goToolCacheSchema[strings.LastIndexByte(goToolCacheSchema, '/')+1:]
}
