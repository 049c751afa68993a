package evidence

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"
	"time"
)

// minimalTrustedRoot is a Sigstore trusted root with no authorities, logs or
// timestamping services. cosign v2 verifies a bundle v0.3 only through
// sigstore-go, which wants trusted material even when the only trust is a
// --key; without --trusted-root it fetches one from the public TUF
// repository, which an offline verifier host cannot reach (docs/evidence.md
// § Verifying with cosign).
const minimalTrustedRoot = `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`

// TestCosignInterop shows that cosign accepts runmill's bundles offline and
// rejects tampered ones (issue 5 § Interoperability). CI builds cosign from
// the Go module proxy into a temporary directory outside the repository:
//
//	GOBIN=$(mktemp -d) go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5
//	RUNMILL_COSIGN=$GOBIN/cosign go test -run TestCosignInterop ./pkg/evidence
func TestCosignInterop(t *testing.T) {
	cosign := os.Getenv("RUNMILL_COSIGN")
	testreq.Need(t, cosign != "", "RUNMILL_COSIGN is not set: scripts/test.sh builds cosign v2.6.5 and sets it")
	f := newFixture(t)
	termBundle, _, _ := newTerminal(t, f)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub := write("runmill.pub", f.key.PublicKeyPEM())
	root := write("trusted_root.json", []byte(minimalTrustedRoot))
	payload := payloadOf(t, f.bundle)
	tampered := withPayload(t, f.bundle, []byte(strings.Replace(string(payload), `"pull_request":17`, `"pull_request":18`, 1)))
	otherKey, _ := newKey(t, 2, fixKeyStart, 90*24*time.Hour)
	otherPub := write("other.pub", otherKey.PublicKeyPEM())

	for _, tc := range []struct {
		name, bundle, key, typ, digest string
		ok                             bool
	}{
		{"fresh bundle", write("evidence.json", f.bundle), pub, DeliveryPredicateType, fixHead, true},
		{"terminal bundle", write("terminal.json", termBundle), pub, TerminalPredicateType, fixHead, true},
		{"tampered payload", write("tampered.json", tampered), pub, DeliveryPredicateType, fixHead, false},
		{"other key", filepath.Join(dir, "evidence.json"), otherPub, DeliveryPredicateType, fixHead, false},
		{"other commit", filepath.Join(dir, "evidence.json"), pub, DeliveryPredicateType, fixBase, false},
		{"other predicate type", filepath.Join(dir, "evidence.json"), pub, TerminalPredicateType, fixHead, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(cosign, "verify-blob-attestation", "--bundle", tc.bundle, "--key", tc.key,
				"--insecure-ignore-tlog", "--type", tc.typ, "--digest", tc.digest, "--digestAlg", DigestAlgGitCommit,
				"--trusted-root", root)
			// A private HOME and TUF cache: nothing from the machine's
			// sigstore state takes part.
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TUF_ROOT="+t.TempDir(), "SIGSTORE_NO_CACHE=true")
			out, err := cmd.CombinedOutput()
			if tc.ok && (err != nil || !strings.Contains(string(out), "Verified OK")) {
				t.Fatalf("cosign rejected it: %v\n%s", err, out)
			}
			if !tc.ok && err == nil {
				t.Fatalf("cosign accepted it:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Logf("cosign: %s", lines[len(lines)-1])
		})
	}
}
