// Package deps provides prepared dependencies to verification without a
// package manager or a network inside it (spec § 3, "Dependencies without a
// networked verification bootstrap").
//
// The engine uses it in two steps:
//
//	p, err := deps.Prepare(ctx, repo, deps.Options{...}, []string{deps.NPM})  // once, before any check
//	v, err := p.Attach(ctx, deps.NPM, checkoutDir)                          // per check run
//	// sandbox: bind v.ReadOnly read-only at the same paths, add v.Env,
//	// use v.GoCache as the read-only GOCACHE, hash the tree without v.Exclude
//
// Prepare finds, for each commit of the run (the base, where baselines
// run, and the candidate's landing commit, docs/outcome.md § The landing tree),
// an install validated against that commit's own lockfile (issue 15): one
// imported for it earlier (Import, `runmill deps import`), the operator's
// source checkout for the base, or for go-modules the declared module
// cache. Each is kept in a machine-local, content-keyed cache under
// StateDir/deps (a receipt and a full tree fingerprint per entry, files
// hard-linked from one content-addressed object store, so equal packages
// are stored once); reuse re-hashes every cached byte. Attach checks the
// commit checked out in checkoutDir (node_modules ignored and not tracked)
// and gives it a read-only view of the install whose lockfile equals its
// own, or refuses naming the commit and the command that prepares it.
//
// Every refusal is RM-VERIFY-005 and says what to do.
package deps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/lastuse"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// The declared strategies (policy: dependencies).
const (
	NPM       = "npm"
	GoModules = "go-modules"
	Cargo     = "cargo"
	Yarn      = "yarn"
)

// Strategies lists every strategy runmill knows, for messages.
var Strategies = []string{NPM, GoModules, Cargo, Pnpm, Yarn}

// Options say where the install is and where runmill keeps its cache.
type Options struct {
	// SourceDir is the operator's source checkout, where npm ci ran.
	SourceDir string
	// StateDir is runmill's machine-local state; the cache lives in
	// StateDir/deps.
	StateDir string
	// ScratchDir is this run's own directory on the cache's filesystem:
	// imports are assembled there before they are renamed into the cache,
	// and each check run's view is hard-linked there. The engine gives its
	// checkout session, so what a crashed run left is swept with its
	// checkouts. Empty: imports beside the cache, views in
	// StateDir/deps/views, and nothing sweeps a crash's leftovers.
	ScratchDir string
	// Base is the trusted base commit (full id); Candidate the commit
	// candidate runs check out: the change's landing commit (the change
	// itself, or its merge with the base tip).
	Base, Candidate string
	// Go configures go-modules.
	Go GoOptions
	// Cargo configures cargo.
	Cargo CargoOptions
	// CopyOnWrite makes every npm view a copy-on-write overlay (cow.go):
	// the cached install its read-only lower layer, a size-limited tmpfs
	// per check run its upper layer. Set it only when runmill may mount
	// (root) and the sandbox's containerd sees this process's mounts (the
	// engine's layered checkouts prove both); otherwise the view is the
	// plain read-only bind.
	CopyOnWrite bool
}

// GoOptions are the operator's go-modules settings (policy.GoModules).
type GoOptions struct {
	// ModuleCache is the operator-prepared module cache; `go env
	// GOMODCACHE` when empty.
	ModuleCache string
	// BuildCache is an optional operator-prepared GOCACHE.
	BuildCache string
	// AllowAdditions accepts a candidate go.sum that only adds lines.
	AllowAdditions bool
}

// Prepared holds the validated, cached dependencies of one run.
type Prepared struct {
	// views is where per-check-run views are made (Options.ScratchDir): on
	// the cache's filesystem, outside any checkout, so hard links work
	// whatever the checkout is (a layered checkout is an overlay mount).
	views string
	// cow: npm views are copy-on-write (Options.CopyOnWrite).
	cow bool
	npm *npmPrepared
	gom *goPrepared
	crg *cargoPrepared
	pn  *pnpmPrepared
	yrn *yarnPrepared
	// errs are the refusals of Prepare by strategy: a check of a strategy
	// that failed gets its error from Attach, the others still run.
	// Refusals of one commit's install live in the strategy's own errs.
	errs map[string]error
	copy CopyStats
	// uses are the cache entries the run holds while its checks use them.
	uses *lastuse.Set
}

// Receipt describes one cache entry a run uses; it is recorded in the
// cache beside the tree and summarised in every check run's notes.
type Receipt struct {
	Schema   string `json:"schema"`
	Strategy string `json:"strategy"`
	// Key is the content key: SHA-256 over the inputs that decide the
	// tree (lockfiles, platform…); the entry's directory name.
	Key    string            `json:"key"`
	Inputs map[string]string `json:"inputs"`
	// Fingerprint is the treehash of the cached tree (every byte, the
	// exec bit and every symlink target).
	Fingerprint string `json:"fingerprint"`
	Files       int    `json:"files"`
	Dirs        int    `json:"dirs"`
	Symlinks    int    `json:"symlinks"`
	Bytes       int64  `json:"bytes"`
	// Reused is false when this run imported the entry.
	Reused bool `json:"-"`
}

