package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// A sharded verification (docs/scale.md): every shard runs Discovery in
// full, then only its share of the runnable checks, and signs a shard
// statement instead of a delivery statement; Merge verifies the shards and
// takes the one verdict.

// shardSet is the set of check ids this run executes; nil executes all.
type shardSet map[string]bool

func (s shardSet) has(id string) bool { return s == nil || s[id] }

// assignment is this run's share of m under o.Shard, nil when not sharded.
func (o *VerifyOptions) assignment(m *discovery.Manifest) shardSet {
	if o.Shard == nil {
		return nil
	}
	set := shardSet{}
	for id, k := range evidence.AssignShards(m, o.Shard.Count, o.ShardDurations) {
		if k == o.Shard.Index {
			set[id] = true
		}
	}
	return set
}

func (s shardSet) ids() []string {
	out := make([]string, 0, len(s))
	for id := range s {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// writeShardEvidence writes the shard statement (and its bundle when a key
// is given) into the run directory: shard-statement.json, shard.json.
func writeShardEvidence(run *Run, o *VerifyOptions, set shardSet) (string, error) {
	d := &run.Delivery
	st := evidence.NewShardStatement(evidence.Shard{
		RunmillVersion: d.RunmillVersion, IssuedAt: d.IssuedAt, RunID: d.RunID,
		Index: o.Shard.Index, Count: o.Shard.Count, VerificationID: o.Shard.VerificationID, ManifestDigest: evidence.ManifestDigest(&d.Manifest),
		Candidate: d.Candidate, Manifest: d.Manifest, Assigned: set.ids(), Checks: d.Checks,
		Failures: d.Failures, Reviews: d.Reviews, Sandbox: d.Sandbox, Renames: d.Renames,
	})
	payload, err := evidence.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding the shard statement: %w", err)
	}
	run.StatementPath = filepath.Join(run.Dir, "shard-statement.json")
	if err := os.WriteFile(run.StatementPath, payload, 0o644); err != nil {
		return "", err
	}
	if o.SigningKey != nil {
		b, _, err := evidence.Sign(st, o.SigningKey)
		if err != nil {
			return "", fmt.Errorf("signing the shard statement: %w", err)
		}
		run.BundlePath = filepath.Join(run.Dir, "shard.json")
		if err := os.WriteFile(run.BundlePath, b, 0o644); err != nil {
			return "", err
		}
	}
	return evidence.Digest(payload), nil
}

// ShardBundle is one shard bundle handed to Merge.
type ShardBundle struct {
	// Name says where it came from (a file path), for messages.
	Name  string
	Bytes []byte
}

// MergeOptions configure Merge.
type MergeOptions struct {
	Shards []ShardBundle
	// Trust is the trust document the shard bundles must verify against.
	Trust []byte
	// ArtifactDirs are the shards' content-addressed stores; every
	// artifact the merged statement references that one of them holds is
	// copied into the merged run's store.
	ArtifactDirs []string
	StateDir     string
	// SigningKey signs the merged delivery statement; required.
	SigningKey *evidence.SigningKey
	// GitHub reconciles the remote contexts once, for the merged run.
	GitHub *GitHubOptions
	// JobResults: see evidence.MergeOptions.
	JobResults map[string]string
	Version    string
	Progress   io.Writer
	Now        func() time.Time
}

// Merge verifies every shard bundle, merges them (evidence.MergeShards),
// reconciles the remote contexts, takes the verdict through the one
// decision function (evidence.Decide) and writes one signed delivery bundle
// — runs/<id>/evidence.json with the shard bundles stored as artifacts —
// that `evidence verify` accepts like any other.
func Merge(ctx context.Context, o MergeOptions) (*Run, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SigningKey == nil {
		return nil, rmerr.New(rmerr.Usage, "merging shards needs a signing key").
			WithHint("pass --signing-key FILE or set RUNMILL_SIGNING_KEY: an unsigned merge would vouch for nothing")
	}
	logf := progressLogger(o.Progress)
	now := o.Now()
	shards, err := verifyShards(o, now, logf)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: newRunID(now)}
	d, err := evidence.MergeShards(shards, evidence.MergeOptions{RunmillVersion: o.Version, RunID: run.ID, JobResults: o.JobResults})
	if err != nil {
		return nil, err
	}
	run.Dir = filepath.Join(absolute(o.StateDir), "runs", run.ID)
	if err := storeShards(store{dir: filepath.Join(run.Dir, "artifacts")}, shards, d, o.ArtifactDirs, logf); err != nil {
		return nil, err
	}
	if o.GitHub != nil {
		if err := reconcile(ctx, o.GitHub, d, logf); err != nil {
			return nil, err
		}
	}
	var chain evidence.Chain
	c := d.Candidate
	_ = chain.Append(now, "run.started", map[string]any{"base": c.Base, "candidate": c.Head})
	for _, s := range shards {
		_ = chain.Append(o.Now(), "shard.verified", map[string]any{"index": s.Statement.Predicate.Index, "digest": s.Digest, "key_id": s.KeyID})
	}
	if o.GitHub != nil {
		_ = chain.Append(o.Now(), "github.reconciled", map[string]any{"remote": len(d.Remote), "pending": len(d.PendingContexts)})
	}
	run.Delivery = *d
	v := evidence.Decide(&run.Delivery)
	_ = chain.Append(o.Now(), "verdict", map[string]any{"merge_ready": v.MergeReady})
	run.Delivery.IssuedAt = o.Now().UTC().Format(time.RFC3339Nano)
	digest, err := writeEvidence(run, o.SigningKey)
	if err != nil {
		return nil, err
	}
	// The merge is a run like any other and ends with its terminal
	// statement; it created no checkout, container or mount, so its
	// cleanup observation is empty and complete.
	outcome := outcomeOf(v.MergeReady)
	vo := VerifyOptions{Version: o.Version, SigningKey: o.SigningKey, GitHub: o.GitHub, Now: o.Now}
	cand := evidence.TerminalCandidate{Repository: c.Repository, PullRequest: c.PullRequest, Head: c.Head, Base: c.Base}
	if err := writeTerminal(ctx, run, vo, &chain, &ledger{}, nil, nil, outcome, digest, cand); err != nil {
		return nil, err
	}
	verdictWord := "not merge-ready"
	if v.MergeReady {
		verdictWord = "merge-ready"
	}
	count := 0
	if len(shards) > 0 {
		count = shards[0].Statement.Predicate.Count
	}
	logf("merged %d of %d shards: %s", len(shards), count, verdictWord)
	return run, nil
}

