package evidence

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/rmerr"
)

// A cache seal vouches for one content-keyed cache entry of a state dir (a
// prepared Go toolchain cache, a prepared dependency tree) across jobs. A
// receipt beside an entry is written by whoever wrote the entry, so it
// proves nothing about an entry restored from a shared cache: any workflow
// in that cache's scope — a pull request's own, edited — can save a
// poisoned tree with a receipt that matches it. A seal is signed with the
// verification's key over the entry's name and the tree hash of every
// byte it holds, so only an entry a key holder's runmill made and checked
// is taken back; everything else is a miss.

// SealPredicateType marks a cache seal. A seal is never evidence about a
// commit: its subject is a tree hash, so a delivery verifier refuses it
// for its predicate type and subject, and a seal verifier refuses a
// delivery bundle for the same reasons.
const SealPredicateType = "https://runmill.dev/cache-seal/v1"

// SealDigestAlg is the subject's digest algorithm: pkg/treehash over the
// entry's tree.
const SealDigestAlg = "runmillTreeHash"

// Seal is the predicate of a cache seal.
type Seal struct {
	RunmillVersion string `json:"runmill_version"`
	IssuedAt       string `json:"issued_at"`
	// Cache names the kind of entry ("go-toolchain", "deps/npm" …);
	// Key is the entry's directory name, its content key in lower hex.
	Cache string `json:"cache"`
	Key   string `json:"key"`
	// Fingerprint is the entry tree's treehash, "sha256:<hex>", and the
	// counts beside it what that walk saw.
	Fingerprint string `json:"fingerprint"`
	Files       int    `json:"files"`
	Dirs        int    `json:"dirs"`
	Symlinks    int    `json:"symlinks"`
	Bytes       int64  `json:"bytes"`
}

// SealStatement is the in-toto statement a seal is signed as.
type SealStatement struct {
	Type          string        `json:"_type"`
	Subject       []SealSubject `json:"subject"`
	PredicateType string        `json:"predicateType"`
	Predicate     Seal          `json:"predicate"`
}

// SealSubject names the sealed entry by its tree hash.
type SealSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// SealSubjectName is the one subject name of a seal of key in cache.
func SealSubjectName(cache, key string) string { return "runmill-cache:" + cache + "/" + key }

var (
	sealCache = regexp.MustCompile(`^[a-z][a-z0-9-]*(/[a-z][a-z0-9-]*)?$`)
	sealKey   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkSeal is a seal's schema beyond types.
func checkSeal(st *SealStatement) *failure {
	bad := func(format string, args ...any) *failure { return fail(ReasonStatement, format, args...) }
	p := &st.Predicate
	switch {
	case st.Type != StatementType:
		return bad("_type is %q, want %q", st.Type, StatementType)
	case st.PredicateType != SealPredicateType:
		return bad("predicateType is %q, want %q", st.PredicateType, SealPredicateType)
	case p.RunmillVersion == "":
		return bad("predicate.runmill_version must not be empty")
	case !sealCache.MatchString(p.Cache) || !sealKey.MatchString(p.Key):
		return bad("predicate.cache %q / key %q: want a cache name and a lower-case hex SHA-256", p.Cache, p.Key)
	case len(p.Fingerprint) != len("sha256:")+64 || p.Fingerprint[:7] != "sha256:" || !digest.LowerHex(p.Fingerprint[7:], 64):
		return bad("predicate.fingerprint %q is not sha256:<hex>", p.Fingerprint)
	case p.Files < 0 || p.Dirs < 0 || p.Symlinks < 0 || p.Bytes < 0:
		return bad("predicate: negative counts")
	case len(st.Subject) != 1:
		return bad("the seal has %d subjects; a cache seal has exactly one", len(st.Subject))
	}
	if _, err := parseTime(p.IssuedAt); err != nil {
		return bad("predicate.issued_at: %v", err)
	}
	s := st.Subject[0]
	if s.Name != SealSubjectName(p.Cache, p.Key) || len(s.Digest) != 1 || s.Digest[SealDigestAlg] != p.Fingerprint[7:] {
		return bad("the subject %q does not name the sealed entry %s with its fingerprint", s.Name, SealSubjectName(p.Cache, p.Key))
	}
	return nil
}

// SignSeal signs a seal of one cache entry with key.
func SignSeal(p Seal, key *SigningKey) ([]byte, error) {
	if key == nil {
		return nil, rmerr.New(rmerr.EvidenceKey, "no signing key")
	}
	st := SealStatement{Type: StatementType, PredicateType: SealPredicateType, Predicate: p}
	if len(p.Fingerprint) > 7 {
		st.Subject = []SealSubject{{Name: SealSubjectName(p.Cache, p.Key), Digest: map[string]string{SealDigestAlg: p.Fingerprint[7:]}}}
	}
	if f := checkSeal(&st); f != nil {
		return nil, rmerr.New(rmerr.EvidenceStatement, "the seal is invalid: %s", f.msg)
	}
	payload, err := Marshal(&st)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.EvidenceStatement, err, "serialising the seal")
	}
	return signPayload(payload, key)
}

