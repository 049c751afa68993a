package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
)

// cacheOptions are the flags of cache vet, cache seal and cache key.
type cacheOptions struct {
	out, signingKey, trust string
	repo, base             string
	json                   bool
}

const cacheLong = `The content-keyed caches of a state dir — the prepared Go toolchain caches
(STATE/toolcache/go) and the prepared dependencies (STATE/deps) — can outlive the
machine: the GitHub Action restores and saves them with actions/cache
(docs/action.md § Caches that outlive the job). A restored entry is a claim by
whoever saved it, and any workflow in the cache's scope can save, so:

  cache vet    judges every entry before anything uses it: its receipt and every byte
               of its tree (as a run reuses an entry) and, given --trust or
               --signing-key, its seal, signed with that key over the entry's name and
               tree hash. What fails (or is no entry) is removed: a miss, rebuilt by
               the run that needs it. Without a key or trust the receipts alone
               decide, which trusts whoever could save the caches.
  cache seal   after the run: vets as above with the signing key's trust and seals
               each entry that verifies but has no seal yet (one this state dir made).
               Run it only on a state dir cache vet judged before the run.
  cache key    the actions/cache keys, one name=value per line: the restore prefixes
               (the Go on PATH by content; the base's lockfiles) and the save keys
               (the prefixes with what the caches hold now, empty when nothing).`

func newCacheVetCmd(runF func(context.Context, IO, *cacheOptions) error) *command {
	return newCacheCmd("cache vet", "[--out STATE] [--signing-key FILE | --trust FILE] [--json]",
		"judge every restored cache entry of a state dir before use; remove what fails",
		"Exit: 0 judged (each entry kept or refused, with its cause; a refusal is a miss) · 2 usage · 3 I/O.",
		cmpRun(runF, runCacheVet))
}

func newCacheSealCmd(runF func(context.Context, IO, *cacheOptions) error) *command {
	return newCacheCmd("cache seal", "[--out STATE] --signing-key FILE [--json]",
		"seal the cache entries this state dir made, with the verification's key",
		"Exit: 0 sealed · 2 usage (no key) · 3 I/O.",
		cmpRun(runF, runCacheSeal))
}

func newCacheKeyCmd(runF func(context.Context, IO, *cacheOptions) error) *command {
	return newCacheCmd("cache key", "[--out STATE] [--repo DIR --base REV]",
		"print the actions/cache keys of a state dir's caches",
		"Exit: 0 · 2 usage · 3 I/O.",
		cmpRun(runF, runCacheKey))
}

func cmpRun(runF, def func(context.Context, IO, *cacheOptions) error) func(context.Context, IO, *cacheOptions) error {
	if runF == nil {
		return def
	}
	return runF
}

func newCacheCmd(name, usage, summary, exit string, runF func(context.Context, IO, *cacheOptions) error) *command {
	c := &command{name: name, usage: usage, summary: summary, long: cacheLong + "\n\n" + exit, exit: exitPolicy{noVerdict: true}}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &cacheOptions{}
		fs := newFlags(c, s)
		fs.StringVar(&o.out, "out", "", "state `DIR` (as for verify; default RUNMILL_STATE_DIR, else the user's state directory)")
		switch name {
		case "cache key":
			fs.StringVar(&o.repo, "repo", "", "repository `DIR` whose base commit's lockfiles key the dependency caches")
			fs.StringVar(&o.base, "base", "", "the base revision `REV`")
		default:
			fs.StringVar(&o.signingKey, "signing-key", "", "Ed25519 PKCS#8 PEM `FILE` (or RUNMILL_SIGNING_KEY) whose own public key seals verify against (and seal signs with)")
			fs.BoolVar(&o.json, "json", false, "print each entry as JSON")
		}
		if name == "cache vet" {
			fs.StringVar(&o.trust, "trust", "", "trust document `FILE` seals must verify against (instead of --signing-key's own key)")
		}
		if err := fs.parseStrict(args); err != nil {
			return err
		}
		if o.trust != "" && o.signingKey != "" {
			return rmerr.New(rmerr.Usage, "--trust and --signing-key are exclusive").WithHint("give the trust document, or the key whose own public key is the trust")
		}
		if (o.repo == "") != (o.base == "") {
			return rmerr.New(rmerr.Usage, "--repo and --base go together").WithHint("give both to key the dependency caches by the base's lockfiles, or neither")
		}
		return runF(ctx, s, o)
	}
	return c
}

func (o *cacheOptions) engine() (engine.CacheOptions, error) {
	state, err := filepath.Abs(engine.StateDir(o.out, os.Getenv))
	if err != nil {
		return engine.CacheOptions{}, rmerr.Wrap(rmerr.Usage, err, "resolving --out")
	}
	return engine.CacheOptions{StateDir: state, RunmillVersion: Version, Now: time.Now}, nil
}

