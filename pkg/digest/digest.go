// Package digest names bytes by their SHA-256 in the two spellings runmill
// writes: bare lower-case hex (content addresses, report and stream hashes)
// and "sha256:<hex>" (tree, policy, input and canonical digests).
package digest

import (
	"crypto/sha256"
	"encoding/hex"
)

// Prefix starts the digest spelling Of writes.
const Prefix = "sha256:"

// Hex is the lower-case hex SHA-256 of b.
func Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Of is b's digest "sha256:<lower-case hex>".
func Of(b []byte) string { return Prefix + Hex(b) }

// LowerHex reports whether s is exactly n lower-case hex digits: the one
// spelling of a digest or object id runmill accepts (upper case would name
// the same bytes a second way).
func LowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
