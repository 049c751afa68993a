package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
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
// must change every key.
const inputKeySchema = "runmill-input-key/v2"

// maxReuseRuns bounds how many earlier runs one verification reads (the
// newest by run id, which sorts by time): a few pushes of one pull request.
const maxReuseRuns = 64

// reuseTrustWindow is how old a run signed with the verification's own key
// may be to be reused when no trust document is given.
const reuseTrustWindow = 30 * 24 * time.Hour

// reuser computes input keys and holds the reusable runs; it is never nil.
type reuser struct {
	version string
	ready   chan struct{}      // closed once byKey is loaded
	byKey   map[string]*source // input key → the executed run
}

// source is one reusable run and where its evidence lives.
type source struct {
	bundle    []byte // the signed delivery bundle holding the run
	stmt      *evidence.DeliveryStatement
	index     int
	artifacts string // the artifacts directory holding the run's outputs and report
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
// never evidence, and never a reason to fail the verification.
func (r *reuser) load(dirs []string, trust []byte, now time.Time, logf func(string, ...any)) {
	for _, dir := range dirs {
		b, err := bounded.ReadFile(filepath.Join(dir, "evidence.json"), budget.BundleBytes)
		if err != nil {
			continue
		}
		st, err := evidence.VerifySource(b, trust, now)
		if err != nil {
			logf("baseline reuse: %s is not reused: %v", dir, err)
			continue
		}
		arts := filepath.Join(dir, "artifacts")
		for i := range st.Predicate.Checks {
			s := &st.Predicate.Checks[i]
			if s.Phase != record.Baseline {
				continue
			}
			src := &source{bundle: b, stmt: st, index: i, artifacts: arts}
			if s.ReusedFrom != nil {
				// A reused run names its executed source, stored beside it.
				if src = resolveChained(s, arts, trust, now); src == nil {
					continue
				}
			} else if evidence.Reusable(s) != "" {
				continue
			}
			if _, dup := r.byKey[s.InputKey]; !dup {
				r.byKey[s.InputKey] = src
			}
		}
	}
}

// resolveChained follows a reused record to the bundle it was copied from,
// an artifact of the reusing run, and checks that it verifies and holds it.
func resolveChained(s *record.CheckRun, arts string, trust []byte, now time.Time) *source {
	ref := s.ReusedFrom
	p, ok := evidence.ArtifactPath(arts, ref.Bundle)
	if !ok {
		return nil
	}
	b, err := bounded.ReadFile(p, budget.BundleBytes)
	if err != nil || evidence.ArtifactAddress(digest.Hex(b)) != ref.Bundle {
		return nil
	}
	st, err := evidence.VerifySource(b, trust, now)
	if err != nil || evidence.CheckReuse(s, st) != nil {
		return nil
	}
	return &source{bundle: b, stmt: st, index: ref.Index, artifacts: arts}
}

// inputKey is the run's input key: SHA-256 of everything its result depends
// on as this engine sees it. deps=false: the check's dependencies would be
// refused at commit (then nothing is reused: a refused run records why).
func (e *executor) inputKey(ctx context.Context, c discovery.Check, phase record.Phase, commit string) (string, bool) {
	depKeys, ok := []string(nil), true
	if c.Dependencies != "" {
		select {
		case <-e.depsReady:
		case <-ctx.Done():
			return "", false
		}
		depKeys, ok = e.deps.InputKeys(c.Dependencies, commit)
	}
	timeout := c.Timeout.D()
	if timeout == 0 {
		timeout = e.defaultTimeout
	}
	// The harness the run would see (issue 19): the base's files laid over
	// commit, which may differ for the same commit when the base moved.
	pins := commit
	if e.harness != nil {
		hr, err := e.harness.record(ctx, c, commit)
		if err != nil {
			return "", false
		}
		if hr != nil {
			pins = pinKey(commit, hr.Overlay())
		}
	}
	env := baseEnv(e.hostPaths)
	digs := e.goCaches.digests()
	return keyInputs{Harness: pins,
		Schema: inputKeySchema, Runmill: e.reuse.identity(), Check: c.ID, Phase: string(phase), Commit: commit, Command: c.Command,
		Report: c.Report, Timeout: timeout, MaxOutput: e.maxOutput, Env: env, HostPaths: e.hostPaths, Dependencies: depKeys,
		Image: digs.sum(c.Image), Toolchain: goToolKey(digs, c.Image, e.hostPaths, env), Program: program(digs, c.Command, env),
		Limits: fmt.Sprintf("%+v", sandbox.DefaultLimits),
	}.digest(), ok
}

// keyInputs are what an input key is made of.
type keyInputs struct {
	Schema, Runmill, Check, Phase, Commit, Command string
	Report                                         *policy.ReportSpec
	Timeout                                        time.Duration
	MaxOutput                                      int64
	Env, HostPaths, Dependencies                   []string
	// Image and Program are the content digests of the image file and
	// the command's interpreter; Toolchain is the Go toolchain key (the
	// toolchain and C compilers on PATH by content, the build environment).
	Image, Toolchain, Program, Limits string
	// Harness names the commit with the harness files laid over it.
	Harness string
}

func (k keyInputs) digest() string {
	b, _ := json.Marshal(k) // strings, slices and a plain struct: cannot fail
	return digest.Hex(b)
}

// program identifies the command's first word as found on the task's PATH
// (node, python3, sh …) by content: a different interpreter is a different
// run, the same one extracted afresh is not.
func program(d *fileDigests, command string, env []string) string {
	f := strings.Fields(command)
	if len(f) == 0 {
		return ""
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	if strings.Contains(f[0], "/") {
		return d.sum(f[0])
	}
	for _, dir := range filepath.SplitList(path) {
		if id := d.sum(filepath.Join(dir, f[0])); id != "" {
			return id
		}
	}
	return ""
}

// runKeyed is runOne recording the run's input key. The key is computed
// beside the run, not before it: on a fresh state dir it hashes the
// toolchain's files (about 70 MB for Go, toolident.go), which the run does
// not wait for.
func (e *executor) runKeyed(ctx context.Context, c discovery.Check, phase record.Phase, commit string) (record.CheckRun, *report.Inventory, error) {
	keyC := make(chan string, 1)
	go func() {
		key, _ := e.inputKey(ctx, c, phase, commit)
		keyC <- key
	}()
	rec, inv, err := e.runOne(ctx, c, phase, commit)
	rec.InputKey = <-keyC
	return rec, inv, err
}

// reusedBaseline is c's baseline copied from an earlier run with the same
// input key, judged; ok=false when there is none (then it runs).
func (e *executor) reusedBaseline(ctx context.Context, c discovery.Check, commit string) (sideResult, bool) {
	if e.reuse == nil {
		return sideResult{}, false
	}
	key, ok := e.inputKey(ctx, c, record.Baseline, commit)
	if !ok {
		return sideResult{}, false
	}
	select {
	case <-e.reuse.ready:
	case <-ctx.Done():
		return sideResult{}, false
	}
	src := e.reuse.byKey[key]
	if src == nil {
		return sideResult{}, false
	}
	rec, err := e.adopt(src)
	if err != nil {
		e.logf("%s (baseline): not reused: %v", c.ID, err)
		return sideResult{}, false
	}
	ref := rec.ReusedFrom
	e.logf("%s (baseline): reused from run %s (bundle %s, run %d), input key %s", c.ID, ref.RunID, ref.Bundle, ref.Index, key[:16])
	e.event("check.reused", map[string]any{"check": c.ID, "phase": string(record.Baseline), "commit": commit, "input_key": key, "bundle": ref.Bundle, "run_id": ref.RunID, "index": ref.Index})
	e.judged(&rec)
	return sideResult{rec: rec, inv: evidence.ReportInventory(rec.Report)}, true
}

// adopt copies the source run and everything it references (its outputs,
// its report, the source bundle) into this run's store, so the new
// statement's artifacts re-verify offline, and returns the reused record.
func (e *executor) adopt(src *source) (record.CheckRun, error) {
	s := src.stmt.Predicate.Checks[src.index]
	type art struct {
		addr string
		size int64
	}
	arts := []art{{s.Stdout.Artifact, s.Stdout.ArtifactSize}, {s.Stderr.Artifact, s.Stderr.ArtifactSize}}
	if s.Report != nil {
		arts = append(arts, art{s.Report.Artifact, s.Report.Size})
	}
	for _, a := range arts {
		if err := e.copyArtifact(src.artifacts, a.addr, a.size); err != nil {
			return s, err
		}
	}
	addr, err := e.store.put(src.bundle)
	if err != nil {
		return s, err
	}
	rec := s // the source's facts, copied
	rec.Notes = slices.Clone(s.Notes)
	rec.Observations = slices.Clone(s.Observations)
	rec.Findings = slices.Clone(s.Findings)
	rec.ReusedFrom = &record.ReuseRef{Bundle: addr, BundleSize: int64(len(src.bundle)), RunID: src.stmt.Predicate.RunID, Index: src.index}
	return rec, nil
}

// copyArtifact stores the body of addr from dir, refusing one that is not
// exactly size bytes hashing to addr.
func (e *executor) copyArtifact(dir, addr string, size int64) error {
	p, ok := evidence.ArtifactPath(dir, addr)
	if !ok {
		// Unreachable for a verified source: its addresses are grammar-checked.
		return fmt.Errorf("the source's artifact %s is not the recorded %d bytes", addr, size)
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("the source's artifact %s: %w", addr, err)
	}
	defer f.Close()
	got, n, err := e.store.putFrom(f, size)
	if err != nil || got != addr || n != size {
		return fmt.Errorf("the source's artifact %s is not the recorded %d bytes", addr, size)
	}
	return nil
}
