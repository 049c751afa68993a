package evidence

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/rmerr"
)

// Bundle is a Sigstore bundle v0.3 as protobuf-specs defines it
// (dev.sigstore.bundle.v1.Bundle in protobuf JSON: camelCase names, bytes as
// base64), restricted to what runmill writes: a public-key hint and one DSSE
// envelope. No transparency-log entry or timestamp is written, so none is
// accepted: a verifier cannot check what runmill never produces.
type Bundle struct {
	MediaType            string               `json:"mediaType"`
	VerificationMaterial VerificationMaterial `json:"verificationMaterial"`
	DSSEEnvelope         Envelope             `json:"dsseEnvelope"`
}

// VerificationMaterial names the signing key by its hint.
type VerificationMaterial struct {
	PublicKey PublicKeyIdentifier `json:"publicKey"`
}

// PublicKeyIdentifier is protobuf-specs' PublicKeyIdentifier.
type PublicKeyIdentifier struct {
	// Hint is the key id: base64(SHA-256(DER SubjectPublicKeyInfo)).
	Hint string `json:"hint"`
}

// Envelope is a DSSE envelope (github.com/secure-systems-lab/dsse).
type Envelope struct {
	// Payload is the standard, padded base64 of the canonical statement.
	Payload     string      `json:"payload"`
	PayloadType string      `json:"payloadType"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one DSSE signature. DSSE's keyid is left empty, which
// protobuf JSON writes by omitting it; the bundle's hint names the key.
type Signature struct {
	Sig string `json:"sig"`
}

// pae is DSSE's pre-authentication encoding, the exact bytes that are signed:
//
//	"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
//
// with LEN the ASCII decimal byte length.
func pae(payloadType string, payload []byte) []byte {
	return append(paeHeader(make([]byte, 0, len(payload)+len(payloadType)+48), payloadType, len(payload)), payload...)
}

// paeHeader appends the PAE's bytes before the body to b.
func paeHeader(b []byte, payloadType string, bodyLen int) []byte {
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	return append(b, ' ')
}

// Sign validates st, serialises it canonically and returns the signed
// Sigstore bundle and the statement's canonical digest. It refuses to sign a
// statement that Verify's schema steps would reject, so a signer cannot
// produce a bundle no verifier accepts.
//
// The signature is pure Ed25519 over the DSSE PAE, implemented with the
// standard library rather than github.com/sigstore/sigstore: sigstore's
// signature package imports go-containerregistry and with it package net,
// and the offline verifier imports no network package (docs/evidence.md §
// Why not sigstore's Go packages).
func Sign[P Predicate](st *Statement[P], key *SigningKey) (bundle []byte, digest string, err error) {
	if key == nil {
		return nil, "", rmerr.New(rmerr.EvidenceKey, "no signing key")
	}
	cp := *st
	fillNilSlices(&cp)
	payload, err := Marshal(&cp)
	if err != nil {
		return nil, "", rmerr.Wrap(rmerr.EvidenceStatement, err, "serialising the statement")
	}
	var back Statement[P]
	if err := decodeStrict(payload, &back); err != nil {
		return nil, "", rmerr.Wrap(rmerr.EvidenceStatement, err, "the statement does not satisfy its own schema")
	}
	if f := checkStatement(&back); f != nil {
		return nil, "", rmerr.New(rmerr.EvidenceStatement, "the statement is invalid: %s", f.msg)
	}
	b, err := signPayload(payload, key)
	if err != nil {
		return nil, "", err
	}
	// Never sign what the default Verify refuses for its size (issue 13:
	// the signer and the verifier agree on one budget).
	if int64(len(b)) > DefaultLimits.MaxBundleBytes {
		return nil, "", rmerr.New(rmerr.ReportLimit, "the signed bundle would have %d bytes, more than the %d the default evidence verify accepts (pkg/budget)", len(b), DefaultLimits.MaxBundleBytes).
			WithHint("verify fewer or smaller suites per run (verify --shard), or raise the verifier's limit explicitly")
	}
	return b, Digest(payload), nil
}

// signPayload signs arbitrary payload bytes. Only Sign and tests call it.
func signPayload(payload []byte, key *SigningKey) ([]byte, error) {
	sig := key.sign(pae(PayloadType, payload))
	b := Bundle{
		MediaType:            BundleMediaType,
		VerificationMaterial: VerificationMaterial{PublicKey: PublicKeyIdentifier{Hint: key.KeyID()}},
		DSSEEnvelope: Envelope{
			Payload:     base64.StdEncoding.EncodeToString(payload),
			PayloadType: PayloadType,
			Signatures:  []Signature{{Sig: base64.StdEncoding.EncodeToString(sig)}},
		},
	}
	// Every string of a bundle is base64 or a fixed ASCII name, which
	// encoding/json escapes exactly as RFC 8785 does; running a 100 MB
	// bundle through the canonicaliser would only cost time.
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the bundle: %w", err)
	}
	return append(out, '\n'), nil
}

// parsedBundle is a bundle that passed the strict parse.
type parsedBundle struct {
	hint string
	// signed is the DSSE PAE the signature covers; payload is its tail.
	// They share one buffer: the payload is decoded from base64 straight
	// into place, so authenticating a bundle costs one allocation of
	// three quarters of its size and no copy (issue 13, S4).
	signed  []byte
	payload []byte
	sig     []byte
}

// maxEnvelopeBytes bounds what a bundle may hold besides its payload's
// base64. runmill's envelope (media type, hint, payload type, one signature,
// indentation) is under 1 KiB; a reformatted one stays far below this. The cap
// keeps the strict decode of the envelope as cheap as the envelope is, however
// large the bundle.
const maxEnvelopeBytes = 1 << 20

// parseBundle applies the strict-parse rules to a bundle: known
// fields only, the one known media type, exactly one signature, and every
// base64 value in its one canonical spelling.
//
// It costs memory for the payload's bytes and nothing proportional to its
// structure or to the bundle's size beyond that (issue 13, S4: Verify
// authenticates before it parses): the payload's base64 is located by a
// scan that allocates nothing, the rest of the envelope — with the payload
// value emptied — goes through the strict decoder, and the base64 is decoded
// in place into the PAE buffer. Documents the scan cannot take apart this
// way (no payload where a runmill bundle has it, or a payload string with
// escapes or line breaks, which no valid base64 value has) take the plain
// path, decodeStrict over the whole document, which refuses them with the
// precise reason; FuzzBundleFastPath holds both paths to the same answers.
func parseBundle(b []byte) (*parsedBundle, error) {
	start, end, ok := locatePayload(b)
	if !ok {
		return parseBundleWhole(b)
	}
	b64 := b[start:end]
	if bytes.IndexByte(b64, '\\') >= 0 || bytes.IndexByte(b64, '\r') >= 0 || bytes.IndexByte(b64, '\n') >= 0 {
		return parseBundleWhole(b)
	}
	if rest := len(b) - len(b64); rest > maxEnvelopeBytes {
		return nil, fmt.Errorf("the bundle has %d bytes besides its payload; a runmill bundle's envelope has at most %d", rest, maxEnvelopeBytes)
	}
	envelope := make([]byte, 0, len(b)-len(b64))
	envelope = append(append(envelope, b[:start]...), b[end:]...)
	var bu Bundle
	if err := decodeStrict(envelope, &bu); err != nil {
		return nil, err
	}
	if bu.DSSEEnvelope.Payload != "" {
		// The scan and the strict decoder disagree about where the
		// payload is; only the whole document can say what it is.
		return parseBundleWhole(b)
	}
	hint, err := checkEnvelope(&bu)
	if err != nil {
		return nil, err
	}
	signed, payload, err := decodeSigned(b64)
	if err != nil {
		return nil, fmt.Errorf("dsseEnvelope.payload: %w", err)
	}
	sig, err := decodeSignature(&bu)
	if err != nil {
		return nil, err
	}
	return &parsedBundle{hint: hint, signed: signed, payload: payload, sig: sig}, nil
}

// parseBundleWhole is the strict parse of the whole document at once. It
// costs a string copy of the bundle, and parseBundle takes it only for
// documents it will refuse.
func parseBundleWhole(b []byte) (*parsedBundle, error) {
	var bu Bundle
	if err := decodeStrict(b, &bu); err != nil {
		return nil, err
	}
	hint, err := checkEnvelope(&bu)
	if err != nil {
		return nil, err
	}
	payload, err := decodeBase64(bu.DSSEEnvelope.Payload)
	if err != nil {
		return nil, fmt.Errorf("dsseEnvelope.payload: %w", err)
	}
	sig, err := decodeSignature(&bu)
	if err != nil {
		return nil, err
	}
	signed := pae(PayloadType, payload)
	return &parsedBundle{hint: hint, signed: signed, payload: signed[len(signed)-len(payload):], sig: sig}, nil
}

// checkEnvelope checks a decoded bundle's fixed fields and its hint.
func checkEnvelope(bu *Bundle) (hint string, err error) {
	if bu.MediaType != BundleMediaType {
		return "", fmt.Errorf("mediaType is %q, want %q", bu.MediaType, BundleMediaType)
	}
	env := bu.DSSEEnvelope
	if env.PayloadType != PayloadType {
		return "", fmt.Errorf("dsseEnvelope.payloadType is %q, want %q", env.PayloadType, PayloadType)
	}
	if len(env.Signatures) != 1 {
		return "", fmt.Errorf("dsseEnvelope has %d signatures; a runmill bundle has exactly one", len(env.Signatures))
	}
	hint = bu.VerificationMaterial.PublicKey.Hint
	if h, err := decodeBase64(hint); err != nil || len(h) != 32 {
		return "", fmt.Errorf("verificationMaterial.publicKey.hint is not a base64 SHA-256 key id")
	}
	return hint, nil
}

func decodeSignature(bu *Bundle) ([]byte, error) {
	sig, err := decodeBase64(bu.DSSEEnvelope.Signatures[0].Sig)
	if err != nil {
		return nil, fmt.Errorf("dsseEnvelope.signatures[0].sig: %w", err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("dsseEnvelope.signatures[0].sig has %d bytes; an Ed25519 signature has %d", len(sig), ed25519.SignatureSize)
	}
	return sig, nil
}

// decodeSigned decodes the payload's base64 (which the caller checked has no
// line breaks) into a PAE buffer, in place behind the PAE header.
func decodeSigned(b64 []byte) (signed, payload []byte, err error) {
	n := len(b64) / 4 * 3 // what Decode writes at most
	body := n
	if len(b64)%4 == 0 && len(b64) > 0 {
		// The exact length, for the header; Decode checks the padding.
		for i := 1; i <= 2 && b64[len(b64)-i] == '='; i++ {
			body--
		}
	}
	buf := paeHeader(make([]byte, 0, n+len(PayloadType)+48), PayloadType, body)
	h := len(buf)
	m, err := base64.StdEncoding.Strict().Decode(buf[h:h+n], b64)
	if err != nil {
		return nil, nil, fmt.Errorf("not standard padded base64: %w", err)
	}
	if m != body {
		return nil, nil, fmt.Errorf("not standard padded base64: %d bytes decoded, %d announced by its padding", m, body)
	}
	signed = buf[:h+m]
	return signed, signed[h:], nil
}

// locatePayload finds the contents of the string at $.dsseEnvelope.payload
// (between its quotes; end is the next quote, so a string with an escaped
// quote is cut short and the caller must refuse contents with a backslash)
// without allocating. It is a tokenizer, not a validator: on any document
// that is valid JSON it finds what a JSON parser finds, and on anything else
// the strict decode of the rest of the envelope fails.
func locatePayload(b []byte) (start, end int, ok bool) {
	s := envScanner{b: b}
	found := false
	s.members(func(key []byte) bool {
		if string(key) != "dsseEnvelope" || s.peek() != '{' {
			return s.skip(0)
		}
		return s.members(func(key []byte) bool {
			if string(key) != "payload" || s.peek() != '"' {
				return s.skip(1)
			}
			i := bytes.IndexByte(b[s.i+1:], '"')
			if i < 0 {
				return false
			}
			start, end, found = s.i+1, s.i+1+i, true
			return false
		})
	})
	return start, end, found
}

// envScanner is locatePayload's tokenizer.
type envScanner struct {
	b []byte
	i int
}

func (s *envScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (s *envScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// members walks the object at the cursor, calling each with its key and the
// cursor at the member's value; each must consume the value and return
// whether to go on. members returns false when it stopped early or the
// document is not an object of members.
func (s *envScanner) members(each func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !each(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str consumes the string at the cursor and returns its raw contents.
func (s *envScanner) str() ([]byte, bool) {
	from := s.i + 1
	for i := from; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			i++
		case '"':
			s.i = i + 1
			return s.b[from:i], true
		}
	}
	return nil, false
}

// skip consumes any value at the cursor; depth bounds nesting as the strict
// decoder does.
func (s *envScanner) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch s.peek() {
	case '"':
		_, ok := s.str()
		return ok
	case '{':
		return s.members(func([]byte) bool { return s.skip(depth + 1) })
	case '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case 0:
		return false
	}
	// A number or a literal: up to the next delimiter.
	from := s.i
	for ; s.i < len(s.b); s.i++ {
		if c := s.b[s.i]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	return s.i > from
}

// PayloadUnverifiedUnsafe returns a bundle's statement bytes after the
// strict parse but WITHOUT checking the signature, the trust document or any
// binding: for displaying a bundle (runmill inspect), never for deciding
// anything. Use Verify for that.
func PayloadUnverifiedUnsafe(bundle []byte) ([]byte, error) {
	pb, err := parseBundle(bundle)
	if err != nil {
		return nil, err
	}
	return pb.payload, nil
}

// decodeBase64 accepts only standard, padded base64 with zero padding bits
// and no line breaks (which Go's decoder would otherwise skip): one value,
// one spelling.
func decodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("base64 contains a line break")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not standard padded base64: %w", err)
	}
	return b, nil
}
