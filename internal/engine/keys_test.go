package engine_test

import (
	"testing"
	"time"

	"github.com/runmill/verify/pkg/evidence"
)

// newTestKey is the one way the engine's tests make a signing key: its PEM
// (for a key file), the parsed key and the trust document that trusts it.
func newTestKey(tb testing.TB) (pem []byte, key *evidence.SigningKey, trust []byte) {
	tb.Helper()
	pem, trust, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	if key, err = evidence.ParseSigningKey(pem); err != nil {
		tb.Fatal(err)
	}
	return pem, key, trust
}