// Note is the one-line summary recorded in a check run's notes.
func (r Receipt) Note() string {
	how := "imported"
	if r.Reused {
		how = "reused, every byte verified"
	}
	return fmt.Sprintf("prepared dependencies %s: cache %s, tree %s (%d files, %d bytes), %s", r.Strategy, r.Key, r.Fingerprint, r.Files, r.Bytes, how)
}

// Prepare validates and imports (or reuses) the dependencies of the given
// strategies. Unknown strategies are refused: runmill does not guess one.
// The error joins every strategy's refusal; the Prepared is usable either
// way (Attach repeats a strategy's refusal for its checks).
func Prepare(ctx context.Context, repo *git.Repo, o Options, strategies []string) (*Prepared, error) {
	p := &Prepared{errs: map[string]error{}, views: filepath.Join(o.ScratchDir, "views"), cow: o.CopyOnWrite}
	if o.ScratchDir == "" {
		p.views = filepath.Join(o.StateDir, "deps", "views")
	}
	rl := roles{base: o.Base, candidate: o.Candidate, repoDir: o.SourceDir, stateDir: o.StateDir}
	objs := newObjects(o.StateDir)
	var errs []error
	for _, s := range uniq(strategies) {
		var err error
		var perCommit map[string]error
		switch s {
		case NPM:
			p.npm, err = prepareNPM(ctx, repo, o, rl, objs)
			if p.npm != nil {
				perCommit = p.npm.errs
			}
		case GoModules:
			p.gom, err = prepareGo(ctx, repo, o, rl, objs)
			if p.gom != nil {
				perCommit = p.gom.errs
			}
		case Cargo:
			p.crg, err = prepareCargo(ctx, repo, o, rl, objs)
			if p.crg != nil {
				perCommit = p.crg.errs
			}
		case Pnpm:
			p.pn, err = preparePnpm(ctx, repo, o, rl, objs)
			if p.pn != nil {
				perCommit = p.pn.errs
			}
		case Yarn:
			p.yrn, err = prepareYarn(ctx, repo, o, rl, objs)
			if p.yrn != nil {
				perCommit = p.yrn.errs
			}
		default:
			err = unknown(s)
		}
		if err != nil {
			p.errs[s] = err
			errs = append(errs, err)
		}
		for _, c := range rl.commits() {
			if e := perCommit[c]; e != nil && !slices.Contains(errs, e) {
				errs = append(errs, e)
			}
		}
	}
	p.copy = objs.stats()
	p.uses = objs.uses
	return p, errors.Join(errs...)
}

// Close lets go of the cache entries the run held (a pruner may remove
// them once they are unused for long enough): call it when no check run
// uses a view any more. Safe on a nil Prepared and when called twice.
func (p *Prepared) Close() {
	if p != nil {
		p.uses.Close()
	}
}

// Copy is what this run's imports wrote into the object store and what
// they found there already.
func (p *Prepared) Copy() CopyStats { return p.copy }

// Receipts are the cache entries this run uses, by strategy.
func (p *Prepared) Receipts() []Receipt {
	var out []Receipt
	if p.npm != nil {
		for _, s := range p.npm.sides {
			out = append(out, s.receipt)
		}
	}
	if p.gom != nil {
		for _, s := range p.gom.sides {
			out = append(out, s.receipt)
		}
		if p.gom.build != nil {
			out = append(out, *p.gom.build)
		}
	}
	if p.crg != nil {
		for _, s := range p.crg.sides {
			out = append(out, s.receipt)
		}
	}
	if p.pn != nil {
		for _, s := range p.pn.sides {
			out = append(out, s.receipt)
		}
	}
	if p.yrn != nil {
		for _, s := range p.yrn.sides {
			out = append(out, s.receipt)
		}
	}
	return out
}

// View is what one check run needs from its strategy.
type View struct {
	// ReadOnly are host paths to bind read-only at the same path.
	ReadOnly []string
	// Mounts are host directories to bind read-only elsewhere: the npm
	// view (made outside the checkout) at <checkout>/node_modules, an
	// empty directory Attach creates as the mount point; copy-on-write
	// with Upper set (cow.go).
	Mounts []Mount
	// Env are variables to set (replacing the engine's default of the
	// same name).
	Env []string
	// GoCache is a prepared read-only GOCACHE ("" for the sandbox's
	// private, empty one).
	GoCache string
	// GoCacheLayers are further read-only build caches joined with
	// GoCache into the one GOCACHE the task sees (sandbox.Spec's field of
	// that name): the engine's prepared toolchain cache.
	GoCacheLayers []string
	// Exclude are checkout-relative paths the tree hash leaves out: the
	// prepared-dependency mount (DESIGN.md § Tree hash).
	Exclude []string
	// Notes summarise the receipts for the check run's record.
	Notes []string
	// Use is the evidence record of the install (nil without one).
	Use *record.DependencyUse
	// made is what Close removes: the view's own directory; upper, when
	// set, the tmpfs mounted in it for the overlay's upper layer.
	made, upper string
}