// MaxSealBytes bounds a seal bundle read back from disk; a seal is under
// 2 KiB.
const MaxSealBytes = 64 << 10

// VerifySeal authenticates a seal bundle against trustDoc as of now — the
// strict parse, the signature, canonical form, the schema, and the key's
// purpose and window at the seal's issued_at, as for a shard (a seal is
// signed by a key trusted for delivery statements) — and returns the seal.
// The caller compares it with the entry it is about.
func VerifySeal(bundle, trustDoc []byte, now time.Time) (*Seal, error) {
	if len(bundle) > MaxSealBytes {
		return nil, fail(ReasonInputSize, "the seal has %d bytes, more than the cap of %d", len(bundle), MaxSealBytes).err()
	}
	v := &verification{opts: VerifyOptions{Now: now}}
	var st SealStatement
	if f := v.authenticateAs(bundle, trustDoc, &st, SealPredicateType, "cache seal"); f != nil {
		return nil, f.err()
	}
	if f := checkSeal(&st); f != nil {
		return nil, f.err()
	}
	if f := v.checkIssued(st.Predicate.IssuedAt, "cache seals"); f != nil {
		return nil, f.err()
	}
	return &st.Predicate, nil
}

// checkIssued holds a statement's issued_at to the key that signed it
// (checkShardSignature set v.key): trusted for delivery statements (what
// signs shards and seals too), inside the key's window and not in the
// future.
func (v *verification) checkIssued(issuedAt, what string) *failure {
	at, err := parseTime(issuedAt)
	if err != nil {
		return fail(ReasonStatement, "predicate.issued_at: %v", err)
	}
	k, now := v.key, v.opts.Now
	switch {
	case !slices.Contains(k.purposes, PurposeDelivery):
		return fail(ReasonKeyWindow, "key %q is not trusted for delivery statements (purposes %v), which %s are signed as", k.id, k.purposes, what)
	case at.Before(k.notBefore) || at.After(k.notAfter):
		return fail(ReasonKeyWindow, "issued_at %s lies outside key %q's window [%s, %s]", issuedAt, k.id, formatTime(k.notBefore), formatTime(k.notAfter))
	case at.After(now.Add(DefaultClockSkew)):
		return fail(ReasonKeyWindow, "issued_at %s lies in the future (now %s)", issuedAt, formatTime(now))
	}
	return nil
}

// String is the seal for a person.
func (p *Seal) String() string {
	return fmt.Sprintf("%s %s: tree %s (%d files, %d bytes), sealed %s", p.Cache, p.Key[:min(16, len(p.Key))], p.Fingerprint, p.Files, p.Bytes, p.IssuedAt)
}
