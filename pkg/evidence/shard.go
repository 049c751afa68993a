package evidence

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// ShardPredicateType marks a shard statement: what one shard of a sharded
// verification (`verify --shard K/N`) proved. It is never a verdict: only
// a merge of every shard (MergeShards) takes one, so a shard bundle handed
// to a delivery verifier is refused for its predicate type.
const ShardPredicateType = "https://runmill.dev/asf-shard-evidence/v1"

// MaxShards bounds N: a GitHub Actions matrix has at most 256 jobs.
const MaxShards = 256

// Shard is the predicate of a shard statement.
type Shard struct {
	RunmillVersion string `json:"runmill_version"`
	IssuedAt       string `json:"issued_at"`
	RunID          string `json:"run_id"`
	// Index is K (1-based) and Count is N of "--shard K/N".
	Index int `json:"index"`
	Count int `json:"count"`
	// VerificationID names the one sharded verification this shard is
	// part of (CheckVerificationID's grammar): every shard of it is given
	// the same, and no other run is, so the merge refuses shards of two
	// runs of one candidate — a re-run's shard filling another run's gap.
	VerificationID string `json:"verification_id"`
	// ManifestDigest is ManifestDigest(&Manifest): the merge requires
	// every shard to have run under the same resolved required set.
	ManifestDigest string             `json:"manifest_digest"`
	Candidate      Candidate          `json:"candidate"`
	Manifest       discovery.Manifest `json:"manifest"`
	// Assigned are the ids of the runnable checks this shard was given
	// (AssignShards), sorted; Checks holds both runs of each.
	Assigned []string          `json:"assigned"`
	Checks   []record.CheckRun `json:"checks"`
	// Failures are the orchestrator's own findings outside check runs
	// (focus markers, GitHub observations); every shard computes them
	// from the same inputs and the merge keeps one copy of each.
	Failures []record.Finding `json:"failures"`
	Reviews  []Review         `json:"reviews"`
	Sandbox  json.RawMessage  `json:"sandbox"`
	// Renames are git's renames between the compared commits, as every
	// shard computes them; the merge requires them equal.
	Renames *record.Renames `json:"renames,omitempty"`
}

// ShardStatement is the statement a shard signs.
type ShardStatement = Statement[Shard]

// NewShardStatement is NewDeliveryStatement for a shard predicate.
func NewShardStatement(p Shard) *ShardStatement {
	fillNilSlices(&p)
	return &ShardStatement{
		Type:          StatementType,
		Subject:       []Subject{{Name: SubjectName(p.Candidate.Repository.Name, p.Candidate.Head), Digest: SubjectDigest{GitCommit: p.Candidate.Head}}},
		PredicateType: ShardPredicateType,
		Predicate:     p,
	}
}

// ShardRef is one verified shard as the merged delivery statement records
// it: the shard bundle's bytes are a CAS artifact of the merged run, so
// `evidence verify --artifacts-dir` re-hashes them too.
type ShardRef struct {
	Index int `json:"index"`
	// Digest is the canonical digest of the shard's signed payload.
	Digest string `json:"digest"`
	// KeyID is the trusted key whose signature verified.
	KeyID string `json:"key_id"`
	// Bundle is the content address of the shard bundle's bytes.
	Bundle     string `json:"bundle"`
	BundleSize int64  `json:"bundle_size"`
}

// ManifestDigest is the canonical digest of a resolved manifest.
func ManifestDigest(m *discovery.Manifest) string {
	b, err := Marshal(m)
	if err != nil {
		return ""
	}
	return Digest(b)
}

// ShardSpec is "--shard K/N" of the verification VerificationID.
type ShardSpec struct {
	Index, Count   int
	VerificationID string
}

// MaxVerificationID bounds a verification id's length in bytes.
const MaxVerificationID = 200

// CheckVerificationID is the grammar of a sharded verification's id: 1 to
// MaxVerificationID visible ASCII characters (no space, no control
// character), so it reads the same in every message that quotes it. The
// CI gives each run its own (GitHub's run id, GitLab's pipeline id, a
// Kubernetes Job's uid).
func CheckVerificationID(id string) error {
	if verificationIDOK(id) {
		return nil
	}
	return rmerr.New(rmerr.Usage, "verification id %q: want 1 to %d visible ASCII characters, no space", id, MaxVerificationID).
		InField("--verification-id").
		WithHint("give every shard of one verification the same id, unique to that run: the CI's run or pipeline id")
}

