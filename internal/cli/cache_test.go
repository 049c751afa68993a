package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/treehash"
)

// TestCacheSealThenVet: the commands as the Action runs them. An entry
// this state dir made is sealed with the key; the next job's vet with the
// same key keeps it, a vet trusting another key refuses and removes it,
// and cache key's save key names what is there.
func TestCacheSealThenVet(t *testing.T) {
	t.Setenv("RUNMILL_SIGNING_KEY", "")
	dir := t.TempDir()
	keyPEM, _, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.pem")
	os.WriteFile(keyFile, keyPEM, 0o600)
	_, otherTrust, _ := evidence.Keygen(24 * time.Hour)
	otherFile := filepath.Join(dir, "other.json")
	os.WriteFile(otherFile, otherTrust, 0o644)

	state := filepath.Join(dir, "state")
	entry := filepath.Join(state, "toolcache", "go", strings.Repeat("c3", 32))
	os.MkdirAll(filepath.Join(entry, "cache"), 0o755)
	os.WriteFile(filepath.Join(entry, "cache", "README"), []byte("go build cache\n"), 0o644)
	d, _, err := treehash.Sum(context.Background(), filepath.Join(entry, "cache"), treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(entry, "fingerprint"), []byte(d.String()+"\n"), 0o644)

	if code, _, errOut := runCLI(t, "", "cache", "vet", "--out", state, "--signing-key", keyFile); code != 0 || !strings.Contains(errOut, "refused and removed: it has no seal") {
		t.Fatalf("vet of an unsealed entry: exit %d\n%s", code, errOut)
	}
	os.MkdirAll(filepath.Join(entry, "cache"), 0o755)
	os.WriteFile(filepath.Join(entry, "cache", "README"), []byte("go build cache\n"), 0o644)
	os.WriteFile(filepath.Join(entry, "fingerprint"), []byte(d.String()+"\n"), 0o644)
	if code, _, errOut := runCLI(t, "", "cache", "seal", "--out", state, "--signing-key", keyFile); code != 0 || !strings.Contains(errOut, "kept, sealed") {
		t.Fatalf("seal: exit %d\n%s", code, errOut)
	}
	code, keys, errOut := runCLI(t, "", "cache", "key", "--out", state)
	if code != 0 || !strings.Contains(keys, "\ngotool-save=runmill-gotool-") || !strings.Contains(keys, "\ndeps-save=\n") {
		t.Fatalf("key: exit %d\n%s%s", code, keys, errOut)
	}
	if code, _, errOut := runCLI(t, "", "cache", "vet", "--out", state, "--signing-key", keyFile); code != 0 || !strings.Contains(errOut, "1 kept, 0 refused") {
		t.Fatalf("vet with the sealing key: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "cache", "vet", "--out", state, "--trust", otherFile); code != 0 || !strings.Contains(errOut, "its seal does not verify") {
		t.Fatalf("vet trusting another key: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Fatalf("the refused entry is still there: %v", err)
	}
	if code, _, errOut := runCLI(t, "", "cache", "seal", "--out", state); code != 2 {
		t.Fatalf("seal without a key: exit %d, want 2\n%s", code, errOut)
	}
}
