package textcap

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestFieldCut(t *testing.T) {
	f := Field{Max: 5}
	full := "ab日本語"
	f.Write([]byte(full[:3]))
	f.Write([]byte(full[3:]))
	if !f.Cut() || string(f.Text()) != "ab日" || f.N != int64(len(full)) {
		t.Fatalf("cut=%v text=%q n=%d", f.Cut(), f.Text(), f.N)
	}
	sum := sha256.Sum256([]byte(full))
	if f.Sum() != hex.EncodeToString(sum[:]) {
		t.Fatalf("sum %s", f.Sum())
	}
}
