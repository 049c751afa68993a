package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// Reuse of a proven run (issue 16): a verification may copy a run of an
// earlier signed delivery bundle instead of executing it when the input
// keys are equal. The copy keeps the source's facts and adds ReusedFrom;
// the source bundle is an artifact of the reusing run. This file holds the
// checks both sides share: the engine before it reuses a run, `evidence
// verify` when it re-verifies one.

// checkReuseGrammar is the form of input_key and reused_from, checked
// whether or not the source bundle is at hand.
func checkReuseGrammar(r *record.CheckRun) string {
	if r.InputKey != "" && !digest.LowerHex(r.InputKey, 64) {
		return "input_key must be a lower-case hex SHA-256"
	}
	ref := r.ReusedFrom
	if ref == nil {
		return ""
	}
	switch {
	case r.InputKey == "":
		return "a reused run needs the input_key it was reused under"
	case !isArtifact(ref.Bundle) || ref.BundleSize <= 0:
		return "reused_from needs the source bundle's artifact address sha256/<hex> and its size"
	case ref.RunID == "" || ref.Index < 0:
		return "reused_from needs the source's run_id and a run index ≥ 0"
	case !r.Started:
		return "a reused run was started by its source; a refused run is never reused"
	case r.Phase == record.CandidateHarness:
		// Issue 25: the change's own harness is the change's, run fresh.
		return "a candidate-harness run is always executed, never reused"
	}
	return ""
}

// VerifySource authenticates a delivery bundle whose runs a verification
// may reuse: the strict parse, the signature against trustDoc, canonical
// form, the statement's schema, the key's window at its issued_at, the
// consistency of its records and judgements and the recomputed verdict —
// everything `evidence verify` checks except the bindings to a particular
// candidate and merge-readiness (a push whose candidate failed still
// measured its baseline). It returns the statement and its canonical
// digest.
func VerifySource(bundle, trustDoc []byte, now time.Time) (*DeliveryStatement, error) {
	t, _, err := parseTrust(trustDoc)
	if err != nil {
		return nil, rmerr.New(rmerr.EvidenceTrust, "%v", err)
	}
	if !t.expires.IsZero() && !now.Before(t.expires) {
		return nil, rmerr.New(rmerr.EvidenceTrust, "the trust document expired at %s", formatTime(t.expires))
	}
	st, f := verifySource(bundle, t, now)
	if f != nil {
		return nil, rmerr.New(f.reason.Code(), "%s: %s", f.reason, f.msg)
	}
	return st, nil
}

func verifySource(bundle []byte, t *trust, now time.Time) (st *DeliveryStatement, f *failure) {
	v := &verification{opts: VerifyOptions{Now: now}, steps: deliverySteps, trust: t, delivery: &Expectations{}}
	defer func() {
		if v.spec != nil {
			<-v.spec.done
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			st, f = nil, fail(ReasonSchema, "internal error while verifying: %v", p)
		}
	}()
	for _, step := range []func() *failure{
		v.checkOptions,
		func() *failure { return v.checkSizes(bundle, nil, nil) },
		func() *failure { return v.parseBundle(bundle) },
		v.checkSignature, v.checkCanonical, v.parseStatement, v.checkKeyWindow, v.checkRecords, v.recomputeVerdict,
	} {
		if f := step(); f != nil {
			return nil, f
		}
	}
	return v.dst, nil
}

// CheckReuse holds a reused record to the run its reference names in the
// (authenticated) source statement: that run was executed, passed with
// proven coverage and no finding, and its facts and input key are exactly
// the record's. Status, coverage and findings are not compared: the
// reusing verification decides them again from the same facts.
func CheckReuse(rec *record.CheckRun, src *DeliveryStatement) error {
	ref := rec.ReusedFrom
	if ref == nil {
		return fmt.Errorf("the record is not reused")
	}
	p := &src.Predicate
	if p.RunID != ref.RunID {
		return fmt.Errorf("the source bundle is of run %s, not %s", p.RunID, ref.RunID)
	}
	if ref.Proof != p.BaseProof {
		// Said by the record, so a reader knows without the source bundle
		// whether a baseline came from a base proof or from a change's run.
		return fmt.Errorf("the record says its source is a base proof: %t; the source bundle says %t", ref.Proof, p.BaseProof)
	}
	if ref.Index < 0 || ref.Index >= len(p.Checks) {
		return fmt.Errorf("the source run has %d check runs, none at index %d", len(p.Checks), ref.Index)
	}
	s := &p.Checks[ref.Index]
	if msg := Reusable(s); msg != "" {
		return fmt.Errorf("the source's run %d (%s, %s) %s", ref.Index, s.CheckID, s.Phase, msg)
	}
	if s.InputKey != rec.InputKey {
		return fmt.Errorf("the source's run %d has input key %s, the record %s", ref.Index, s.InputKey, rec.InputKey)
	}
	a, b := factsOnly(*rec), factsOnly(*s)
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || !bytes.Equal(ja, jb) {
		return fmt.Errorf("the record's facts differ from the source's run %d (%s, %s)", ref.Index, s.CheckID, s.Phase)
	}
	return nil
}

