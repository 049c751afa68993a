package evidence

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/rmerr"
)

// Reason is the stable code of the verification step that failed. Reasons
// are part of the interface (docs/evidence.md § Reason codes): scripts match
// on them and they never change meaning.
type Reason string

const (
	ReasonOptions           Reason = "options"            // VerifyOptions are impossible
	ReasonInputSize         Reason = "input-size"         // an input exceeds its byte cap
	ReasonSchema            Reason = "schema"             // the bundle is not a strict runmill Sigstore bundle
	ReasonTrust             Reason = "trust"              // the trust document is invalid or expired
	ReasonExpectations      Reason = "expectations"       // the expectations document is invalid or of the other kind
	ReasonSignature         Reason = "signature"          // no trusted key verifies the signature
	ReasonCanonical         Reason = "canonical"          // the payload is not RFC 8785 canonical JSON
	ReasonStatement         Reason = "statement"          // the signed statement does not satisfy its schema
	ReasonKeyWindow         Reason = "key-window"         // the key may not sign this statement at its issued_at
	ReasonTerminalArtifacts Reason = "terminal-artifacts" // an artifacts directory was given for a terminal bundle
	ReasonBinding           Reason = "binding"            // the statement is about something other than the expectations
	ReasonRecord            Reason = "record"             // the recorded facts contradict each other
	ReasonRequiredEvidence  Reason = "required-evidence"  // a required check lacks passing, proven, fresh evidence
	ReasonVerdictMismatch   Reason = "verdict-mismatch"   // the recomputed verdict differs from the signed one
	ReasonNotMergeReady     Reason = "not-merge-ready"    // the verdict is authentic but not merge-ready
	ReasonArtifact          Reason = "artifact"           // a referenced artifact is missing, oversized or altered
	ReasonEventChain        Reason = "event-chain"        // the terminal event log is not an intact hash chain
	ReasonCleanup           Reason = "cleanup"            // the run's resources were not all observed gone
	ReasonBudget            Reason = "budget"             // the budget ledger is inconsistent
	ReasonSideEffects       Reason = "side-effects"       // the side-effect ledger is malformed
)

// Code returns the RM-EVIDENCE code of r.
func (r Reason) Code() rmerr.Code { return reasonCodes[r] }

var reasonCodes = map[Reason]rmerr.Code{
	ReasonOptions:           rmerr.EvidenceOptions,
	ReasonInputSize:         rmerr.EvidenceInputSize,
	ReasonSchema:            rmerr.EvidenceSchema,
	ReasonTrust:             rmerr.EvidenceTrust,
	ReasonExpectations:      rmerr.EvidenceExpectations,
	ReasonSignature:         rmerr.EvidenceSignature,
	ReasonCanonical:         rmerr.EvidenceCanonical,
	ReasonStatement:         rmerr.EvidenceStatement,
	ReasonKeyWindow:         rmerr.EvidenceKeyWindow,
	ReasonTerminalArtifacts: rmerr.EvidenceTerminalArtifacts,
	ReasonBinding:           rmerr.EvidenceBinding,
	ReasonRecord:            rmerr.EvidenceRecord,
	ReasonRequiredEvidence:  rmerr.EvidenceRequired,
	ReasonVerdictMismatch:   rmerr.EvidenceVerdictMismatch,
	ReasonNotMergeReady:     rmerr.EvidenceNotMergeReady,
	ReasonArtifact:          rmerr.EvidenceArtifact,
	ReasonEventChain:        rmerr.EvidenceTerminal,
	ReasonCleanup:           rmerr.EvidenceTerminal,
	ReasonBudget:            rmerr.EvidenceTerminal,
	ReasonSideEffects:       rmerr.EvidenceTerminal,
}

// Limits are the caps Verify enforces before and while it reads. A zero
// field takes its default; no field may exceed its hard maximum.
type Limits struct {
	MaxBundleBytes       int64 // the bundle file
	MaxTrustBytes        int64 // the trust document
	MaxExpectationsBytes int64 // the expectations document
	MaxArtifactBytes     int64 // one artifact
	MaxArtifactsTotal    int64 // all artifacts together
	MaxArtifacts         int   // number of distinct artifacts
}

