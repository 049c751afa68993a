package evidence

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// artifactRef is one content address a delivery statement references.
type artifactRef struct {
	addr  string // "sha256/<hex>"
	size  int64  // claimed length
	where string // first field that references it
}

// artifactRefs collects every distinct address a statement references. One
// address claimed with two different sizes is a contradiction.
func artifactRefs(p *Delivery) ([]artifactRef, *failure) {
	seen := map[string]int{}
	var out []artifactRef
	add := func(addr string, size int64, where string) *failure {
		if i, ok := seen[addr]; ok {
			if out[i].size != size {
				return fail(ReasonArtifact, "%s claims %s has %d bytes; %s claims %d", where, addr, size, out[i].where, out[i].size)
			}
			return nil
		}
		seen[addr] = len(out)
		out = append(out, artifactRef{addr: addr, size: size, where: where})
		return nil
	}
	for i, r := range p.Checks {
		at := fmt.Sprintf("predicate.checks[%d]", i)
		if f := add(r.Stdout.Artifact, r.Stdout.ArtifactSize, at+".stdout"); f != nil {
			return nil, f
		}
		if f := add(r.Stderr.Artifact, r.Stderr.ArtifactSize, at+".stderr"); f != nil {
			return nil, f
		}
		if r.Report != nil {
			if f := add(r.Report.Artifact, r.Report.Size, at+".report"); f != nil {
				return nil, f
			}
		}
		if r.ReusedFrom != nil {
			if f := add(r.ReusedFrom.Bundle, r.ReusedFrom.BundleSize, at+".reused_from.bundle"); f != nil {
				return nil, f
			}
		}
	}
	for i, s := range p.Shards {
		if f := add(s.Bundle, s.BundleSize, fmt.Sprintf("predicate.shards[%d].bundle", i)); f != nil {
			return nil, f
		}
	}
	return out, nil
}

// ArtifactRef is one content address a delivery statement references and
// the size the statement claims for it.
type ArtifactRef struct {
	Address string
	Size    int64
}

// ReferencedArtifacts lists every distinct artifact p references, exactly
// the set `evidence verify --artifacts-dir` re-hashes: each check run's
// stdout, stderr and report, a reused run's source bundle, each merged
// shard's bundle. A store holding all of them re-verifies p offline. One
// address claimed with two sizes is an error (RM-EVIDENCE, artifact).
func ReferencedArtifacts(p *Delivery) ([]ArtifactRef, error) {
	refs, f := artifactRefs(p)
	if f != nil {
		return nil, f.err()
	}
	out := make([]ArtifactRef, len(refs))
	for i, r := range refs {
		out[i] = ArtifactRef{Address: r.addr, Size: r.size}
	}
	return out, nil
}

// errSkipped marks a step that does not apply.
var errSkipped = &failure{}

// checkArtifacts re-hashes every referenced artifact below ArtifactsDir
// (spec: "re-hashes every referenced CAS body with bounded byte and aggregate
// limits"). Every cap is checked against the claimed sizes before a byte is
// read, so a claimed 10 GB artifact costs nothing; each file is opened
// without following symlinks, must be a regular file of exactly the claimed
// size, and must hash to its address.
func (v *verification) checkArtifacts() *failure {
	if v.opts.ArtifactsDir == "" {
		return errSkipped
	}
	refs, f := artifactRefs(&v.dst.Predicate)
	if f != nil {
		return f
	}
	l := v.opts.Limits
	if len(refs) > l.MaxArtifacts {
		return fail(ReasonArtifact, "the statement references %d artifacts, more than the cap of %d", len(refs), l.MaxArtifacts)
	}
	var total int64
	for _, r := range refs {
		if !isArtifact(r.addr) {
			// checkStatement already refused this; kept because this is
			// where a path is built from the address.
			return fail(ReasonArtifact, "%s: %q is not a content address", r.where, r.addr)
		}
		if r.size > l.MaxArtifactBytes {
			return fail(ReasonArtifact, "%s: artifact %s claims %d bytes, more than the per-file cap of %d", r.where, r.addr, r.size, l.MaxArtifactBytes)
		}
		total += r.size
		if total > l.MaxArtifactsTotal {
			return fail(ReasonArtifact, "the referenced artifacts total more than the cap of %d bytes", l.MaxArtifactsTotal)
		}
	}
	store, err := openStore(v.opts.ArtifactsDir)
	if err != nil {
		return fail(ReasonArtifact, "opening the artifacts directory: %v", err)
	}
	defer store.close()

	// Largest first, so one big file does not start last and leave the
	// other workers idle.
	order := make([]int, len(refs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(refs[b].size, refs[a].size) })

	errs := make([]error, len(refs))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < min(v.opts.Workers, len(refs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for !failed.Load() {
				n := int(next.Add(1) - 1)
				if n >= len(order) {
					return
				}
				i := order[n]
				if err := store.verify(refs[i].addr, refs[i].size, buf); err != nil {
					errs[i] = err
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fail(ReasonArtifact, "%s: artifact %s: %v", refs[i].where, refs[i].addr, err)
		}
	}
	v.result.Artifacts = &ArtifactStats{Count: len(refs), Bytes: total}
	return v.checkReusedSources(store)
}

// hashMatches reports whether the digest of what h saw is the address's.
func hashMatches(sum []byte, addr string) bool {
	h, _ := ArtifactHex(addr)
	return hex.EncodeToString(sum) == h
}