func verificationIDOK(id string) bool {
	if id == "" || len(id) > MaxVerificationID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// ParseShardSpec parses "K/N" with 1 ≤ K ≤ N ≤ MaxShards.
func ParseShardSpec(s string) (ShardSpec, error) {
	k, n, ok := strings.Cut(s, "/")
	var sp ShardSpec
	_, err1 := fmt.Sscanf(k, "%d", &sp.Index)
	_, err2 := fmt.Sscanf(n, "%d", &sp.Count)
	if !ok || err1 != nil || err2 != nil || fmt.Sprintf("%d/%d", sp.Index, sp.Count) != s ||
		sp.Count < 1 || sp.Count > MaxShards || sp.Index < 1 || sp.Index > sp.Count {
		return ShardSpec{}, rmerr.New(rmerr.Usage, "--shard %q is not K/N with 1 ≤ K ≤ N ≤ %d", s, MaxShards).
			InField("--shard").WithHint("pass the matrix value, e.g. --shard 2/3")
	}
	return sp, nil
}

// AssignShards gives every runnable check of m to exactly one of n shards
// (1…n). The rule is longest-processing-time first: checks by descending
// weight (then id), each to the least-loaded shard (then the lowest index).
// A check's weight is its duration in durations (both of its runs, from
// earlier evidence: DurationsOf), else the mean of the known ones, else 1 —
// so without durations the checks are dealt round-robin in id order. Both
// runs of a check (baseline and candidate) stay in one shard: the check is
// the unit. The rule reads only m, n and durations, so every shard of one
// verification computes the same assignment.
func AssignShards(m *discovery.Manifest, n int, durations map[string]int64) map[string]int {
	type item struct {
		id string
		w  int64
	}
	var items []item
	var known, sum int64
	for _, c := range m.Checks {
		if !c.Runnable() || slices.ContainsFunc(items, func(it item) bool { return it.id == c.ID }) {
			continue
		}
		items = append(items, item{id: c.ID, w: durations[c.ID]})
		if d := durations[c.ID]; d > 0 {
			known++
			sum += d
		}
	}
	def := int64(1)
	if known > 0 {
		def = max(1, sum/known)
	}
	for i := range items {
		if items[i].w <= 0 {
			items[i].w = def
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(b.w, a.w), strings.Compare(a.id, b.id))
	})
	load := make([]int64, n)
	out := make(map[string]int, len(items))
	for _, it := range items {
		best := 0
		for k := 1; k < n; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		load[best] += it.w
		out[it.id] = best + 1
	}
	return out
}

// DurationsOf sums each check's recorded run durations (ms) in a delivery
// or shard predicate's check runs: the weights AssignShards balances by.
func DurationsOf(runs []record.CheckRun) map[string]int64 {
	out := map[string]int64{}
	for _, r := range runs {
		out[r.CheckID] += r.DurationMS
	}
	return out
}

// VerifiedShard is a shard bundle whose signature, key window and schema
// verified (VerifyShard).
type VerifiedShard struct {
	Statement *ShardStatement
	// Digest is the canonical digest of the signed payload.
	Digest string
	KeyID  string
	// Bundle are the bundle's bytes, stored as an artifact of the merge.
	Bundle []byte
	// Name is what the caller calls the bundle (its file), so that a
	// refusal names the shards it is about; VerifyShard leaves it empty.
	Name string
}

// label is "shard K/N", with the bundle's name when the caller gave one.
func (s *VerifiedShard) label() string {
	p := &s.Statement.Predicate
	if s.Name == "" {
		return fmt.Sprintf("shard %d/%d", p.Index, p.Count)
	}
	return fmt.Sprintf("shard %d/%d (%s)", p.Index, p.Count, s.Name)
}