// DefaultLimits hold a bundle of 10 000 check runs and 1 M test ids with
// room to spare. The bundle cap is the run's one budget (pkg/budget), which
// runmill keeps every bundle it signs under.
var DefaultLimits = Limits{
	MaxBundleBytes:       budget.BundleBytes,
	MaxTrustBytes:        1 << 20,
	MaxExpectationsBytes: 4 << 20,
	MaxArtifactBytes:     1 << 30,
	MaxArtifactsTotal:    64 << 30,
	MaxArtifacts:         200_000,
}

// hardLimits bound what an option may raise a cap to.
var hardLimits = Limits{
	MaxBundleBytes:       2 << 30,
	MaxTrustBytes:        16 << 20,
	MaxExpectationsBytes: 64 << 20,
	MaxArtifactBytes:     64 << 30,
	MaxArtifactsTotal:    1 << 40,
	MaxArtifacts:         10_000_000,
}

// DefaultClockSkew is how far in the future of Now a signed issued_at may
// lie (clocks of signer and verifier differ a little, never a lot).
const DefaultClockSkew = 5 * time.Minute

// maxClockSkew bounds VerifyOptions.ClockSkew.
const maxClockSkew = time.Hour

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Now is the verifier's current time, against which the trust
	// document's expiry and the statement's issued_at are judged. It is
	// required: pass time.Now() for the wall clock, or a past instant to
	// re-examine old evidence as of then.
	Now time.Time
	// ArtifactsDir, when set, is a content-addressed store (files
	// sha256/<hex>) whose referenced bodies are re-hashed.
	ArtifactsDir string
	// Limits are the byte and count caps; zero fields take DefaultLimits.
	Limits Limits
	// ClockSkew is how far in the future issued_at may lie; 0 means
	// DefaultClockSkew, at most one hour.
	ClockSkew time.Duration
	// Workers bounds parallel artifact hashing; 0 means GOMAXPROCS.
	Workers int
	// AllowNotMergeReadyUnsafe makes an authentic, consistent bundle whose
	// verdict is not merge-ready verify as valid (for inspecting failed
	// runs). A caller that gates merges on Result.Valid must not set it.
	AllowNotMergeReadyUnsafe bool
}

// Step statuses.
const (
	StepPassed  = "passed"
	StepFailed  = "failed"
	StepSkipped = "skipped" // not applicable (no artifacts directory)
	StepNotRun  = "not-run" // an earlier step failed
)

// Step is one verification step and how it ended.
type Step struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Result is the one verdict of Verify. It is valid only when every step
// passed; otherwise Reason names the first step that failed.
type Result struct {
	Valid   bool       `json:"valid"`
	Reason  Reason     `json:"reason,omitempty"`
	Code    rmerr.Code `json:"code,omitempty"`
	Message string     `json:"message,omitempty"`
	// Kind is "delivery" or "terminal" once known.
	Kind            string `json:"kind,omitempty"`
	PredicateType   string `json:"predicate_type,omitempty"`
	CanonicalDigest string `json:"canonical_digest,omitempty"`
	// KeyID is the trusted key whose signature verified.
	KeyID    string         `json:"key_id,omitempty"`
	IssuedAt string         `json:"issued_at,omitempty"`
	Subject  *ResultSubject `json:"subject,omitempty"`
	// MergeReady is the signed verdict of a delivery bundle, once the
	// verdict step recomputed it.
	MergeReady *bool          `json:"merge_ready,omitempty"`
	Artifacts  *ArtifactStats `json:"artifacts,omitempty"`
	Steps      []Step         `json:"steps"`
}

// ResultSubject is the statement's subject.
type ResultSubject struct {
	Name      string `json:"name"`
	GitCommit string `json:"git_commit"`
}

// ArtifactStats say what the artifacts step re-hashed.
type ArtifactStats struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// Err returns nil for a valid result and a coded error otherwise.
func (r Result) Err() error {
	if r.Valid {
		return nil
	}
	return rmerr.New(r.Code, "%s: %s", r.Reason, r.Message)
}

// failure is a failed step.
type failure struct {
	reason Reason
	msg    string
}

func fail(reason Reason, format string, args ...any) *failure {
	return &failure{reason: reason, msg: fmt.Sprintf(format, args...)}
}

