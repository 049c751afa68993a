package evidence_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/evidence"
)

// TestArtifactLayout: an address is its own path below the artifacts
// directory, and only the one spelling the store writes names a path.
func TestArtifactLayout(t *testing.T) {
	hexd := strings.Repeat("0a", 32)
	for name, tc := range map[string]struct {
		addr string
		ok   bool
	}{
		"an address":         {"sha256/" + hexd, true},
		"upper case":         {"sha256/" + strings.ToUpper(hexd), false},
		"short":              {"sha256/" + hexd[:63], false},
		"climbing out":       {"sha256/../../../etc/passwd", false},
		"another algorithm":  {"sha512/" + hexd, false},
		"a digest, not addr": {"sha256:" + hexd, false},
		"empty":              {"", false},
	} {
		t.Run(name, func(t *testing.T) {
			p, ok := evidence.ArtifactPath("/store", tc.addr)
			h, hok := evidence.ArtifactHex(tc.addr)
			if ok != tc.ok || hok != tc.ok || evidence.IsArtifactAddress(tc.addr) != tc.ok {
				t.Fatalf("ArtifactPath %v, ArtifactHex %v, IsArtifactAddress %v; want %v", ok, hok, evidence.IsArtifactAddress(tc.addr), tc.ok)
			}
			if tc.ok && (p != filepath.Join("/store", filepath.FromSlash(tc.addr)) || evidence.ArtifactAddress(h) != tc.addr) {
				t.Fatalf("ArtifactPath = %s, ArtifactHex = %s: the address is not its own path", p, h)
			}
			if !tc.ok && p != "" {
				t.Fatalf("ArtifactPath(%q) = %q: no path for what is not an address", tc.addr, p)
			}
		})
	}
}

func TestPutArtifact(t *testing.T) {
	dir := t.TempDir()
	body := "the report\n"
	addr, n, err := evidence.PutArtifact(dir, strings.NewReader(body), int64(len(body)))
	sum := sha256.Sum256([]byte(body))
	if err != nil || n != int64(len(body)) || addr != evidence.ArtifactAddress(hex.EncodeToString(sum[:])) {
		t.Fatalf("PutArtifact = %q, %d, %v", addr, n, err)
	}
	p, _ := evidence.ArtifactPath(dir, addr)
	if b, err := os.ReadFile(p); err != nil || string(b) != body {
		t.Fatalf("the body at %s is %q, %v", p, b, err)
	}
	// Storing the same bytes again is the same address.
	if again, _, err := evidence.PutArtifact(dir, strings.NewReader(body), 100); err != nil || again != addr {
		t.Fatalf("again: %q, %v", again, err)
	}
	// Over the cap: refused, and nothing (no temporary file) is left.
	if _, _, err := evidence.PutArtifact(dir, strings.NewReader("0123456789"), 9); !errors.Is(err, evidence.ErrArtifactOverCap) {
		t.Fatalf("over the cap: %v, want ErrArtifactOverCap", err)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "sha256"))
	if len(left) != 1 {
		t.Fatalf("the store holds %d entries, want the one body", len(left))
	}
}
