package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/verifytest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// TestFinishProof: a base proof answers 0 when every baseline may be
// reused and 1 (an answer, not a failure to prove) when one may not,
// naming it and why: pull requests against the base run that one.
func TestFinishProof(t *testing.T) {
	key := strings.Repeat("ab", 32)
	passed := record.CheckRun{CheckID: "unit", Phase: record.Baseline, InputKey: key, Started: true, Status: record.Passed, Coverage: record.Proven}
	failed := passed
	failed.CheckID, failed.Status = "fixes", record.Failed
	for _, tc := range []struct {
		name   string
		checks []record.CheckRun
		err    error
		out    []string
	}{
		{"every baseline reusable", []record.CheckRun{passed}, nil, []string{"every one reusable", "unit\tproven\tinput key abababababababab"}},
		{"one failed at the base", []record.CheckRun{passed, failed}, errAnswered, []string{"not every one reusable", "fixes\tNOT REUSABLE: the run did not pass with proven coverage (status failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &engine.Run{ID: "r1", Dir: "/state/runs/r1", Delivery: evidence.Delivery{Checks: tc.checks,
				Candidate: evidence.Candidate{Base: strings.Repeat("1", 40)}, BaseProof: true}}
			var out bytes.Buffer
			err := finishProof(IO{Out: &out}, run, false)
			if !errors.Is(err, tc.err) {
				t.Fatalf("finishProof = %v, want %v", err, tc.err)
			}
			for _, w := range tc.out {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestProveBaseThroughTheCLI: `verify --prove-base` through the command
// proves the base (exit 0, GitHub not consulted even with a token and a
// repository in the environment), and a verification of a change against
// it from another state dir with --reuse reuses the proof's baseline and
// says so.
func TestProveBaseThroughTheCLI(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	t.Setenv("GITHUB_TOKEN", "ghs_unused")
	t.Setenv("GITHUB_REPOSITORY", "octo-org/shop")
	t.Setenv("GITHUB_API_URL", "http://127.0.0.1:9") // nothing may call GitHub
	r, base := verifytest.ShopRepo(t, verifytest.TAPPolicy)
	r.Checkout("change", true)
	r.Write("tests/more.t", "x\n")
	cand := r.Commit("a test more")
	keyPEM, _, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	proofState := t.TempDir()
	code, out, errOut := runCLI(t, "", "verify", "--repo", r.Dir, "--prove-base", base, "--signing-key", keyFile,
		"--out", proofState, "--containerd-address", containerdAddress)
	if code != 0 || !strings.Contains(out, "BASE PROOF") || !strings.Contains(out, "every one reusable") || !strings.Contains(errOut, "GitHub sources are NOT consulted") {
		t.Fatalf("prove-base: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--signing-key", keyFile,
		"--no-github", "--out", t.TempDir(), "--reuse", proofState, "--containerd-address", containerdAddress)
	if code != 0 || !strings.Contains(errOut, "unit (baseline): reused from the base proof ") || !strings.Contains(out, "unit (baseline) at "+base[:12]+": the base proof ") {
		t.Fatalf("verify against the proven base: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
