package evidence

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/rmerr"
)

func fixSeal() Seal {
	return Seal{RunmillVersion: "dev", IssuedAt: formatTime(fixIssuedAt), Cache: "go-toolchain", Key: strings.Repeat("ab", 32),
		Fingerprint: "sha256:" + strings.Repeat("9", 64), Files: 3, Dirs: 2, Bytes: 120}
}

// TestVerifySeal: a seal verifies only against the key that signed it,
// inside that key's window, for the entry it names; a delivery bundle is
// not a seal, and a seal re-signed with another subject or bad fields is
// refused for its schema.
func TestVerifySeal(t *testing.T) {
	key, trust := newKey(t, 1, fixKeyStart, 90*24*time.Hour)
	_, otherTrust := newKey(t, 2, fixKeyStart, 90*24*time.Hour)
	good, err := SignSeal(fixSeal(), key)
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	resign := func(edit func(string) string) []byte {
		b, err := signPayload([]byte(edit(string(payloadOf(t, good)))), key)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	late := fixSeal()
	late.IssuedAt = formatTime(fixKeyStart.Add(100 * 24 * time.Hour))
	lateBundle, err := SignSeal(late, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bundle []byte
		trust  []byte
		code   rmerr.Code
		msg    string
	}{
		{"the signer's own seal", good, trust, "", ""},
		{"another key's trust", good, otherTrust, rmerr.EvidenceSignature, "no trusted key"},
		{"a delivery bundle", fx.bundle, fx.trust, rmerr.EvidenceStatement, "not a cache seal"},
		{"a subject that is another tree", resign(func(s string) string {
			return strings.Replace(s, `"runmillTreeHash":"9999`, `"runmillTreeHash":"8999`, 1)
		}), trust, rmerr.EvidenceStatement, "does not name the sealed entry"},
		{"a key that is not hex", resign(func(s string) string { return strings.ReplaceAll(s, "abab", "ABAB") }), trust, rmerr.EvidenceStatement, "lower-case hex"},
		{"issued after the key's window", lateBundle, trust, rmerr.EvidenceKeyWindow, "outside key"},
		{"a changed payload", bytes.Replace(good, []byte(`"payload": "ey`), []byte(`"payload": "ez`), 1), trust, rmerr.EvidenceSignature, "does not verify"},
		{"too large", append(bytes.Repeat([]byte(" "), MaxSealBytes), good...), trust, rmerr.EvidenceInputSize, "cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := VerifySeal(tc.bundle, tc.trust, fixNow)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if *s != fixSeal() {
					t.Fatalf("got %+v, want %+v", *s, fixSeal())
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			if tc.code != "" && rmerr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v (%s), want %s mentioning %q", err, rmerr.CodeOf(err), tc.code, tc.msg)
			}
		})
	}
}

// TestSignSealRefusesInvalid: a seal no verifier would accept is never
// signed.
func TestSignSealRefusesInvalid(t *testing.T) {
	key, _ := newKey(t, 1, fixKeyStart, 90*24*time.Hour)
	for name, edit := range map[string]func(*Seal){
		"no fingerprint":     func(s *Seal) { s.Fingerprint = "" },
		"a key with a slash": func(s *Seal) { s.Key = "../" + s.Key[3:] },
		"no issued_at":       func(s *Seal) { s.IssuedAt = "" },
		"no cache":           func(s *Seal) { s.Cache = "" },
		"negative bytes":     func(s *Seal) { s.Bytes = -1 },
	} {
		s := fixSeal()
		edit(&s)
		if _, err := SignSeal(s, key); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	if _, err := SignSeal(fixSeal(), nil); err == nil {
		t.Error("signed without a key")
	}
}

// FuzzVerifySeal: the seal verifier never panics, and accepts nothing but
// the signed seal's own payload.
func FuzzVerifySeal(f *testing.F) {
	key, trust := newKey(f, 1, fixKeyStart, 90*24*time.Hour)
	good, err := SignSeal(fixSeal(), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(withPayload(f, good, []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := VerifySeal(b, trust, fixNow)
		if err != nil {
			return
		}
		pb, perr := parseBundle(b)
		if perr != nil || !bytes.Equal(pb.payload, payloadOf(t, good)) || *s != fixSeal() {
			t.Fatalf("accepted a seal whose payload is not the signed one")
		}
	})
}
