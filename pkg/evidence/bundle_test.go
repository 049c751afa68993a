package evidence

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseBundleEnvelope holds parseBundle's in-place path to the strict
// rules both ways: spellings a JSON tool may legitimately produce are still
// accepted, and every way of hiding something next to or inside the payload
// is refused.
func TestParseBundleEnvelope(t *testing.T) {
	f := newFixture(t)
	payload := payloadOf(t, f.bundle)
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.bundle); err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte {
		if !bytes.Contains(f.bundle, []byte(old)) {
			t.Fatalf("the fixture has no %q", old)
		}
		return bytes.Replace(f.bundle, []byte(old), []byte(new), 1)
	}
	for _, c := range []struct {
		name string
		doc  []byte
		ok   bool
		msg  string // part of the error
	}{
		{"as signed", f.bundle, true, ""},
		{"compact", compact.Bytes(), true, ""},
		{"reindented", bytes.ReplaceAll(f.bundle, []byte("\n  "), []byte("\n\t\t  ")), true, ""},
		{"escaped quote in the payload", replace(`"payload": "`, `"payload": "\"`), false, ""},
		{"escaped slash in the payload", replace(`"payload": "`, `"payload": "\/`), false, ""},
		{"line break in the payload", replace(`"payload": "`, `"payload": "\n`), false, ""},
		{"payload duplicated", replace(`"payloadType"`, `"payload": "", "payloadType"`), false, "duplicate"},
		{"payload null", replace(`"payload": "`, `"payload": null, "x": "`), false, ""},
		{"payload missing", replace(`"payload"`, `"paylod"`), false, ""},
		{"payload not a string", replace(`"payload": "`, `"payload": ["`), false, ""},
		{"key-case variant", replace(`"dsseEnvelope"`, `"DSSEEnvelope"`), false, ""},
		{"unknown member beside the payload", replace(`"payloadType"`, `"extra": {"a": [1, true, "}"]}, "payloadType"`), false, "extra"},
		{"bad padding", replace(`"payload": "`, `"payload": "A`), false, "base64"},
		{"large envelope", replace(`"payloadType"`, `"pad": "`+strings.Repeat("x", maxEnvelopeBytes)+`", "payloadType"`), false, "besides its payload"},
		{"trailing data", append(append([]byte(nil), f.bundle...), `{}`...), false, "trailing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pb, err := parseBundle(c.doc)
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !bytes.Equal(pb.payload, payload) || !bytes.Equal(pb.signed, pae(PayloadType, payload)) {
					t.Fatalf("payload or PAE differ from the signed ones")
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

// FuzzBundleFastPath: parseBundle (payload located by a scan and decoded in
// place) and parseBundleWhole (the strict decoder over the whole document)
// accept exactly the same documents, with the same hint, signature, payload
// and PAE.
func FuzzBundleFastPath(f *testing.F) {
	fx := seedFixture(f)
	f.Add(fx.bundle)
	var compact bytes.Buffer
	if err := json.Compact(&compact, fx.bundle); err != nil {
		f.Fatal(err)
	}
	f.Add(compact.Bytes())
	f.Add(bytes.Replace(compact.Bytes(), []byte(`"payload":"`), []byte(`"payload":"\"`), 1))
	f.Add(bytes.Replace(compact.Bytes(), []byte(`"payloadType"`), []byte(`"payload":"","payloadType"`), 1))
	f.Add([]byte(`{"dsseEnvelope":{"payload":"AAAA"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, errFast := parseBundle(b)
		whole, errWhole := parseBundleWhole(b)
		if (errFast == nil) != (errWhole == nil) {
			t.Fatalf("in place: %v; whole: %v", errFast, errWhole)
		}
		if errFast != nil {
			return
		}
		if fast.hint != whole.hint || !bytes.Equal(fast.sig, whole.sig) || !bytes.Equal(fast.payload, whole.payload) || !bytes.Equal(fast.signed, whole.signed) {
			t.Fatalf("the two parses differ")
		}
		if !bytes.Equal(fast.signed, pae(PayloadType, fast.payload)) {
			t.Fatalf("signed is not the payload's PAE")
		}
	})
}