// VerifyShard authenticates one shard bundle against the trust document as
// of now, then checks its schema: the same steps, in the same order, as
// Verify's for a delivery bundle up to the key window (a shard is signed
// by a key trusted for delivery statements). It returns an error coded by
// the step that failed (the Reason's RM-EVIDENCE code).
func VerifyShard(bundle, trustDoc []byte, now time.Time) (*VerifiedShard, error) {
	v := &verification{opts: VerifyOptions{Now: now}}
	var st ShardStatement
	if f := v.authenticateAs(bundle, trustDoc, &st, ShardPredicateType, "shard statement"); f != nil {
		return nil, f.err()
	}
	if f := checkStatement(&st); f != nil {
		return nil, f.err()
	}
	if f := v.checkIssued(st.Predicate.IssuedAt, "shard statements"); f != nil {
		return nil, f.err()
	}
	return &VerifiedShard{Statement: &st, Digest: v.result.CanonicalDigest, KeyID: v.key.id, Bundle: bundle}, nil
}

// authenticateAs runs the steps every signed statement but a delivery or
// terminal one shares — options, sizes, the strict parse, the trust
// document, the signature, canonical form — and decodes the payload into
// dst, strictly, as a statement of predicateType (what names it in
// messages).
func (v *verification) authenticateAs(bundle, trustDoc []byte, dst any, predicateType, what string) *failure {
	for _, step := range []func() *failure{
		v.checkOptions,
		func() *failure { return v.checkSizes(bundle, trustDoc, nil) },
		func() *failure { return v.parseBundle(bundle) },
		func() *failure { return v.parseTrust(trustDoc) },
		v.checkShardSignature,
		v.checkCanonical,
	} {
		if f := step(); f != nil {
			return f
		}
	}
	if err := decodeStrict(v.bundle.payload, dst); err != nil {
		var head struct {
			PredicateType string `json:"predicateType"`
		}
		_ = json.Unmarshal(v.bundle.payload, &head)
		if head.PredicateType != predicateType {
			return fail(ReasonStatement, "the bundle's predicateType is %q, not a %s (%s)", head.PredicateType, what, predicateType)
		}
		return fail(ReasonStatement, "the signed %s: %v", what, err)
	}
	return nil
}

// checkShardSignature is checkSignature without the speculative decode
// (which knows only the delivery and terminal types).
func (v *verification) checkShardSignature() *failure {
	k, ok := v.trust.keys[v.bundle.hint]
	if !ok {
		return fail(ReasonSignature, "no trusted key has the bundle's key id %q", v.bundle.hint)
	}
	if !ed25519Verify(k, v.bundle.signed, v.bundle.sig) {
		return fail(ReasonSignature, "the signature does not verify with trusted key %q", k.id)
	}
	v.key = k
	return nil
}

func (f *failure) err() error { return rmerr.New(f.reason.Code(), "%s: %s", f.reason, f.msg) }

// checkShard is the schema of a shard predicate beyond types: the delivery
// grammar for what it shares with a delivery predicate, K and N in range,
// the manifest digest of the manifest it carries, and runs only of the
// checks it was assigned.
func checkShard(p *Shard) *failure {
	bad := func(format string, args ...any) *failure { return fail(ReasonStatement, format, args...) }
	d := Delivery{RunmillVersion: p.RunmillVersion, IssuedAt: p.IssuedAt, RunID: p.RunID, Candidate: p.Candidate,
		Manifest: p.Manifest, Checks: p.Checks, Reviews: p.Reviews, Renames: p.Renames}
	if f := checkDelivery(&d); f != nil {
		return f
	}
	if p.Count < 1 || p.Count > MaxShards || p.Index < 1 || p.Index > p.Count {
		return bad("predicate.index %d / count %d: want 1 ≤ index ≤ count ≤ %d", p.Index, p.Count, MaxShards)
	}
	if !verificationIDOK(p.VerificationID) {
		return bad("predicate.verification_id %q: want 1 to %d visible ASCII characters, no space", p.VerificationID, MaxVerificationID)
	}
	if want := ManifestDigest(&p.Manifest); p.ManifestDigest != want {
		return bad("predicate.manifest_digest %q is not the digest of the manifest it carries (%s)", p.ManifestDigest, want)
	}
	if !slices.IsSorted(p.Assigned) || len(slices.Compact(slices.Clone(p.Assigned))) != len(p.Assigned) {
		return bad("predicate.assigned must be sorted without repeats")
	}
	for i, r := range p.Checks {
		if _, ok := slices.BinarySearch(p.Assigned, r.CheckID); !ok {
			return bad("predicate.checks[%d] runs %q, which is not among the checks assigned to shard %d", i, r.CheckID, p.Index)
		}
	}
	return nil
}

