package evidence

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"time"

	"github.com/runmill/verify/pkg/rmerr"
)

// TrustSchema names the trust document (DESIGN.md § Trust document).
const TrustSchema = "runmill.asf-evidence-trust/v1"

// Purpose is what a trusted key may sign.
type Purpose string

const (
	// PurposeDelivery: delivery statements (DeliveryPredicateType).
	PurposeDelivery Purpose = "delivery"
	// PurposeTerminal: terminal statements (TerminalPredicateType).
	PurposeTerminal Purpose = "terminal"
)

// maxTrustedKeys bounds a trust document; rotation needs two or three.
const maxTrustedKeys = 64

// TrustDocument lists the keys a verifier accepts evidence from.
type TrustDocument struct {
	Schema string `json:"schema"`
	// Expires, when present, is when the whole document stops being
	// usable; a verifier refuses it from then on.
	Expires string       `json:"expires,omitempty"`
	Keys    []TrustedKey `json:"keys"`
}

// TrustedKey is one Ed25519 public key with what and when it may sign.
type TrustedKey struct {
	// ID is base64(SHA-256(DER SubjectPublicKeyInfo)); a verifier recomputes
	// it from PublicKey and refuses a mismatch.
	ID string `json:"id"`
	// PublicKey is the PEM "PUBLIC KEY" block.
	PublicKey string    `json:"public_key"`
	Purposes  []Purpose `json:"purposes"`
	// NotBefore and NotAfter bound the statements the key may sign: their
	// signed issued_at must lie in [NotBefore, NotAfter].
	NotBefore string `json:"not_before"`
	NotAfter  string `json:"not_after"`
}

// trustedKey is a TrustedKey after validation.
type trustedKey struct {
	id                  string
	pub                 ed25519.PublicKey
	purposes            []Purpose
	notBefore, notAfter time.Time
}

// trust is a validated trust document.
type trust struct {
	expires time.Time // zero when the document does not expire
	keys    map[string]trustedKey
}

// ParseTrust strictly parses and validates a trust document without looking
// at the clock; Verify checks expiry against VerifyOptions.Now.
func ParseTrust(b []byte) (*TrustDocument, error) {
	_, doc, err := parseTrust(b)
	return doc, err
}

func parseTrust(b []byte) (*trust, *TrustDocument, error) {
	var doc TrustDocument
	if err := decodeStrict(b, &doc); err != nil {
		return nil, nil, rmerr.Wrap(rmerr.EvidenceTrust, err, "parsing the trust document")
	}
	t, err := doc.validate()
	if err != nil {
		return nil, nil, err
	}
	return t, &doc, nil
}

// validate enforces DESIGN.md § Trust document: one or more Ed25519 keys,
// each with a recomputable id, known purposes and a bounded window.
func (doc *TrustDocument) validate() (*trust, error) {
	var errs rmerr.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.EvidenceTrust, format, args...).InField(field))
	}
	if doc.Schema != TrustSchema {
		bad("schema", "schema is %q, want %q", doc.Schema, TrustSchema)
	}
	t := &trust{keys: map[string]trustedKey{}}
	if doc.Expires != "" {
		exp, err := parseTime(doc.Expires)
		if err != nil {
			bad("expires", "%v", err)
		}
		t.expires = exp
	}
	if len(doc.Keys) == 0 || len(doc.Keys) > maxTrustedKeys {
		bad("keys", "a trust document lists 1 to %d keys, this one %d", maxTrustedKeys, len(doc.Keys))
	}
	for i, k := range doc.Keys {
		f := fmt.Sprintf("keys[%d]", i)
		pub, err := parsePublicKey(k.PublicKey)
		if err != nil {
			bad(f+".public_key", "%v", err)
			continue
		}
		id, _ := KeyID(pub)
		if k.ID != id {
			bad(f+".id", "key id %q does not match the public key, whose id is %q", k.ID, id)
			continue
		}
		if _, dup := t.keys[id]; dup {
			bad(f+".id", "key %q is listed twice", id)
			continue
		}
		if len(k.Purposes) == 0 {
			bad(f+".purposes", "a key needs at least one purpose")
		}
		for j, p := range k.Purposes {
			if p != PurposeDelivery && p != PurposeTerminal {
				bad(fmt.Sprintf("%s.purposes[%d]", f, j), "unknown purpose %q (want %q or %q)", p, PurposeDelivery, PurposeTerminal)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(k.Purposes)))) != len(k.Purposes) {
			bad(f+".purposes", "a purpose is listed twice")
		}
		nb, err1 := parseTime(k.NotBefore)
		na, err2 := parseTime(k.NotAfter)
		if err1 != nil {
			bad(f+".not_before", "%v", err1)
		}
		if err2 != nil {
			bad(f+".not_after", "%v", err2)
		}
		if err1 == nil && err2 == nil {
			switch {
			case !na.After(nb):
				bad(f+".not_after", "not_after %s is not after not_before %s", k.NotAfter, k.NotBefore)
			case na.Sub(nb) > MaxKeyWindow:
				bad(f+".not_after", "the validity window %s is longer than the maximum %s", na.Sub(nb), MaxKeyWindow)
			}
		}
		t.keys[id] = trustedKey{id: id, pub: pub, purposes: k.Purposes, notBefore: nb, notAfter: na}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// Encode validates doc and returns it as indented JSON.
func (doc TrustDocument) Encode() ([]byte, error) {
	if _, err := doc.validate(); err != nil {
		return nil, err
	}
	return encodeIndented(doc)
}