var (
	deliverySteps = []string{"options", "input-size", "schema", "trust", "expectations", "signature", "canonical",
		"statement", "key-window", "binding", "record", "required-evidence", "verdict", "merge-ready", "artifacts"}
	terminalSteps = []string{"options", "input-size", "schema", "trust", "expectations", "signature", "canonical",
		"statement", "artifacts", "key-window", "binding", "event-chain", "cleanup", "budget", "side-effects"}
)

// speculation is the payload work that follows the signature: the canonical
// check and the strict decode. Both start once the signature has verified
// (issue 13, S4: nothing that costs memory proportional to the payload's
// structure happens for a bundle no trusted key signed); the decode runs on
// another core while the canonical check runs on this one, and its result is
// looked at only afterwards, in step order, so a non-canonical payload is
// still reported as non-canonical.
type speculation struct {
	done      chan struct{}
	decodeErr error
	dst       *DeliveryStatement
	tst       *TerminalStatement
}

func (v *verification) speculate() {
	s := &speculation{done: make(chan struct{})}
	v.spec = s
	payload, delivery := v.bundle.payload, v.delivery != nil
	go func() {
		defer close(s.done)
		defer func() {
			if p := recover(); p != nil {
				s.decodeErr = fmt.Errorf("internal error: %v", p)
			}
		}()
		if delivery {
			var st DeliveryStatement
			if s.decodeErr = decodeStrict(payload, &st); s.decodeErr == nil {
				s.dst = &st
			}
		} else {
			var st TerminalStatement
			if s.decodeErr = decodeStrict(payload, &st); s.decodeErr == nil {
				s.tst = &st
			}
		}
	}()
}

// expectationsStep is the index of the expectations step in both plans.
const expectationsStep = 4

// verification carries one Verify call's state from step to step.
type verification struct {
	opts   VerifyOptions
	result Result
	steps  []string
	done   int

	bundle   *parsedBundle
	trust    *trust
	delivery *Expectations
	terminal *TerminalExpectations
	key      trustedKey
	dst      *DeliveryStatement
	tst      *TerminalStatement
	issuedAt time.Time
	spec     *speculation
}

// Verify checks a signed evidence bundle offline against a trust document and
// the verifier's own expectations (spec § Portable signed-bundle
// verification). It fails closed, in this order, stopping at the first
// failed step: options; byte caps on every input; the strict bundle parse;
// the trust document and its expiry; the expectations document; the
// signature against the trusted keys; canonical form and digest of the
// payload; the statement's schema; the key's window and purpose at the
// signed issued_at; exact bindings to the expectations; for delivery bundles
// the consistency of the records, the required evidence, the recomputed
// verdict, merge-readiness and (with ArtifactsDir) every artifact; for
// terminal bundles the event chain, cleanup, budget and side-effect ledgers.
//
// Verify never panics on hostile input and never returns a valid Result
// unless every step passed.
func Verify(bundle, trustDoc, expectations []byte, opts VerifyOptions) (res Result) {
	// Both kinds share the steps up to the statement; which list follows
	// is known once the expectations say which kind they are for.
	v := &verification{opts: opts, steps: deliverySteps}
	defer func() {
		if v.spec != nil {
			<-v.spec.done // no goroutine outlives Verify
		}
	}()
	defer func() {
		// A panic on hostile input would be a bug; it must still not
		// become a valid result.
		if p := recover(); p != nil {
			v.failStep(fail(ReasonSchema, "internal error while verifying: %v", p))
			res = v.result
		}
	}()
	run := []func() *failure{
		v.checkOptions,
		func() *failure { return v.checkSizes(bundle, trustDoc, expectations) },
		func() *failure { return v.parseBundle(bundle) },
		func() *failure { return v.parseTrust(trustDoc) },
		func() *failure { return v.parseExpectations(expectations) },
		v.checkSignature,
		v.checkCanonical,
		v.parseStatement,
	}
	for i := 0; i < len(run); i++ {
		switch f := run[i](); f {
		case nil:
			v.pass()
		case errSkipped:
			v.skip()
		default:
			v.failStep(f)
			return v.result
		}
		if i == expectationsStep { // the kind is known: plan the rest
			if v.terminal != nil {
				v.steps = terminalSteps
				run = append(run, v.refuseTerminalArtifacts, v.checkKeyWindow, v.bindTerminal,
					v.checkEventChain, v.checkCleanup, v.checkBudget, v.checkSideEffects)
			} else {
				run = append(run, v.checkKeyWindow, v.bindDelivery, v.checkRecords, v.checkRequired,
					v.recomputeVerdict, v.checkMergeReady, v.checkArtifacts)
			}
		}
	}
	v.result.Valid = true
	return v.result
}

