package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// Baseline reuse (issue 16, docs/benchmarks.md § Baseline reuse). On a pull
// request most verifications measure a new push against the same base, so
// the baseline is the same computation every time. Each check run records an
// input key; a later verification copies an earlier run instead of executing
// it when the keys are equal and the earlier run comes from a signed delivery
// bundle that verifies against the reuse trust document. Only baselines are
// reused (the candidate is the change under test), and only runs that passed
// with proven coverage and no finding (evidence.Reusable).

// inputKeySchema versions the key's derivation: a change to what goes in
// must change every key. v3 (issue 23): the harness record in full (modes,
// object ids, the base commit it came from) and every tool the command names.
const inputKeySchema = "runmill-input-key/v3"

// maxReuseRuns bounds how many earlier runs one verification reads (the
// newest by run id, which sorts by time): a few pushes of one pull request.
const maxReuseRuns = 64

// reuseTrustWindow is how old a run signed with the verification's own key
// may be to be reused when no trust document is given.
const reuseTrustWindow = 30 * 24 * time.Hour

// reuser computes input keys and holds the reusable runs; it is never nil.
type reuser struct {
	version string
	on      bool               // earlier runs are read: a key without a source is a miss
	ready   chan struct{}      // closed once byKey is loaded
	byKey   map[string]*source // input key → the executed run

	// stored makes each source bundle one link (or copy) per run, however
	// many of its runs this run reuses.
	storedMu sync.Mutex
	stored   map[string]*onceValue[struct{}]
}

// source is one reusable run and where its evidence lives.
type source struct {
	bundle    *sourceBundle // the signed delivery bundle holding the run
	index     int
	artifacts string // the artifacts directory holding the run's outputs and report
}

// sourceBundle is one source bundle as this start verified it: once, however
// many run directories hold or name it (issue 23: an 82 MB bundle re-verified
// for every run that reused from it made each start seconds longer).
type sourceBundle struct {
	stmt *evidence.DeliveryStatement
	addr string // its artifact address, sha256/<hex> of its bytes
	size int64
	// path is the file the bytes were read and hashed from, and stamp what
	// it was then: a reusing run links that file into its own store without
	// reading it again while it is unchanged.
	path  string
	stamp fileStamp
}

// newReuser starts loading the earlier runs o allows reusing: those under
// o.Reuse, and the state dir's own when a signing key is configured, whose
// bundles verify against o.ReuseTrust (or the signing key's own public key).
func newReuser(o VerifyOptions, logf func(string, ...any)) *reuser {
	r := &reuser{version: runmillIdentity(o.Version), ready: make(chan struct{}), byKey: map[string]*source{}}
	trust := o.ReuseTrust
	if trust == nil && o.SigningKey != nil {
		var err error
		if trust, err = evidence.TrustOfKey(o.SigningKey, o.Now(), reuseTrustWindow); err != nil {
			logf("baseline reuse off: %v", err)
		}
	}
	dirs := slices.Clone(o.Reuse)
	if o.SigningKey != nil {
		dirs = append(dirs, filepath.Join(o.StateDir, "runs"))
	}
	if o.NoReuse || trust == nil || len(dirs) == 0 {
		close(r.ready)
		return r
	}
	r.on = true
	go func() {
		defer close(r.ready)
		r.load(runDirs(dirs), trust, o.Now(), logf)
	}()
	return r
}

// identity is the runmill identity keys are made with ("" on an executor
// built without one, in tests of other parts).
func (r *reuser) identity() string {
	if r == nil {
		return ""
	}
	return r.version
}

// runmillIdentity is the version with the build's VCS revision, so two
// builds of one version string with different code do not share keys.
func runmillIdentity(version string) string {
	id := version + " " + selfDigest()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				id += " " + s.Key + "=" + s.Value
			}
		}
	}
	return id
}