// checkShardRefs is the grammar of a merged statement's shard list: indices
// 1…MaxShards ascending without repeats, payload digests, key ids and
// bundle addresses in their forms.
func checkShardRefs(refs []ShardRef) *failure {
	for i, r := range refs {
		if r.Index < 1 || r.Index > MaxShards || (i > 0 && r.Index <= refs[i-1].Index) {
			return fail(ReasonStatement, "predicate.shards[%d].index %d: want ascending indices in [1, %d]", i, r.Index, MaxShards)
		}
		if !isDigest(r.Digest) || r.KeyID == "" || !isArtifact(r.Bundle) || r.BundleSize <= 0 {
			return fail(ReasonStatement, "predicate.shards[%d] needs a sha256: digest, a key id, and a sha256/<hex> bundle of positive size", i)
		}
	}
	return nil
}

// Merge rules (docs/scale.md § The merge).
const (
	RuleShardMissing = "shard-missing"
	RuleShardJob     = "shard-job"
)

// MergeOptions configure MergeShards.
type MergeOptions struct {
	RunmillVersion, RunID string
	// JobResults are what the CI said of the shard jobs ("success",
	// "failure", "cancelled", "skipped" …, e.g. GitHub's needs.<job>.result);
	// anything but success is a finding: a job that did not end well
	// cannot vouch that its evidence is all there is. They can only make
	// the verdict worse, so they need no signature.
	JobResults map[string]string
}