// Reusable says why a recorded run may not be reused ("" when it may): only
// an executed run with an input key that passed with proven coverage and
// no finding is.
func Reusable(s *record.CheckRun) string {
	switch {
	case s.ReusedFrom != nil:
		return "was itself reused (a reference names the executed run)"
	case s.InputKey == "":
		return "has no input key"
	case !s.Started || s.Status != record.Passed || s.Coverage != record.Proven || len(s.Findings) > 0:
		return fmt.Sprintf("did not pass with proven coverage (status %s, coverage %s, %d findings)", s.Status, s.Coverage, len(s.Findings))
	case s.TreeBefore != s.TreeAfter:
		return "moved its tree"
	}
	return ""
}

func factsOnly(r record.CheckRun) record.CheckRun {
	r.ReusedFrom, r.Status, r.Coverage, r.Findings = nil, "", "", nil
	return r
}

// checkReusedSources re-verifies the source bundle of every reused record
// (the artifacts step hashed it already) against the trust document this
// verification uses, and holds the record to the run it names.
func (v *verification) checkReusedSources(st *store) *failure {
	p := &v.dst.Predicate
	for i := range p.Checks {
		r := &p.Checks[i]
		if r.ReusedFrom == nil {
			continue
		}
		at := fmt.Sprintf("predicate.checks[%d] (%s, %s)", i, r.CheckID, r.Phase)
		if r.ReusedFrom.BundleSize > v.opts.Limits.MaxBundleBytes {
			return fail(ReasonArtifact, "%s: the source bundle claims %d bytes, more than the bundle cap", at, r.ReusedFrom.BundleSize)
		}
		b, err := st.read(r.ReusedFrom.Bundle, r.ReusedFrom.BundleSize)
		if err != nil {
			return fail(ReasonArtifact, "%s: source bundle %s: %v", at, r.ReusedFrom.Bundle, err)
		}
		src, f := verifySource(b, v.trust, v.opts.Now)
		if f != nil {
			return fail(ReasonArtifact, "%s: the source bundle %s does not verify against this trust document: %s: %s", at, r.ReusedFrom.Bundle, f.reason, f.msg)
		}
		if err := CheckReuse(r, src); err != nil {
			return fail(ReasonRecord, "%s: reused from %s: %v", at, r.ReusedFrom.Bundle, err)
		}
	}
	return nil
}

// TrustOfKey is a trust document holding key's own public key for delivery
// statements issued in [now − window, now + DefaultClockSkew]: a verification
// that signs with key and is given no other trust reuses only runs signed
// with that key.
func TrustOfKey(key *SigningKey, now time.Time, window time.Duration) ([]byte, error) {
	window = min(window, MaxKeyWindow-DefaultClockSkew)
	now = now.UTC().Truncate(time.Second)
	return TrustDocument{Schema: TrustSchema, Keys: []TrustedKey{{
		ID: key.id, PublicKey: string(key.PublicKeyPEM()), Purposes: []Purpose{PurposeDelivery},
		NotBefore: formatTime(now.Add(-window)), NotAfter: formatTime(now.Add(DefaultClockSkew)),
	}}}.Encode()
}

// ReportInventory is the recorded inventory in pkg/report's form (nil when
// the report did not parse): what a reused baseline gives the preservation
// comparison.
func ReportInventory(r *record.ReportRecord) *report.Inventory {
	if r == nil || r.Inventory == nil {
		return nil
	}
	return reportInventory(r.Inventory, r)
}
