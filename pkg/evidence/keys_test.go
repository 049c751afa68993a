package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeyEncodingsMatchX509 holds the byte-for-byte RFC 8410 encodings to
// crypto/x509 (which the package itself may not import: it imports net).
func TestKeyEncodingsMatchX509(t *testing.T) {
	priv, trust, err := GenerateKey(seed(7), fixKeyStart, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseSigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(priv)
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatalf("x509 cannot read our PKCS#8: %v", err)
	}
	if !parsed.(ed25519.PrivateKey).Equal(k.priv) {
		t.Fatal("x509 reads another key")
	}
	back, _ := x509.MarshalPKCS8PrivateKey(k.priv)
	if !bytes.Equal(back, block.Bytes) {
		t.Fatal("our PKCS#8 is not x509's")
	}
	spki, _ := x509.MarshalPKIXPublicKey(k.priv.Public())
	if want := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}); !bytes.Equal(want, k.PublicKeyPEM()) {
		t.Fatalf("public key PEM differs from x509's:\n%s\n%s", want, k.PublicKeyPEM())
	}
	sum := sha256.Sum256(spki)
	if id := base64.StdEncoding.EncodeToString(sum[:]); id != k.KeyID() || !strings.Contains(string(trust), id) {
		t.Fatalf("key id %s, want %s", k.KeyID(), id)
	}
}

// TestOpenSSLKeys: keys from `openssl genpkey -algorithm ed25519` sign, and
// their `openssl pkey -pubout` PEM is accepted in a trust document.
func TestOpenSSLKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed")
	}
	dir := t.TempDir()
	keyPath, pubPath := filepath.Join(dir, "k.pem"), filepath.Join(dir, "p.pem")
	if out, err := exec.Command(openssl, "genpkey", "-algorithm", "ed25519", "-out", keyPath).CombinedOutput(); err != nil {
		t.Skipf("openssl genpkey: %v %s", err, out)
	}
	if out, err := exec.Command(openssl, "pkey", "-in", keyPath, "-pubout", "-out", pubPath).CombinedOutput(); err != nil {
		t.Fatalf("openssl pkey: %v %s", err, out)
	}
	privPEM, _ := os.ReadFile(keyPath)
	pubPEM, _ := os.ReadFile(pubPath)
	k, err := ParseSigningKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.PublicKeyPEM(), pubPEM) {
		t.Fatalf("public key PEM differs from openssl's:\n%s\n%s", k.PublicKeyPEM(), pubPEM)
	}
	doc := TrustDocument{Schema: TrustSchema, Keys: []TrustedKey{{ID: k.KeyID(), PublicKey: string(pubPEM),
		Purposes: []Purpose{PurposeDelivery}, NotBefore: formatTime(fixKeyStart), NotAfter: formatTime(fixKeyStart.Add(400 * 24 * time.Hour))}}}
	if _, err := doc.Encode(); err != nil {
		t.Fatalf("openssl's public key refused: %v", err)
	}
}