func (v *verification) pass() {
	v.result.Steps = append(v.result.Steps, Step{Name: v.steps[v.done], Status: StepPassed})
	v.done++
}

func (v *verification) skip() {
	v.result.Steps = append(v.result.Steps, Step{Name: v.steps[v.done], Status: StepSkipped})
	v.done++
}

func (v *verification) failStep(f *failure) {
	v.result.Valid = false
	v.result.Reason = f.reason
	v.result.Code = f.reason.Code()
	v.result.Message = f.msg
	if v.done < len(v.steps) {
		v.result.Steps = append(v.result.Steps, Step{Name: v.steps[v.done], Status: StepFailed})
		v.done++
	}
	for ; v.done < len(v.steps); v.done++ {
		v.result.Steps = append(v.result.Steps, Step{Name: v.steps[v.done], Status: StepNotRun})
	}
}

// checkOptions refuses impossible options instead of guessing (a zero Now is
// "I forgot", not "the epoch").
func (v *verification) checkOptions() *failure {
	o := &v.opts
	if o.Now.IsZero() {
		return fail(ReasonOptions, "VerifyOptions.Now is not set; pass time.Now() or the instant to verify as of")
	}
	switch {
	case o.ClockSkew == 0:
		o.ClockSkew = DefaultClockSkew
	case o.ClockSkew < 0 || o.ClockSkew > maxClockSkew:
		return fail(ReasonOptions, "clock skew %s is not in (0, %s]", o.ClockSkew, maxClockSkew)
	}
	if o.Workers < 0 {
		return fail(ReasonOptions, "negative worker count")
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	l := &o.Limits
	for _, c := range []struct {
		name      string
		v         *int64
		def, hard int64
	}{
		{"MaxBundleBytes", &l.MaxBundleBytes, DefaultLimits.MaxBundleBytes, hardLimits.MaxBundleBytes},
		{"MaxTrustBytes", &l.MaxTrustBytes, DefaultLimits.MaxTrustBytes, hardLimits.MaxTrustBytes},
		{"MaxExpectationsBytes", &l.MaxExpectationsBytes, DefaultLimits.MaxExpectationsBytes, hardLimits.MaxExpectationsBytes},
		{"MaxArtifactBytes", &l.MaxArtifactBytes, DefaultLimits.MaxArtifactBytes, hardLimits.MaxArtifactBytes},
		{"MaxArtifactsTotal", &l.MaxArtifactsTotal, DefaultLimits.MaxArtifactsTotal, hardLimits.MaxArtifactsTotal},
	} {
		switch {
		case *c.v == 0:
			*c.v = c.def
		case *c.v < 0 || *c.v > c.hard:
			return fail(ReasonOptions, "limit %s = %d is not in [1, %d]", c.name, *c.v, c.hard)
		}
	}
	switch {
	case l.MaxArtifacts == 0:
		l.MaxArtifacts = DefaultLimits.MaxArtifacts
	case l.MaxArtifacts < 0 || l.MaxArtifacts > hardLimits.MaxArtifacts:
		return fail(ReasonOptions, "limit MaxArtifacts = %d is not in [1, %d]", l.MaxArtifacts, hardLimits.MaxArtifacts)
	}
	if o.ArtifactsDir != "" {
		o.ArtifactsDir = filepath.Clean(o.ArtifactsDir)
	}
	return nil
}

// checkSizes enforces the byte caps before anything is parsed.
func (v *verification) checkSizes(bundle, trustDoc, expectations []byte) *failure {
	l := v.opts.Limits
	for _, in := range []struct {
		name string
		n    int
		max  int64
	}{{"bundle", len(bundle), l.MaxBundleBytes}, {"trust document", len(trustDoc), l.MaxTrustBytes}, {"expectations document", len(expectations), l.MaxExpectationsBytes}} {
		if int64(in.n) > in.max {
			return fail(ReasonInputSize, "the %s has %d bytes, more than the cap of %d", in.name, in.n, in.max)
		}
	}
	return nil
}

func (v *verification) parseBundle(b []byte) *failure {
	pb, err := parseBundle(b)
	if err != nil {
		return fail(ReasonSchema, "bundle: %v", err)
	}
	v.bundle = pb
	return nil
}

func (v *verification) parseTrust(b []byte) *failure {
	t, _, err := parseTrust(b)
	if err != nil {
		return fail(ReasonTrust, "%v", err)
	}
	if !t.expires.IsZero() && !v.opts.Now.Before(t.expires) {
		return fail(ReasonTrust, "the trust document expired at %s", formatTime(t.expires))
	}
	v.trust = t
	return nil
}

func (v *verification) parseExpectations(b []byte) *failure {
	switch s := expectationsSchema(b); s {
	case ExpectationsSchema:
		e, err := ParseExpectations(b)
		if err != nil {
			return fail(ReasonExpectations, "%v", err)
		}
		v.delivery = e
	case TerminalExpectationsSchema:
		e, err := ParseTerminalExpectations(b)
		if err != nil {
			return fail(ReasonExpectations, "%v", err)
		}
		v.terminal = e
	default:
		return fail(ReasonExpectations, "the expectations document has schema %q; want %q or %q", s, ExpectationsSchema, TerminalExpectationsSchema)
	}
	return nil
}

// checkSignature verifies the one DSSE signature with the trusted key the
// bundle's hint names, over the DSSE PAE, with pure Ed25519 (an Ed25519ph
// signature over the same bytes does not verify).
func (v *verification) checkSignature() *failure {
	k, ok := v.trust.keys[v.bundle.hint]
	if !ok {
		return fail(ReasonSignature, "no trusted key has the bundle's key id %q", v.bundle.hint)
	}
	if !ed25519.Verify(k.pub, v.bundle.signed, v.bundle.sig) {
		return fail(ReasonSignature, "the signature does not verify with trusted key %q", k.id)
	}
	v.key = k
	v.result.KeyID = k.id
	v.speculate()
	return nil
}

// checkCanonical enforces DESIGN.md: the payload equals its own RFC 8785
// transform; its SHA-256 is the canonical digest.
func (v *verification) checkCanonical() *failure {
	if err := checkCanonical(v.bundle.payload); err != nil {
		return fail(ReasonCanonical, "the payload is not RFC 8785 canonical JSON: %v", err)
	}
	v.result.CanonicalDigest = Digest(v.bundle.payload)
	return nil
}

// parseStatement decodes the statement the expectations are for and checks
// its schema.
func (v *verification) parseStatement() *failure {
	<-v.spec.done
	payload := v.bundle.payload
	err := v.spec.decodeErr
	var f *failure
	switch {
	case err != nil:
	case v.spec.dst != nil:
		v.dst = v.spec.dst
		v.result.Kind, v.result.PredicateType = "delivery", v.dst.PredicateType
		f = checkStatement(v.dst)
	default:
		v.tst = v.spec.tst
		v.result.Kind, v.result.PredicateType = "terminal", v.tst.PredicateType
		f = checkStatement(v.tst)
	}
	if err != nil {
		// Say so plainly when the expectations are simply for the other
		// kind of bundle.
		var head struct {
			Type          string          `json:"_type"`
			Subject       []Subject       `json:"subject"`
			PredicateType string          `json:"predicateType"`
			Predicate     json.RawMessage `json:"predicate"`
		}
		if decodeStrict(payload, &head) == nil {
			want := DeliveryPredicateType
			if v.terminal != nil {
				want = TerminalPredicateType
			}
			if head.PredicateType != want {
				return fail(ReasonExpectations, "the expectations are for %s statements but the bundle's predicateType is %q", want, head.PredicateType)
			}
		}
		return fail(ReasonStatement, "the signed statement: %v", err)
	}
	return f
}
