package deps

import (
	"slices"
	"testing"
)

// TestInputKeysViewMode: a read-only and a copy-on-write view of one
// install are different computations (a vitest config run fails on the
// first and passes on the second), so a reused run of one never stands for
// the other.
func TestInputKeysViewMode(t *testing.T) {
	side := &npmSide{commit: "c1", receipt: Receipt{Strategy: NPM, Key: "sha256:k", Fingerprint: "sha256:f"}}
	keys := func(cow bool) []string {
		p := &Prepared{cow: cow, errs: map[string]error{}, npm: &npmPrepared{sides: []*npmSide{side}, errs: map[string]error{}}}
		k, ok := p.InputKeys(NPM, "c1")
		if !ok {
			t.Fatalf("cow %v: no keys", cow)
		}
		return k
	}
	ro, cow := keys(false), keys(true)
	if want := []string{"npm sha256:k sha256:f"}; !slices.Equal(ro, want) {
		t.Errorf("read-only view: %q, want %q", ro, want)
	}
	if want := []string{"npm sha256:k sha256:f copy-on-write"}; !slices.Equal(cow, want) {
		t.Errorf("copy-on-write view: %q, want %q", cow, want)
	}
}