// runDirs lists the run directories (holding evidence.json) at, below or
// two below each dir (a run dir, a runs/ dir, a state dir), newest first.
func runDirs(dirs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		for _, pat := range []string{d, filepath.Join(d, "*"), filepath.Join(d, "runs", "*")} {
			ms, _ := filepath.Glob(filepath.Join(pat, "evidence.json"))
			for _, m := range ms {
				if dir := filepath.Dir(m); !seen[dir] {
					seen[dir] = true
					out = append(out, dir)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return filepath.Base(out[i]) > filepath.Base(out[j]) })
	return out[:min(len(out), maxReuseRuns)]
}

// load indexes the reusable baseline runs of every bundle that verifies. A
// bundle that does not verify is skipped with a line saying why: it is
// never evidence, and never a reason to fail the verification. The newest
// run holding a key serves it; older runs of that key are not resolved.
func (r *reuser) load(dirs []string, trust []byte, now time.Time, logf func(string, ...any)) {
	l := &bundleLoader{trust: trust, now: now, byAddr: map[string]*loadedBundle{}, byFile: map[fileStamp]string{}}
	for _, dir := range dirs {
		sb, err := l.read(filepath.Join(dir, "evidence.json"), "")
		if err != nil {
			if !errors.Is(err, errUnreadable) {
				logf("baseline reuse: %s is not reused: %v", dir, err)
			}
			continue
		}
		arts := filepath.Join(dir, "artifacts")
		for i := range sb.stmt.Predicate.Checks {
			s := &sb.stmt.Predicate.Checks[i]
			if _, dup := r.byKey[s.InputKey]; dup || s.Phase != record.Baseline {
				continue
			}
			src := &source{bundle: sb, index: i, artifacts: arts}
			if s.ReusedFrom != nil {
				// A reused run names its executed source, stored beside it.
				if src = l.chained(s, arts); src == nil {
					continue
				}
			} else if evidence.Reusable(s) != "" {
				continue
			}
			r.byKey[s.InputKey] = src
		}
	}
	if len(dirs) > 0 {
		logf("baseline reuse: %d earlier runs read, %d distinct source bundles verified, %d baselines reusable", len(dirs), l.verified, len(r.byKey))
	}
}

// bundleLoader verifies each distinct bundle once per start: by its bytes'
// address, and by the file a hard link shares between run directories
// (the source's evidence.json and every reusing run's copy of it).
type bundleLoader struct {
	trust  []byte
	now    time.Time
	byAddr map[string]*loadedBundle // artifact address → the verification's outcome
	byFile map[fileStamp]string     // a file read this start → its address
	// verified counts evidence.VerifySource calls: one per distinct bundle.
	verified int
}

type loadedBundle struct {
	sb  *sourceBundle
	err error
}

// errUnreadable marks a run directory without a bundle runmill can read
// (absent, not a regular file, over the cap): skipped without a line.
var errUnreadable = errors.New("unreadable")

// read returns the verified bundle in the file at path. want, when set, is
// the address its bytes must have; a bundle of that address verified
// earlier in this start is returned without opening path at all.
func (l *bundleLoader) read(path, want string) (*sourceBundle, error) {
	if lb := l.byAddr[want]; want != "" && lb != nil {
		return lb.sb, lb.err
	}
	f, fi, err := bounded.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	defer f.Close()
	stamp, _ := stampOf(fi)
	if addr, ok := l.byFile[stamp]; ok && (want == "" || addr == want) {
		lb := l.byAddr[addr]
		return lb.sb, lb.err
	}
	if fi.Size() > budget.BundleBytes {
		return nil, fmt.Errorf("%w: %s has more than %d bytes", errUnreadable, path, budget.BundleBytes)
	}
	b, err := bounded.ReadAll(f, budget.BundleBytes)
	if err != nil || int64(len(b)) != fi.Size() {
		return nil, fmt.Errorf("%w: %s changed while it was read (%v)", errUnreadable, path, err)
	}
	addr := evidence.ArtifactAddress(digest.Hex(b))
	if want != "" && addr != want {
		return nil, fmt.Errorf("%s does not hash to its address %s", path, want)
	}
	l.byFile[stamp] = addr
	if lb := l.byAddr[addr]; lb != nil {
		return lb.sb, lb.err
	}
	lb := &loadedBundle{}
	l.verified++
	if st, err := evidence.VerifySource(b, l.trust, l.now); err != nil {
		lb.err = err
	} else {
		lb.sb = &sourceBundle{stmt: st, addr: addr, size: int64(len(b)), path: path, stamp: stamp}
	}
	l.byAddr[addr] = lb
	return lb.sb, lb.err
}

// chained follows a reused record to the bundle it was copied from, an
// artifact of the reusing run, and checks that it verifies and holds it.
func (l *bundleLoader) chained(s *record.CheckRun, arts string) *source {
	ref := s.ReusedFrom
	p, ok := evidence.ArtifactPath(arts, ref.Bundle)
	if !ok {
		return nil
	}
	sb, err := l.read(p, ref.Bundle)
	if err != nil || evidence.CheckReuse(s, sb.stmt) != nil {
		return nil
	}
	return &source{bundle: sb, index: ref.Index, artifacts: arts}
}

// runKey is a run's input key and the harness record it was made with.
type runKey struct {
	key     string
	harness *harness.Record
}

// inputKey is the run's input key: SHA-256 of everything its result depends
// on as this engine sees it. ok=false: the check's dependencies would be
// refused at commit (then nothing is reused: a refused run records why), or
// the key cannot name every input (then it is "": the run is never reused).
func (e *executor) inputKey(ctx context.Context, c discovery.Check, phase record.Phase, commit string) (runKey, bool) {
	depKeys, ok := []string(nil), true
	if c.Dependencies != "" {
		select {
		case <-e.depsReady:
		case <-ctx.Done():
			return runKey{}, false
		}
		depKeys, ok = e.deps.InputKeys(c.Dependencies, commit)
	}
	timeout := c.Timeout.D()
	if timeout == 0 {
		timeout = e.defaultTimeout
	}
	// The harness the run would see (issue 19): the base's files laid over
	// commit, which may differ for the same commit when the base moved. The
	// whole record (issue 23): a path and a short blob id matched a symlink
	// whose target text is a file's content, and named no base commit.
	var hr *harness.Record
	if e.harness != nil {
		var err error
		if hr, err = e.harness.record(ctx, c, commit); err != nil {
			return runKey{}, false
		}
		if phase == record.CandidateHarness {
			hr = evidence.OwnHarness(hr) // nothing laid over (issue 25)
		}
	}
	env := baseEnv(e.hostPaths)
	digs := e.goCaches.digests()
	var tools []string
	if c.Image == "" { // in an image, the image's digest names every file
		var named bool
		if tools, named = commandTools(digs, c.Command, env); !named {
			e.logf("%s (%s): no input key: the tools of its command cannot all be named by content", c.ID, phase)
			return runKey{}, false
		}
	}
	k := keyInputs{Harness: hr,
		Schema: inputKeySchema, Runmill: e.reuse.identity(), Check: c.ID, Phase: string(phase), Commit: commit, Command: c.Command,
		Report: c.Report, Timeout: timeout, MaxOutput: e.maxOutput, Env: env, HostPaths: e.hostPaths, Dependencies: depKeys,
		Image: digs.sum(c.Image), Toolchain: goToolKey(digs, c.Image, e.hostPaths, env), Tools: tools,
		Limits: fmt.Sprintf("%+v", sandbox.DefaultLimits),
	}
	return runKey{key: k.digest(), harness: hr}, ok
}

// keyInputs are what an input key is made of.
type keyInputs struct {
	Schema, Runmill, Check, Phase, Commit, Command string
	Report                                         *policy.ReportSpec
	Timeout                                        time.Duration
	MaxOutput                                      int64
	Env, HostPaths, Dependencies                   []string
	// Image is the content digest of the image file; Toolchain is the Go
	// toolchain key (the toolchain and C compilers on PATH by content, the
	// build environment); Tools are the programs the command names, each
	// by content (commandTools).
	Image, Toolchain, Limits string
	Tools                    []string
	// Harness is the run's harness record (its commit tree aside, which
	// the checkout measures): every harness file's path, mode and full
	// object id at the base and the commit, whose version runs, and the
	// base commit the harness came from.
	Harness *harness.Record
}

func (k keyInputs) digest() string {
	if k.Harness != nil {
		h := *k.Harness
		h.CommitTree = ""
		k.Harness = &h
	}
	b, _ := json.Marshal(k) // strings, slices and plain structs: cannot fail
	return digest.Hex(b)
}

// runKeyed is runOne recording the run's input key. The key is computed
// beside the run, not before it: on a fresh state dir it hashes the
// toolchain's files (about 70 MB for Go, toolident.go), which the run does
// not wait for.
func (e *executor) runKeyed(ctx context.Context, c discovery.Check, phase record.Phase, commit string) (record.CheckRun, *report.Inventory, error) {
	keyC := make(chan string, 1)
	go func() {
		k, _ := e.inputKey(ctx, c, phase, commit)
		keyC <- k.key
	}()
	rec, inv, err := e.runOne(ctx, c, phase, commit)
	rec.InputKey = <-keyC
	return rec, inv, err
}

// reusedBaseline is c's baseline copied from an earlier run with the same
// input key whose record is the one this run would make, judged; ok=false
// when there is none (then it runs).
func (e *executor) reusedBaseline(ctx context.Context, c discovery.Check, commit string) (sideResult, bool) {
	if e.reuse == nil {
		return sideResult{}, false
	}
	k, ok := e.inputKey(ctx, c, record.Baseline, commit)
	if !ok {
		return sideResult{}, false
	}
	select {
	case <-e.reuse.ready:
	case <-ctx.Done():
		return sideResult{}, false
	}
	src := e.reuse.byKey[k.key]
	if src == nil {
		if e.reuse.on {
			// Said, so a key that should have matched shows as a miss in
			// the run's progress and event chain, not as silence.
			e.logf("%s (baseline): reuse missed: no earlier run has input key %s", c.ID, k.key[:16])
			e.missed(c, commit, k.key, "")
		}
		return sideResult{}, false
	}
	if err := e.sameRecord(ctx, c, commit, k.harness, &src.bundle.stmt.Predicate.Checks[src.index]); err != nil {
		e.logf("%s (baseline): not reused from run %s: %v", c.ID, src.bundle.stmt.Predicate.RunID, err)
		e.missed(c, commit, k.key, err.Error())
		return sideResult{}, false
	}
	rec, err := e.adopt(src)
	if err != nil {
		e.logf("%s (baseline): not reused: %v", c.ID, err)
		e.missed(c, commit, k.key, err.Error())
		return sideResult{}, false
	}
	ref := rec.ReusedFrom
	from := "run"
	if ref.Proof {
		from = "the base proof"
	}
	e.logf("%s (baseline): reused from %s %s (bundle %s, run %d), input key %s", c.ID, from, ref.RunID, ref.Bundle, ref.Index, k.key[:16])
	e.event("check.reused", map[string]any{"check": c.ID, "phase": string(record.Baseline), "commit": commit, "input_key": k.key, "bundle": ref.Bundle, "run_id": ref.RunID, "index": ref.Index, "proof": ref.Proof})
	e.judged(&rec, nil)
	return sideResult{rec: rec, inv: evidence.ReportInventory(rec.Report)}, true
}

// missed records in the event chain that c's baseline was looked up and
// not reused (why: "" when no earlier run has its key): it executes.
func (e *executor) missed(c discovery.Check, commit, key, why string) {
	e.event("check.reuse-missed", map[string]any{"check": c.ID, "phase": string(record.Baseline), "commit": commit, "input_key": key, "why": why})
}

// sameRecord holds the source's record to the one this run would make
// before anything is adopted (issue 23): the same check, phase, commit and
// command; the same harness record (its files' modes and object ids, the
// base commit); and the trees this run's checkout measures — the tree as
// run and the commit's own. Equal keys make all of it hold unless the key
// missed an input; `evidence verify` would refuse the difference, after
// the gate had passed.
func (e *executor) sameRecord(ctx context.Context, c discovery.Check, commit string, hr *harness.Record, s *record.CheckRun) error {
	switch {
	case s.CheckID != c.ID || s.Phase != record.Baseline || s.Commit != commit || s.Command != c.Command:
		return fmt.Errorf("its record is of check %s (%s) at %s running %q, this run's would be %s (baseline) at %s running %q",
			s.CheckID, s.Phase, s.Commit, s.Command, c.ID, commit, c.Command)
	case e.harness == nil || hr == nil:
		return fmt.Errorf("this run cannot derive its harness record to compare")
	case !harness.Equal(s.Harness, hr):
		return fmt.Errorf("its harness record (base %s) differs from the one this run would make (base %s): another harness ran", baseOf(s.Harness), hr.Base)
	}
	pins := hr.Overlay()
	before, err := e.harness.treeOf(ctx, commit, pins)
	if err != nil {
		return err
	}
	commitTree := before
	if len(pins) > 0 {
		if commitTree, err = e.harness.treeOf(ctx, commit, nil); err != nil {
			return err
		}
	}
	switch {
	case s.TreeBefore != before:
		return fmt.Errorf("it ran tree %s, this run's checkout is %s", s.TreeBefore, before)
	case s.Harness.CommitTree != commitTree:
		return fmt.Errorf("its commit tree is %s, this run's commit measures %s", s.Harness.CommitTree, commitTree)
	}
	return nil
}

func baseOf(h *harness.Record) string {
	if h == nil {
		return "none"
	}
	return cmp.Or(h.Base, "none")
}

// adopt stores the source run and everything it references (its outputs,
// its report, the source bundle) in this run's store, so the new
// statement's artifacts re-verify offline, and returns the reused record.
// Each body is a hard link to the source's file where one can be made: a
// large source bundle is stored once per state dir, not once per run that
// reuses from it (issue 23).
func (e *executor) adopt(src *source) (record.CheckRun, error) {
	sb := src.bundle
	s := sb.stmt.Predicate.Checks[src.index]
	type art struct {
		addr string
		size int64
	}
	arts := []art{{s.Stdout.Artifact, s.Stdout.ArtifactSize}, {s.Stderr.Artifact, s.Stderr.ArtifactSize}}
	if s.Report != nil {
		arts = append(arts, art{s.Report.Artifact, s.Report.Size})
	}
	for _, a := range arts {
		p, ok := evidence.ArtifactPath(src.artifacts, a.addr)
		if !ok {
			// Unreachable for a verified source: its addresses are grammar-checked.
			return s, fmt.Errorf("the source's artifact %s is not the recorded %d bytes", a.addr, a.size)
		}
		if err := e.store.link(p, a.addr, a.size, nil); err != nil {
			return s, fmt.Errorf("the source's artifact %s: %w", a.addr, err)
		}
	}
	if err := e.reuse.storeBundle(e.store, sb); err != nil {
		return s, fmt.Errorf("the source bundle %s: %w", sb.addr, err)
	}
	rec := s // the source's facts, copied
	rec.Notes = slices.Clone(s.Notes)
	rec.Observations = slices.Clone(s.Observations)
	rec.Findings = slices.Clone(s.Findings)
	rec.ReusedFrom = &record.ReuseRef{Bundle: sb.addr, BundleSize: sb.size, RunID: sb.stmt.Predicate.RunID, Index: src.index, Proof: sb.stmt.Predicate.BaseProof}
	return rec, nil
}

// storeBundle links sb into st once per run, unread while its file is as
// load hashed it.
func (r *reuser) storeBundle(st store, sb *sourceBundle) error {
	r.storedMu.Lock()
	if r.stored == nil {
		r.stored = map[string]*onceValue[struct{}]{}
	}
	o, ok := r.stored[sb.addr]
	if !ok {
		o = &onceValue[struct{}]{}
		r.stored[sb.addr] = o
	}
	r.storedMu.Unlock()
	o.once.Do(func() { o.err = st.link(sb.path, sb.addr, sb.size, &sb.stamp) })
	return o.err
}
