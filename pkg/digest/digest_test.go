package digest_test

import (
	"testing"

	"github.com/runmill/verify/pkg/digest"
)

func TestDigest(t *testing.T) {
	// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := digest.Hex([]byte("abc")); got != abc {
		t.Errorf("Hex(abc) = %s, want %s", got, abc)
	}
	if got := digest.Of([]byte("abc")); got != "sha256:"+abc {
		t.Errorf("Of(abc) = %s", got)
	}
	if got := digest.Hex(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("Hex(nil) = %s, want the digest of no bytes", got)
	}
}

func TestLowerHex(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want bool
	}{
		{"0123456789abcdef", 16, true},
		{"0123456789ABCDEF", 16, false},
		{"0123456789abcdeg", 16, false},
		{"0123456789abcdef", 15, false},
		{"", 0, true},
		{"a", 0, false},
	} {
		if got := digest.LowerHex(tc.s, tc.n); got != tc.want {
			t.Errorf("LowerHex(%q, %d) = %v, want %v", tc.s, tc.n, got, tc.want)
		}
	}
}
