package evidence

import (
	"bytes"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// Native fuzz targets for every parser of untrusted input (DESIGN.md § Style).
// Run each for a minute with, for example:
//
//	go test -run XXX -fuzz FuzzParseTrust -fuzztime 60s -parallel 1 ./pkg/evidence
//
// The bundle targets start from a 7 KB bundle; Go spends up to a minute
// minimising each new interesting input of that size (-fuzzminimizetime
// defaults to 60s), which can eat the whole run, so give them
// -fuzzminimizetime 5s.

func seedFixture(f *testing.F) *fixture {
	fx := newFixture(f)
	return fx
}

// FuzzParseBundle: the strict bundle parse never panics, and anything it
// accepts has exactly one signature of the right size and a payload that
// re-encodes to the same base64.
func FuzzParseBundle(f *testing.F) {
	fx := seedFixture(f)
	f.Add(fx.bundle)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":""}},"dsseEnvelope":{"payload":"","payloadType":"application/vnd.in-toto+json","signatures":[]}}`))
	f.Add([]byte(`{"mediaType":"x","MediaType":"y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pb, err := parseBundle(b)
		if err != nil {
			return
		}
		if len(pb.sig) != 64 || pb.hint == "" {
			t.Fatalf("accepted a bundle with a %d-byte signature and hint %q", len(pb.sig), pb.hint)
		}
	})
}

// FuzzVerifyBundle runs the whole verifier on arbitrary bundle bytes with
// the fixture's trust and expectations: it never panics, never takes long,
// and accepts nothing but the fixture's own bundle spelling variants.
func FuzzVerifyBundle(f *testing.F) {
	fx := seedFixture(f)
	f.Add(fx.bundle)
	f.Add(withPayload(f, fx.bundle, []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		start := time.Now()
		res := Verify(b, fx.trust, fx.expectations, VerifyOptions{Now: fixNow})
		if res.Valid {
			pb, err := parseBundle(b)
			if err != nil || !bytes.Equal(pb.payload, payloadOf(t, fx.bundle)) {
				t.Fatalf("accepted a bundle whose payload is not the signed one")
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Verify took %s on %d bytes", d, len(b))
		}
	})
}

// FuzzParseTrust: the trust parser never panics, and a document it accepts
// re-encodes to a document it accepts with the same keys.
func FuzzParseTrust(f *testing.F) {
	fx := seedFixture(f)
	f.Add(fx.trust)
	f.Add([]byte(`{"schema":"runmill.asf-evidence-trust/v1","keys":[]}`))
	f.Add([]byte(`{"schema":"runmill.asf-evidence-trust/v1","keys":null,"Keys":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := ParseTrust(b)
		if err != nil {
			return
		}
		again, err := doc.Encode()
		if err != nil {
			t.Fatalf("an accepted trust document does not re-encode: %v", err)
		}
		doc2, err := ParseTrust(again)
		if err != nil || len(doc2.Keys) != len(doc.Keys) {
			t.Fatalf("re-encoded trust document: %v", err)
		}
	})
}

// FuzzParseExpectations covers both expectations schemas.
func FuzzParseExpectations(f *testing.F) {
	fx := seedFixture(f)
	f.Add(fx.expectations)
	f.Add([]byte(`{"schema":"runmill.asf-terminal-evidence-expectations/v1","repository":{"name":"o/n","id":1},"pull_request":1,"head":"` + fixHead + `","base":"` + fixBase + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := ParseExpectations(b); err == nil {
			again, err := e.Encode()
			if err != nil {
				t.Fatalf("accepted expectations do not re-encode: %v", err)
			}
			if _, err := ParseExpectations(again); err != nil {
				t.Fatalf("re-encoded expectations: %v", err)
			}
		}
		if e, err := ParseTerminalExpectations(b); err == nil {
			if _, err := e.Encode(); err != nil {
				t.Fatalf("accepted terminal expectations do not re-encode: %v", err)
			}
		}
	})
}

// FuzzCanonical holds checkCanonical to the reference: it accepts exactly
// the documents that are their own RFC 8785 transform (within its depth cap).
func FuzzCanonical(f *testing.F) {
	fx := seedFixture(f)
	f.Add(payloadOf(f, fx.bundle))
	for _, s := range []string{`{}`, `[]`, `{"a":1,"b":[true,false,null]}`, `{"b":1,"a":2}`, `{"a":1e3}`, `{"a":1000}`,
		`{"a":-0}`, `{"a":0.1}`, `{"a":1E+21}`, `{"a":1e21}`, `{"\u00e9":1,"\ud83d\ude00":2,"\uffff":3}`, "{\"\U0001F600\":1,\"\uffff\":2}",
		"{\"\uffff\":1,\"\U0001F600\":2}", `"\u001f"`, `"\u001F"`, `"\/"`, `"\n"`, `"\u000a"`, `{"a":"x","a":"y"}`, ` {}`, `123456789012345678`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mine := checkCanonical(b)
		ref, err := jcs.Transform(b)
		fixed := err == nil && bytes.Equal(ref, b)
		if mine == nil && !fixed {
			t.Fatalf("checkCanonical accepts %q, but its transform is %q (%v)", b, ref, err)
		}
		if mine != nil && fixed && !deeper(b, maxDepth) {
			t.Fatalf("checkCanonical rejects %q (%v), which is its own transform", b, mine)
		}
	})
}

// deeper reports whether b nests more than n levels (ignoring strings).
func deeper(b []byte, n int) bool {
	depth, in, esc := 0, false, false
	for _, c := range b {
		switch {
		case in && esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			depth++
			if depth > n {
				return true
			}
		case !in && (c == '}' || c == ']'):
			depth--
		}
	}
	return false
}
