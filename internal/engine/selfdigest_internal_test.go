package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestSelfDigest: the reuse identity names the running binary by its bytes,
// so two builds stamped with one version never share input keys.
func TestSelfDigest(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := "exe=sha256:" + hex.EncodeToString(sum[:])
	if got := selfDigest(); got != want {
		t.Errorf("selfDigest() = %q, want %q", got, want)
	}
	if id := runmillIdentity("v1.2.3"); !strings.HasPrefix(id, "v1.2.3 "+want) {
		t.Errorf("runmillIdentity = %q, want the version and %s", id, want)
	}
}