// MergeShards combines verified shards of one verification into one
// delivery predicate (without its verdict or remote results: the caller
// reconciles and calls Decide). It refuses, with RM-EVIDENCE-019, shards
// that are not of one verification (verification id, repository, pull
// request, base, candidate, tree, manifest digest or N differ), a shard
// index given twice
// and a check assigned to two shards. A missing shard is not a refusal
// but a finding (RM-VERIFY-001) naming it, and its checks then have no
// result, so the coverage pass fails them too: a missing shard is never
// a pass.
func MergeShards(shards []*VerifiedShard, o MergeOptions) (*Delivery, error) {
	if len(shards) == 0 {
		return nil, rmerr.New(rmerr.EvidenceShard, "no shard bundle to merge").
			WithHint("download every shard job's evidence; with none, nothing was verified")
	}
	first := &shards[0].Statement.Predicate
	n := first.Count
	byIndex := make([]*VerifiedShard, n+1)
	owner := map[string]int{}
	const oneVerification = "merge only the shard bundles of one verification: the same verification id, repository, base, candidate and manifest, each shard once"
	refuse := func(hint, format string, args ...any) error {
		return rmerr.New(rmerr.EvidenceShard, format, args...).WithHint("%s", hint)
	}
	for _, s := range shards {
		p := &s.Statement.Predicate
		this, other := s.label(), shards[0].label()
		switch {
		case p.Count != n:
			return nil, refuse(oneVerification, "%s is of a %d-shard verification, %s of a %d-shard one", this, p.Count, other, n)
		case !p.Candidate.Equal(first.Candidate):
			return nil, refuse(oneVerification, "%s is about %s@%s (base %s, tree %s), %s about %s@%s (base %s, tree %s)",
				this, p.Candidate.Repository.Name, p.Candidate.Head, p.Candidate.Base, p.Candidate.Tree,
				other, first.Candidate.Repository.Name, first.Candidate.Head, first.Candidate.Base, first.Candidate.Tree)
		case p.ManifestDigest != first.ManifestDigest:
			return nil, refuse(oneVerification, "%s ran under manifest %s, %s under %s: Discovery differed between the shards",
				this, p.ManifestDigest, other, first.ManifestDigest)
		case p.VerificationID != first.VerificationID:
			return nil, refuse("merge the shard bundles of one run only: every shard job of a verification is given the same --verification-id "+
				"(on GitHub Actions, by default, the workflow run's), and a missing or failed shard is re-run inside that run, never taken from another",
				"%s is of verification %q, %s of verification %q: shards of two runs are never merged, even of one candidate",
				this, p.VerificationID, other, first.VerificationID)
		case byIndex[p.Index] != nil:
			return nil, refuse(oneVerification, "%s is given twice (payload digests %s and %s), first as %s", this, byIndex[p.Index].Digest, s.Digest, byIndex[p.Index].label())
		case !sameRenames(p.Renames, first.Renames):
			return nil, refuse(oneVerification, "%s and %s record different renames between the compared commits", this, other)
		}
		byIndex[p.Index] = s
		for _, id := range p.Assigned {
			if k, dup := owner[id]; dup {
				return nil, refuse(oneVerification, "check %q is assigned to %s and to %s", id, byIndex[k].label(), s.label())
			}
			owner[id] = p.Index
		}
	}
	d := &Delivery{RunmillVersion: o.RunmillVersion, RunID: o.RunID, Candidate: first.Candidate, Manifest: first.Manifest, Renames: first.Renames}
	d.Checks, d.Remote, d.PendingContexts, d.Failures, d.Reviews = []record.CheckRun{}, []record.RemoteResult{}, []string{}, []record.Finding{}, []Review{}
	var unassigned []string
	for _, c := range d.Manifest.Checks {
		if _, ok := owner[c.ID]; c.Runnable() && !ok && !slices.Contains(unassigned, c.ID) {
			unassigned = append(unassigned, c.ID)
		}
	}
	var probes []json.RawMessage
	for k := 1; k <= n; k++ {
		s := byIndex[k]
		if s == nil {
			d.Failures = append(d.Failures, record.Finding{Code: rmerr.VerifyNoRunnable, Rule: RuleShardMissing,
				Message: fmt.Sprintf("shard %d of %d produced no evidence; the checks no given shard was assigned (%s) have no result", k, n, orNone(unassigned)),
				Hint:    "the shard job failed, was cancelled or skipped, or uploaded nothing: re-run it; a missing shard is never a pass"})
			continue
		}
		p := &s.Statement.Predicate
		d.Failures = appendNew(d.Failures, p.Failures...)
		for _, r := range p.Reviews {
			if !slices.Contains(d.Reviews, r) {
				d.Reviews = append(d.Reviews, r)
			}
		}
		probes = append(probes, p.Sandbox)
		d.Shards = append(d.Shards, ShardRef{Index: k, Digest: s.Digest, KeyID: s.KeyID,
			Bundle: ArtifactAddress(digest.Hex(s.Bundle)), BundleSize: int64(len(s.Bundle))})
	}
	// The check runs in manifest order, each check's runs as its shard
	// recorded them: the order an unsharded run records.
	for _, c := range d.Manifest.Checks {
		k, ok := owner[c.ID]
		if !ok {
			continue
		}
		for _, r := range byIndex[k].Statement.Predicate.Checks {
			if r.CheckID == c.ID {
				d.Checks = append(d.Checks, r)
			}
		}
		delete(owner, c.ID) // a check listed twice in the manifest is taken once
	}
	jobs := make([]string, 0, len(o.JobResults))
	for j := range o.JobResults {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	for _, j := range jobs {
		if r := o.JobResults[j]; r != "success" {
			d.Failures = append(d.Failures, record.Finding{Code: rmerr.VerifyNoRunnable, Rule: RuleShardJob,
				Message: fmt.Sprintf("shard job %q ended %q, not success", j, r),
				Hint:    "a shard job that failed, was cancelled or skipped cannot vouch for its evidence: fix and re-run it"})
		}
	}
	sb, err := json.Marshal(map[string]any{"shards": probes})
	if err != nil {
		return nil, err
	}
	d.Sandbox = sb
	return d, nil
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// appendNew appends each finding of add not already in fs (equal by value).
func appendNew(fs []record.Finding, add ...record.Finding) []record.Finding {
	for _, f := range add {
		if !slices.ContainsFunc(fs, func(g record.Finding) bool { return findingEqual(f, g) }) {
			fs = append(fs, f)
		}
	}
	return fs
}

func findingEqual(a, b record.Finding) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func ed25519Verify(k trustedKey, msg, sig []byte) bool { return ed25519.Verify(k.pub, msg, sig) }
