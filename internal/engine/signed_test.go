package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
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

// testKeyFile writes a new signing key to a file, for a runmill run as its
// own process (--signing-key), and returns the file and the trust
// document naming the key.
func testKeyFile(t *testing.T) (file string, trust []byte) {
	t.Helper()
	keyPEM, _, trust := newTestKey(t)
	file = filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, trust
}

// expectations is `evidence expect` for base..cand of r: the document a
// bundle of that change is verified against offline.
func expectations(t *testing.T, r *gittest.Repo, base, cand string) []byte {
	t.Helper()
	exp, err := engine.Expect(context.Background(), engine.ExpectOptions{
		Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := exp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// wantOfflineVerdict holds a run's signed bundle, verified offline against
// expDoc, to the run's verdict: a merge-ready bundle verifies; a refused
// one's facts and bindings hold and the refusal is the verdict's
// (required-evidence).
func wantOfflineVerdict(t *testing.T, run *engine.Run, trust, expDoc []byte, ready bool) {
	t.Helper()
	bundle, err := os.ReadFile(run.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	res := evidence.Verify(bundle, trust, expDoc, evidence.VerifyOptions{Now: time.Now(), ArtifactsDir: filepath.Join(run.Dir, "artifacts")})
	switch {
	case ready && !res.Valid:
		t.Fatalf("evidence verify of a merge-ready bundle: %s: %s", res.Reason, res.Message)
	case !ready && (res.Valid || res.Reason != evidence.ReasonRequiredEvidence):
		t.Fatalf("evidence verify of a refused bundle: valid %v, %s: %s; want required-evidence", res.Valid, res.Reason, res.Message)
	}
}

// wantReasons holds a run to a case's verdict: merge-ready or not, every
// wanted rule among its reasons and no unwanted one.
func wantReasons(t *testing.T, run *engine.Run, ready bool, want, notWant []string) {
	t.Helper()
	reasons := strings.Join(rules(run), "\n")
	if run.MergeReady() != ready {
		t.Fatalf("merge-ready %v, want %v; reasons:\n%s", run.MergeReady(), ready, reasons)
	}
	for _, w := range want {
		if !hasRule(run, w) {
			t.Errorf("no reason mentions %q; reasons:\n%s", w, reasons)
		}
	}
	for _, w := range notWant {
		if hasRule(run, w) {
			t.Errorf("a reason mentions %q; reasons:\n%s", w, reasons)
		}
	}
}
