package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// reuseFixture is the fixture's delivery as the source of a reuse (its
// baseline keyed), and a second delivery whose baseline is reused from it,
// with the source bundle among its artifacts.
type reuseFixture struct {
	f      *fixture
	source []byte // the source bundle
	stmt   *DeliveryStatement
}

const fixKey = "5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f5e7f"

func newReuseFixture(t *testing.T, sourceKey *SigningKey) *reuseFixture {
	t.Helper()
	f := newFixture(t)
	src := *f.stmt
	src.Predicate.Checks = append([]record.CheckRun(nil), f.stmt.Predicate.Checks...)
	src.Predicate.Checks[0].InputKey = fixKey
	if sourceKey == nil {
		sourceKey = f.key
	}
	b, _, err := Sign(&src, sourceKey)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := f.put(b)
	st := *f.stmt
	st.Predicate.RunID = "run-20260301-0002"
	st.Predicate.Checks = append([]record.CheckRun(nil), f.stmt.Predicate.Checks...)
	st.Predicate.Checks[0].InputKey = fixKey
	st.Predicate.Checks[0].ReusedFrom = &record.ReuseRef{Bundle: addr, BundleSize: int64(len(b)), RunID: src.Predicate.RunID, Index: 0}
	f.writeArtifacts(t)
	return &reuseFixture{f: f, source: b, stmt: &st}
}

// bundle signs the reusing statement after change, without Sign's checks
// (so that a malformed reference reaches the verifier).
func (r *reuseFixture) bundle(t *testing.T, change func(c *record.CheckRun)) []byte {
	t.Helper()
	st := *r.stmt
	st.Predicate.Checks = append([]record.CheckRun(nil), r.stmt.Predicate.Checks...)
	ref := *st.Predicate.Checks[0].ReusedFrom
	st.Predicate.Checks[0].ReusedFrom = &ref
	if change != nil {
		change(&st.Predicate.Checks[0])
	}
	payload, err := Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	return r.f.resign(t, payload)
}

func TestReusedRecordVerification(t *testing.T) {
	other, _ := newKey(t, 9, fixKeyStart, 90*24*time.Hour)
	for _, tc := range []struct {
		name      string
		sourceKey *SigningKey
		change    func(c *record.CheckRun)
		artifacts bool
		reason    Reason
		msg       string
	}{
		{name: "valid, reference checked for form", artifacts: false},
		{name: "valid, source re-verified", artifacts: true},
		{name: "a fact changed", change: func(c *record.CheckRun) { c.DurationMS = 1 }, artifacts: true, reason: ReasonRecord, msg: "facts differ"},
		{name: "a fact changed, without the source", change: func(c *record.CheckRun) { c.DurationMS = 1 }},
		{name: "another input key", change: func(c *record.CheckRun) { c.InputKey = strings.Repeat("0", 64) }, artifacts: true, reason: ReasonRecord, msg: "input key"},
		{name: "another run id", change: func(c *record.CheckRun) { c.ReusedFrom.RunID = "run-x" }, artifacts: true, reason: ReasonRecord, msg: "not run-x"},
		{name: "an index out of range", change: func(c *record.CheckRun) { c.ReusedFrom.Index = 7 }, artifacts: true, reason: ReasonRecord, msg: "none at index 7"},
		{name: "the candidate run named", change: func(c *record.CheckRun) { c.ReusedFrom.Index = 1 }, artifacts: true, reason: ReasonRecord, msg: "has no input key"},
		{name: "a source signed by an untrusted key", sourceKey: other, artifacts: true, reason: ReasonArtifact, msg: "does not verify against this trust document"},
		{name: "an absent source bundle", change: func(c *record.CheckRun) { c.ReusedFrom.Bundle = "sha256/" + strings.Repeat("d", 64) }, artifacts: true, reason: ReasonArtifact, msg: "absent"},
		{name: "a malformed bundle address", change: func(c *record.CheckRun) { c.ReusedFrom.Bundle = "evidence.json" }, reason: ReasonStatement, msg: "artifact address"},
		{name: "no size", change: func(c *record.CheckRun) { c.ReusedFrom.BundleSize = 0 }, reason: ReasonStatement, msg: "artifact address"},
		{name: "no input key", change: func(c *record.CheckRun) { c.InputKey = "" }, reason: ReasonStatement, msg: "needs the input_key"},
		{name: "an input key that is no digest", change: func(c *record.CheckRun) { c.InputKey = "ABC" }, reason: ReasonStatement, msg: "lower-case hex"},
		{name: "a negative index", change: func(c *record.CheckRun) { c.ReusedFrom.Index = -1 }, reason: ReasonStatement, msg: "index ≥ 0"},
		{name: "a source claimed to be a base proof", change: func(c *record.CheckRun) { c.ReusedFrom.Proof = true }, artifacts: true, reason: ReasonRecord, msg: "its source is a base proof: true; the source bundle says false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReuseFixture(t, tc.sourceKey)
			opts := VerifyOptions{Now: fixNow}
			if tc.artifacts {
				opts.ArtifactsDir = r.f.dir
			}
			res := Verify(r.bundle(t, tc.change), r.f.trust, r.f.expectations, opts)
			if tc.reason == "" {
				if !res.Valid {
					t.Fatalf("refused: %s %s", res.Reason, res.Message)
				}
				return
			}
			if res.Valid || res.Reason != tc.reason || !strings.Contains(res.Message, tc.msg) {
				t.Fatalf("want %s (%q), got %+v", tc.reason, tc.msg, res)
			}
		})
	}
}

func TestReusedSourceBundleAltered(t *testing.T) {
	r := newReuseFixture(t, nil)
	b := r.bundle(t, nil)
	ref := r.stmt.Predicate.Checks[0].ReusedFrom
	path := filepath.Join(r.f.dir, filepath.FromSlash(ref.Bundle))
	src := append([]byte(nil), r.source...)
	src[len(src)/2] ^= 1
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	res := Verify(b, r.f.trust, r.f.expectations, VerifyOptions{Now: fixNow, ArtifactsDir: r.f.dir})
	if res.Valid || res.Reason != ReasonArtifact {
		t.Fatalf("an altered source bundle: %+v", res)
	}
}

func TestVerifySource(t *testing.T) {
	r := newReuseFixture(t, nil)
	st, err := VerifySource(r.source, r.f.trust, fixNow)
	if err != nil || st.Predicate.Checks[0].InputKey != fixKey {
		t.Fatalf("VerifySource: %v", err)
	}
	_, otherTrust := newKey(t, 9, fixKeyStart, 90*24*time.Hour)
	if _, err := VerifySource(r.source, otherTrust, fixNow); rmerr.CodeOf(err) != rmerr.EvidenceSignature {
		t.Fatalf("another key's trust: %v", err)
	}
	if _, err := VerifySource(r.source, r.f.trust, fixKeyStart.Add(-time.Hour)); rmerr.CodeOf(err) != rmerr.EvidenceKeyWindow {
		t.Fatalf("issued outside the key's window as of then: %v", err)
	}
	key := r.f.key
	trust, err := TrustOfKey(key, fixNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySource(r.source, trust, fixNow); err != nil {
		t.Fatalf("the key's own trust: %v", err)
	}
	// Two days later, a one-day window no longer covers it.
	later, err := TrustOfKey(key, fixNow.Add(48*time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySource(r.source, later, fixNow.Add(48*time.Hour)); rmerr.CodeOf(err) != rmerr.EvidenceKeyWindow {
		t.Fatalf("TrustOfKey admitted a statement older than its window: %v", err)
	}
}