func runCacheVet(ctx context.Context, s IO, o *cacheOptions) error {
	eo, err := o.engine()
	if err != nil {
		return err
	}
	switch {
	case o.trust != "":
		if eo.Trust, err = os.ReadFile(o.trust); err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "reading --trust").At(o.trust, 0)
		}
		if _, err := evidence.ParseTrust(eo.Trust); err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "parsing --trust").At(o.trust, 0)
		}
	default:
		key, err := loadSigningKey(o.signingKey)
		if err != nil {
			return err
		}
		if key == nil {
			fmt.Fprintln(s.Err, "runmill: no signing key or trust: restored cache entries are judged by their receipts and bytes alone, which trusts whoever could save them (docs/action.md § Caches that outlive the job)")
		} else if eo.Trust, err = engine.CacheTrustOfKey(key, eo.Now()); err != nil {
			return err
		}
	}
	es, err := engine.VetCaches(ctx, eo)
	if err != nil {
		return fmt.Errorf("vetting the caches of %s: %w", eo.StateDir, err)
	}
	return printCacheEntries(s, "vet", es, o.json)
}

func runCacheSeal(ctx context.Context, s IO, o *cacheOptions) error {
	eo, err := o.engine()
	if err != nil {
		return err
	}
	if eo.SigningKey, err = loadSigningKey(o.signingKey); err != nil {
		return err
	}
	if eo.SigningKey == nil {
		return rmerr.New(rmerr.Usage, "cache seal needs the signing key").InField("--signing-key").
			WithHint("pass --signing-key FILE or set RUNMILL_SIGNING_KEY: the key the next job's cache vet trusts")
	}
	es, err := engine.SealCaches(ctx, eo)
	if err != nil {
		return fmt.Errorf("sealing the caches of %s: %w", eo.StateDir, err)
	}
	return printCacheEntries(s, "seal", es, o.json)
}

// printCacheEntries says what became of each entry: one line each on
// stderr (stdout with --json: the entries).
func printCacheEntries(s IO, verb string, es []engine.CacheEntry, asJSON bool) error {
	kept, refused := 0, 0
	for _, e := range es {
		if e.Kept {
			kept++
			how := "kept"
			if e.Sealed {
				how = "kept, sealed"
			}
			fmt.Fprintf(s.Err, "runmill: cache %s %s: %s (tree %s, %s)\n", e.Cache, printable.Text(e.Name, 80), how, e.Fingerprint, printable.Bytes(e.Bytes))
			continue
		}
		refused++
		fmt.Fprintf(s.Err, "runmill: cache %s %s: refused and removed: %s\n", e.Cache, printable.Text(e.Name, 80), printable.Text(e.Cause, 600))
	}
	fmt.Fprintf(s.Err, "runmill: cache %s: %d kept, %d refused\n", verb, kept, refused)
	if !asJSON {
		return nil
	}
	type entry struct {
		Cache       string `json:"cache"`
		Name        string `json:"name"`
		Kept        bool   `json:"kept"`
		Sealed      bool   `json:"sealed"`
		Fingerprint string `json:"fingerprint,omitempty"`
		Bytes       int64  `json:"bytes"`
		Cause       string `json:"cause,omitempty"`
	}
	out := make([]entry, 0, len(es))
	for _, e := range es {
		out = append(out, entry{e.Cache, e.Name, e.Kept, e.Sealed, e.Fingerprint, e.Bytes, e.Cause})
	}
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func runCacheKey(ctx context.Context, s IO, o *cacheOptions) error {
	eo, err := o.engine()
	if err != nil {
		return err
	}
	var repo *git.Repo
	var base string
	if o.repo != "" {
		if repo, err = git.Open(ctx, o.repo); err != nil {
			return err
		}
		if base, err = repo.ResolveCommit(ctx, o.base, "base"); err != nil {
			return err
		}
	}
	k, err := engine.ComputeCacheKeys(ctx, eo, repo, base, os.Getenv("PATH"))
	if err != nil {
		return fmt.Errorf("keying the caches of %s: %w", eo.StateDir, err)
	}
	return writeCacheKeys(s.Out, eo.StateDir, k)
}

// writeCacheKeys prints the keys as GITHUB_OUTPUT lines; every value is
// runmill's own (hex, fixed words, the state dir's absolute path).
func writeCacheKeys(w io.Writer, state string, k engine.CacheKeys) error {
	for _, kv := range [][2]string{
		{"state-dir", state},
		{"gotool-path", filepath.Join(state, "toolcache", "go")},
		{"gotool-key", k.GoToolchain},
		{"gotool-save", k.GoToolchainSave},
		{"deps-path", filepath.Join(state, "deps")},
		{"deps-key", k.Deps},
		{"deps-any", k.DepsAny},
		{"deps-save", k.DepsSave},
	} {
		if strings.ContainsAny(kv[1], "\n\r") {
			return fmt.Errorf("the cache output %s holds a line break", kv[0])
		}
		if _, err := fmt.Fprintf(w, "%s=%s\n", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}
