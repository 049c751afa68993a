package evidence

import (
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
	b := make([]byte, 0, len(payload)+len(payloadType)+48)
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
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
	hint    string
	payload []byte
	sig     []byte
}

// parseBundle applies the strict-parse rules to a bundle: known
// fields only, the one known media type, exactly one signature, and every
// base64 value in its one canonical spelling.
func parseBundle(b []byte) (*parsedBundle, error) {
	var bu Bundle
	if err := decodeStrict(b, &bu); err != nil {
		return nil, err
	}
	if bu.MediaType != BundleMediaType {
		return nil, fmt.Errorf("mediaType is %q, want %q", bu.MediaType, BundleMediaType)
	}
	env := bu.DSSEEnvelope
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("dsseEnvelope.payloadType is %q, want %q", env.PayloadType, PayloadType)
	}
	if len(env.Signatures) != 1 {
		return nil, fmt.Errorf("dsseEnvelope has %d signatures; a runmill bundle has exactly one", len(env.Signatures))
	}
	hint := bu.VerificationMaterial.PublicKey.Hint
	if h, err := decodeBase64(hint); err != nil || len(h) != 32 {
		return nil, fmt.Errorf("verificationMaterial.publicKey.hint is not a base64 SHA-256 key id")
	}
	payload, err := decodeBase64(env.Payload)
	if err != nil {
		return nil, fmt.Errorf("dsseEnvelope.payload: %w", err)
	}
	sig, err := decodeBase64(env.Signatures[0].Sig)
	if err != nil {
		return nil, fmt.Errorf("dsseEnvelope.signatures[0].sig: %w", err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("dsseEnvelope.signatures[0].sig has %d bytes; an Ed25519 signature has %d", len(sig), ed25519.SignatureSize)
	}
	return &parsedBundle{hint: hint, payload: payload, sig: sig}, nil
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