func TestParseSigningKeyRefuses(t *testing.T) {
	priv, _, _ := GenerateKey(seed(3), fixKeyStart, time.Hour)
	block, _ := pem.Decode(priv)
	for name, b := range map[string][]byte{
		"empty":            nil,
		"public key":       (&SigningKey{priv: ed25519.NewKeyFromSeed(make([]byte, 32))}).PublicKeyPEM(),
		"two blocks":       append(append([]byte{}, priv...), priv...),
		"trailing garbage": append(append([]byte{}, priv...), "x"...),
		"headers":          pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: block.Bytes}),
		"short":            pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: block.Bytes[:40]}),
		"EC key type":      pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: block.Bytes}),
		"other algorithm":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: append(append([]byte{}, block.Bytes[:11]...), append([]byte{0x71}, block.Bytes[12:]...)...)}), // id-Ed448
	} {
		if _, err := ParseSigningKey(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := GenerateKey(seed(3), fixKeyStart, MaxKeyWindow+time.Second); err == nil {
		t.Error("a window over the maximum was accepted")
	}
	if _, _, err := GenerateKey(seed(3), fixKeyStart, MaxKeyWindow); err != nil {
		t.Errorf("the maximum window was refused: %v", err)
	}
}

func TestTrustDocumentRules(t *testing.T) {
	k, _ := newKey(t, 4, fixKeyStart, time.Hour)
	key := TrustedKey{ID: k.KeyID(), PublicKey: string(k.PublicKeyPEM()), Purposes: []Purpose{PurposeDelivery},
		NotBefore: "2026-01-01T00:00:00Z", NotAfter: "2026-02-01T00:00:00Z"}
	for name, tc := range map[string]struct {
		edit func(d *TrustDocument)
		ok   bool
	}{
		"valid":                     {func(d *TrustDocument) {}, true},
		"window of 400 days":        {func(d *TrustDocument) { d.Keys[0].NotAfter = "2027-02-05T00:00:00Z" }, true},
		"window of 401 days":        {func(d *TrustDocument) { d.Keys[0].NotAfter = "2027-02-06T00:00:00Z" }, false},
		"inverted window":           {func(d *TrustDocument) { d.Keys[0].NotAfter = d.Keys[0].NotBefore }, false},
		"offset timestamp":          {func(d *TrustDocument) { d.Keys[0].NotBefore = "2026-01-01T01:00:00+01:00" }, false},
		"no keys":                   {func(d *TrustDocument) { d.Keys = nil }, false},
		"same key twice":            {func(d *TrustDocument) { d.Keys = append(d.Keys, d.Keys[0]) }, false},
		"wrong id":                  {func(d *TrustDocument) { d.Keys[0].ID = strings.Repeat("A", 43) + "=" }, false},
		"no purpose":                {func(d *TrustDocument) { d.Keys[0].Purposes = nil }, false},
		"purpose twice":             {func(d *TrustDocument) { d.Keys[0].Purposes = []Purpose{PurposeDelivery, PurposeDelivery} }, false},
		"PEM without final newline": {func(d *TrustDocument) { d.Keys[0].PublicKey = strings.TrimSuffix(d.Keys[0].PublicKey, "\n") }, false},
		"bad expires":               {func(d *TrustDocument) { d.Expires = "soon" }, false},
		"wrong schema":              {func(d *TrustDocument) { d.Schema = "runmill.asf-evidence-trust/v2" }, false},
	} {
		d := TrustDocument{Schema: TrustSchema, Keys: []TrustedKey{key}}
		tc.edit(&d)
		_, err := d.validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestStrictDecoder pins the parse rules every document shares.
func TestStrictDecoder(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type doc struct {
		S   string          `json:"s"`
		N   int64           `json:"n"`
		B   bool            `json:"b"`
		L   []string        `json:"l"`
		O   *inner          `json:"o,omitempty"`
		Opt string          `json:"opt,omitempty"`
		Raw json.RawMessage `json:"raw,omitempty"`
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"s":"x","n":1,"b":true,"l":[]}`, true},
		{` { "s" : "x" , "n" : 1 , "b" : true , "l" : [ "a" , "b" ] } `, true},
		{`{"s":"x","n":1,"b":true,"l":[],"o":{"a":"y"},"opt":"z","raw":{"k":[1,2.5,null]}}`, true},
		{`{"s":"x","n":1,"b":true}`, false},                            // missing required
		{`{"s":"x","n":1,"b":true,"l":null}`, false},                   // null
		{`{"s":"x","n":1,"b":true,"l":[],"x":1}`, false},               // unknown
		{`{"s":"x","S":"y","n":1,"b":true,"l":[]}`, false},             // case variant
		{`{"S":"x","n":1,"b":true,"l":[]}`, false},                     // case variant alone
		{`{"s":"x","s":"x","n":1,"b":true,"l":[]}`, false},             // duplicate
		{`{"s":"x","n":1.0,"b":true,"l":[]}`, false},                   // not an integer
		{`{"s":"x","n":1e3,"b":true,"l":[]}`, false},                   // not an integer
		{`{"s":"x","n":-0,"b":true,"l":[]}`, false},                    // -0
		{`{"s":"x","n":9007199254740992,"b":true,"l":[]}`, false},      // beyond 2^53-1
		{`{"s":"x","n":9007199254740991,"b":true,"l":[]}`, true},       // 2^53-1
		{`{"s":"x","n":01,"b":true,"l":[]}`, false},                    // leading zero
		{`{"s":"\u0078","n":1,"b":true,"l":[]}`, false},                // needless escape
		{`{"s":"\/","n":1,"b":true,"l":[]}`, false},                    // needless escape
		{`{"s":"\u001f","n":1,"b":true,"l":[]}`, true},                 // required escape
		{`{"s":"\u001F","n":1,"b":true,"l":[]}`, false},                // upper-case hex
		{`{"s":"\u000a","n":1,"b":true,"l":[]}`, false},                // has a short form
		{"{\"s\":\"\xff\",\"n\":1,\"b\":true,\"l\":[]}", false},        // invalid UTF-8
		{"{\"s\":\"\t\",\"n\":1,\"b\":true,\"l\":[]}", false},          // raw control character
		{`{"s":"x","n":1,"b":true,"l":[],"opt":""}`, false},            // optional present but empty
		{`{"s":"x","n":1,"b":true,"l":[],"raw":[1]}`, false},           // raw must be an object
		{`{"s":"x","n":1,"b":true,"l":[],"raw":{"k":1,"K":2}}`, false}, // case variant in a generic object
		{`{"s":"x","n":1,"b":true,"l":[]} {}`, false},                  // trailing data
		{`{"s":"x","n":1,"b":"true","l":[]}`, false},                   // wrong type
		{strings.Repeat(`{"o":`, 40), false},                           // not the right shape, nor too deep to matter
	} {
		var d doc
		err := decodeStrict([]byte(tc.in), &d)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%t", tc.in, err, tc.ok)
		}
	}
}