// Mount is a host directory (Source) seen read-only at Destination, or,
// with Upper and Work set, the read-only lower layer of an overlay there
// whose writes land in Upper (sandbox.View).
type Mount struct {
	Source, Destination string
	Upper, Work         string
}

// Close removes what Attach made outside the checkout (the hard-linked view;
// the cache's files stay). Call it after the check run; it is safe on a
// nil or empty View and when called twice.
func (v *View) Close() error {
	if v == nil || v.made == "" {
		return nil
	}
	if v.upper != "" {
		// Never delete through a mount: the tmpfs goes first, and with
		// it every byte the check wrote.
		if err := mountinfo.Unmount(v.upper); err != nil {
			return err
		}
		v.upper = ""
	}
	err := os.RemoveAll(v.made)
	if err == nil {
		v.made = ""
	}
	return err
}

// Attach gives the checkout at dir (a fresh detached checkout of the base
// or the candidate) what strategy needs, after checking that commit's side
// of the rules. Close the View after the run.
func (p *Prepared) Attach(ctx context.Context, strategy, dir string) (*View, error) {
	if p != nil && p.errs[strategy] != nil {
		return nil, p.errs[strategy]
	}
	switch strategy {
	case "":
		return &View{}, nil
	case NPM:
		if p == nil || p.npm == nil {
			return nil, fmt.Errorf("deps: npm was not prepared")
		}
		return p.npm.attach(ctx, dir, p.views, p.cow)
	case GoModules:
		if p == nil || p.gom == nil {
			return nil, fmt.Errorf("deps: go-modules was not prepared")
		}
		return p.gom.attach(ctx, dir)
	case Cargo:
		if p == nil || p.crg == nil {
			return nil, fmt.Errorf("deps: cargo was not prepared")
		}
		return p.crg.attach(ctx, dir, p.views)
	case Pnpm:
		if p == nil || p.pn == nil {
			return nil, fmt.Errorf("deps: pnpm was not prepared")
		}
		return p.pn.attach(ctx, dir, p.views, p.cow)
	case Yarn:
		if p == nil || p.yrn == nil {
			return nil, fmt.Errorf("deps: yarn was not prepared")
		}
		return p.yrn.attach(ctx, dir, p.views, p.cow)
	}
	return nil, unknown(strategy)
}

func unknown(s string) error {
	return rmerr.New(rmerr.VerifyDependencies, "unknown dependency strategy %q", s).InField("dependencies").
		WithHint("declare one of %s; runmill does not guess a preparation strategy for other package managers", strings.Join(Strategies, ", "))
}

// refuse is the RM-VERIFY-005 of one strategy with its fix.
func refuse(strategy, format string, args ...any) *rmerr.Error {
	e := rmerr.New(rmerr.VerifyDependencies, "%s: "+format, append([]any{strategy}, args...)...)
	switch strategy {
	case NPM:
		return e.WithHint("update the source checkout to the base, run npm ci there, and start a fresh run")
	case GoModules:
		return e.WithHint("run go mod download for the base outside verification (into the declared module cache), and start a fresh run")
	case Yarn:
		return e.WithHint("install the commit's package.json and yarn.lock outside verification with the operator's yarn, import it with runmill deps import --strategy yarn, and start a fresh run")
	case Cargo:
		return e.WithHint("prepare the commit's Cargo.lock crates outside verification as a directory source and import them with runmill deps import --strategy cargo, and start a fresh run")
	case Pnpm:
		return e.WithHint("run pnpm install on the commit's package.json and pnpm-lock.yaml alone outside verification and import it with runmill deps import --strategy pnpm, and start a fresh run")
	}
	return e
}

func uniq(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}

// listFindings joins a refusal's findings, the first ten of them: enough
// to act on, and a message stays readable when a whole install is wrong.
func listFindings(findings []string) string {
	const show = 10
	if len(findings) <= show {
		return strings.Join(findings, "; ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(findings[:show], "; "), len(findings)-show)
}

// checkedOut is the commit checked out in dir, for a refusal that names it.
func checkedOut(ctx context.Context, dir string) (string, error) {
	r, err := git.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	return r.ResolveCommit(ctx, "HEAD", "HEAD")
}
