package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runmill/verify/pkg/rmerr"
)

// Ed25519 key encodings (RFC 8410). They are fixed byte strings around the
// 32 key bytes, so they are written and read here byte for byte instead of
// through crypto/x509: crypto/x509 imports package net (for IP SANs), and
// the offline verifier imports no network package (DESIGN.md; see
// nonetwork_test.go). Accepting exactly these DER forms is also stricter
// than a general ASN.1 parser: one key has one encoding.
var (
	// SubjectPublicKeyInfo { AlgorithmIdentifier { id-Ed25519 }, BIT STRING }
	spkiPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}
	// OneAsymmetricKey v1 { version 0, { id-Ed25519 }, OCTET STRING { OCTET STRING seed } }
	pkcs8Prefix = []byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20}
)

// PEM block types.
const (
	pemPublicKey  = "PUBLIC KEY"
	pemPrivateKey = "PRIVATE KEY"
)

// MaxKeyWindow is the longest validity window (not_after − not_before) a
// trust document may give a key. GitHub keeps check data for 400 days; a key
// that outlives that by much is a key nobody rotates.
const MaxKeyWindow = 400 * 24 * time.Hour

// SigningKey is an Ed25519 private key that signs evidence with pure Ed25519
// (RFC 8032; never Ed25519ph).
type SigningKey struct {
	priv ed25519.PrivateKey
	id   string
}

// ParseSigningKey reads a PKCS#8 PEM Ed25519 private key ("PRIVATE KEY"),
// as `runmill evidence keygen` and `openssl genpkey -algorithm ed25519` write
// it. Anything else — another algorithm, an encrypted key, extra PEM blocks
// or bytes — is refused.
func ParseSigningKey(pemBytes []byte) (*SigningKey, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil || block.Type != pemPrivateKey || len(block.Headers) != 0 || len(bytes.TrimSpace(rest)) != 0 {
		return nil, rmerr.New(rmerr.EvidenceKey, "the signing key is not exactly one PEM \"PRIVATE KEY\" block").
			WithHint("pass the PKCS#8 PEM file 'runmill evidence keygen' wrote")
	}
	der := block.Bytes
	if len(der) != len(pkcs8Prefix)+ed25519.SeedSize || !bytes.HasPrefix(der, pkcs8Prefix) {
		return nil, rmerr.New(rmerr.EvidenceKey, "the signing key is not an unencrypted PKCS#8 Ed25519 key").
			WithHint("generate one with 'runmill evidence keygen' or 'openssl genpkey -algorithm ed25519'")
	}
	priv := ed25519.NewKeyFromSeed(der[len(pkcs8Prefix):])
	id, err := KeyID(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &SigningKey{priv: priv, id: id}, nil
}

// KeyID returns the key's id: base64(SHA-256(DER SubjectPublicKeyInfo)), the
// value of a bundle's verificationMaterial.publicKey.hint.
func (k *SigningKey) KeyID() string { return k.id }

// PublicKeyPEM returns the public key as a PEM "PUBLIC KEY" block, the form
// trust documents and cosign's --key take.
func (k *SigningKey) PublicKeyPEM() []byte {
	return encodePublicKey(k.priv.Public().(ed25519.PublicKey))
}

// sign signs message with pure Ed25519.
func (k *SigningKey) sign(message []byte) []byte { return ed25519.Sign(k.priv, message) }

// KeyID computes a public key's id: base64(SHA-256(DER SubjectPublicKeyInfo)).
func KeyID(pub ed25519.PublicKey) (string, error) {
	if len(pub) != ed25519.PublicKeySize {
		return "", rmerr.New(rmerr.EvidenceKey, "an Ed25519 public key has %d bytes, not %d", ed25519.PublicKeySize, len(pub))
	}
	sum := sha256.Sum256(append(bytes.Clone(spkiPrefix), pub...))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

func encodePublicKey(pub ed25519.PublicKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: append(bytes.Clone(spkiPrefix), pub...)})
}

// parsePublicKey reads exactly one PEM "PUBLIC KEY" block holding an Ed25519
// SubjectPublicKeyInfo, in the one PEM form encodePublicKey writes (64-column
// base64, one trailing newline).
func parsePublicKey(s string) (ed25519.PublicKey, error) {
	block, rest := pem.Decode([]byte(s))
	if block == nil || block.Type != pemPublicKey || len(block.Headers) != 0 || len(rest) != 0 {
		return nil, errors.New("not exactly one PEM \"PUBLIC KEY\" block")
	}
	der := block.Bytes
	if len(der) != len(spkiPrefix)+ed25519.PublicKeySize || !bytes.HasPrefix(der, spkiPrefix) {
		return nil, errors.New("not an Ed25519 SubjectPublicKeyInfo")
	}
	pub := ed25519.PublicKey(bytes.Clone(der[len(spkiPrefix):]))
	if !bytes.Equal(encodePublicKey(pub), []byte(s)) {
		return nil, errors.New("PEM is not in its canonical form (64-column base64, one trailing newline)")
	}
	return pub, nil
}

// Keygen creates an Ed25519 key valid from now for validFor and returns the
// PKCS#8 PEM private key and a trust document naming its public key for both
// purposes. Write the key with mode 0600.
func Keygen(validFor time.Duration) (privPEM, trustDoc []byte, err error) {
	return GenerateKey(rand.Reader, time.Now(), validFor)
}

// GenerateKey is Keygen with the entropy source and the clock given.
func GenerateKey(random io.Reader, now time.Time, validFor time.Duration) (privPEM, trustDoc []byte, err error) {
	if validFor <= 0 || validFor > MaxKeyWindow {
		return nil, nil, rmerr.New(rmerr.EvidenceKey, "validity %s is not in (0, %s]", validFor, MaxKeyWindow).
			WithHint("choose a shorter --valid-for and rotate keys with overlapping windows")
	}
	pub, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return nil, nil, fmt.Errorf("generating an Ed25519 key: %w", err)
	}
	id, err := KeyID(pub)
	if err != nil {
		return nil, nil, err
	}
	notBefore := now.UTC().Truncate(time.Second)
	doc := TrustDocument{
		Schema: TrustSchema,
		Keys: []TrustedKey{{
			ID:        id,
			PublicKey: string(encodePublicKey(pub)),
			Purposes:  []Purpose{PurposeDelivery, PurposeTerminal},
			NotBefore: formatTime(notBefore),
			NotAfter:  formatTime(notBefore.Add(validFor)),
		}},
	}
	trustDoc, err = doc.Encode()
	if err != nil {
		return nil, nil, err
	}
	der := append(bytes.Clone(pkcs8Prefix), priv.Seed()...)
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), trustDoc, nil
}

// formatTime writes t in the one timestamp form evidence uses: RFC 3339 in
// UTC ("Z"), fractional seconds only when non-zero.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// parseTime reads a timestamp written by formatTime, and only that form, so
// a timestamp has one encoding.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 timestamp", s)
	}
	if formatTime(t) != s {
		return time.Time{}, fmt.Errorf("%q is not in canonical form: want %q (UTC, \"Z\", no trailing zeros)", s, formatTime(t))
	}
	return t, nil
}