// verifyShards verifies every shard bundle against the trust document.
func verifyShards(o MergeOptions, now time.Time, logf func(string, ...any)) ([]*evidence.VerifiedShard, error) {
	var shards []*evidence.VerifiedShard
	for _, b := range o.Shards {
		s, err := evidence.VerifyShard(b.Bytes, o.Trust, now)
		if err != nil {
			return nil, fmt.Errorf("verifying shard bundle %s: %w", b.Name, err)
		}
		s.Name = b.Name // the merge's refusals name the shards' files
		p := &s.Statement.Predicate
		logf("shard %d/%d (%s): signed by %s, %d checks, %d runs", p.Index, p.Count, b.Name, s.KeyID, len(p.Assigned), len(p.Checks))
		shards = append(shards, s)
	}
	return shards, nil
}

// storeShards stores the shard bundles as artifacts of the merged run, and
// every other artifact the merged statement references (copyArtifacts).
func storeShards(st store, shards []*evidence.VerifiedShard, d *evidence.Delivery, dirs []string, logf func(string, ...any)) error {
	for _, s := range shards {
		if _, err := st.put(s.Bundle); err != nil {
			return err
		}
	}
	return copyArtifacts(st, d, dirs, logf)
}

// copyArtifacts copies into st every artifact d references that st lacks
// (evidence.ReferencedArtifacts: the check runs' stdout, stderr and
// reports, and a reused baseline's source bundle, which `evidence verify
// --artifacts-dir` re-verifies the record against), each from the first
// of dirs holding exactly its recorded bytes. Nothing a source bundle
// references is needed besides: the source's run a reused record names
// has the record's own outputs and report (evidence.CheckReuse holds
// them equal), which are the record's artifacts already. An artifact
// that no dir holds is left out and named on the progress log: the merged
// bundle then verifies without --artifacts-dir, and with it names the gap.
func copyArtifacts(st store, d *evidence.Delivery, dirs []string, logf func(string, ...any)) error {
	refs, err := evidence.ReferencedArtifacts(d)
	if err != nil {
		return err
	}
	var missing []string
	for _, r := range refs {
		if fi, err := os.Lstat(st.path(r.Address)); err == nil && fi.Mode().IsRegular() && fi.Size() == r.Size {
			continue // a shard bundle, stored above
		}
		found, err := copyArtifact(st, r, dirs)
		if err != nil {
			return err
		}
		if !found {
			missing = append(missing, r.Address)
		}
	}
	if len(missing) > 0 {
		logf("merge: %d referenced artifacts are in none of the shards' stores (%s); `evidence verify --artifacts-dir` will name them: pass each shard's artifacts directory (--artifacts-dir)",
			len(missing), strings.Join(missing, ", "))
	}
	return nil
}

// copyArtifact stores r from the first of dirs holding exactly its bytes;
// false when none does. A store holding other bytes under r's name is
// skipped: nothing is copied under a name it does not deserve.
func copyArtifact(st store, r evidence.ArtifactRef, dirs []string) (bool, error) {
	for _, dir := range dirs {
		p, ok := evidence.ArtifactPath(dir, r.Address)
		if !ok {
			return false, nil // not an address: the statement's grammar refused it already
		}
		b, err := bounded.ReadFile(p, r.Size)
		if err != nil || int64(len(b)) != r.Size || evidence.ArtifactAddress(digest.Hex(b)) != r.Address {
			continue
		}
		_, err = st.put(b)
		return err == nil, err
	}
	return false, nil
}
