package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/evidence"
)

// shardOf re-signs the delivery bundle's records as shard 1/1: the single
// shard of a one-job verification.
func shardOf(t *testing.T, bundle, keyPath string) string {
	t.Helper()
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := evidence.PayloadUnverifiedUnsafe(b)
	if err != nil {
		t.Fatal(err)
	}
	var st evidence.DeliveryStatement
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	d := st.Predicate
	pem, _ := os.ReadFile(keyPath)
	key, err := evidence.ParseSigningKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err := evidence.Sign(evidence.NewShardStatement(evidence.Shard{RunmillVersion: d.RunmillVersion, IssuedAt: d.IssuedAt,
		RunID: d.RunID, Index: 1, Count: 1, VerificationID: "local-1", ManifestDigest: evidence.ManifestDigest(&d.Manifest), Candidate: d.Candidate,
		Manifest: d.Manifest, Assigned: []string{"unit"}, Checks: d.Checks, Sandbox: json.RawMessage(`{}`)}), key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "shard.json")
	if err := os.WriteFile(p, sb, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvidenceMerge(t *testing.T) {
	dir := t.TempDir()
	key, trust := filepath.Join(dir, "runmill.key"), filepath.Join(dir, "trust.json")
	if code, _, errOut := run(t, "evidence", "keygen", "--key-out", key, "--trust-out", trust); code != 0 {
		t.Fatalf("keygen: %s", errOut)
	}
	bundle, expect, cas := signedDelivery(t, key, time.Now())
	shard := shardOf(t, bundle, key)
	out := filepath.Join(dir, "state")

	code, stdout, errOut := run(t, "evidence", "merge", shard, "--trust", trust, "--signing-key", key, "--out", out,
		"--artifacts-dir", cas, "--no-github", "--json")
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, errOut)
	}
	var rec struct {
		Dir, Bundle string
	}
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil || rec.Bundle == "" {
		t.Fatalf("merge stdout: %v %s", err, stdout)
	}
	// The merged bundle verifies like any other, its artifacts (the shard
	// bundle among them) re-hashed.
	code, stdout, errOut = run(t, "evidence", "verify", rec.Bundle, "--trust", trust, "--expectations", expect,
		"--artifacts-dir", filepath.Join(rec.Dir, "artifacts"))
	if code != 0 {
		t.Fatalf("verifying the merged bundle: exit %d %s %s", code, stdout, errOut)
	}

	// A shard job that did not succeed: an answer, not merge-ready.
	code, stdout, _ = run(t, "evidence", "merge", shard, "--trust", trust, "--signing-key", key, "--out", out,
		"--no-github", "--job-result", "shards=cancelled")
	if code != 1 || !strings.Contains(stdout, "NOT MERGE-READY") || !strings.Contains(stdout, "cancelled") {
		t.Fatalf("cancelled shard job: exit %d\n%s", code, stdout)
	}
	// A refused shard (a delivery bundle is none) is exit 1 with its code.
	code, _, errOut = run(t, "evidence", "merge", bundle, "--trust", trust, "--signing-key", key, "--out", out, "--no-github")
	if code != 1 || !strings.Contains(errOut, "RM-EVIDENCE-008") || !strings.Contains(errOut, "not a shard statement") {
		t.Fatalf("a delivery bundle as a shard: exit %d stderr %s", code, errOut)
	}
	// The same shard twice.
	code, _, errOut = run(t, "evidence", "merge", shard, shard, "--trust", trust, "--signing-key", key, "--out", out, "--no-github")
	if code != 1 || !strings.Contains(errOut, "RM-EVIDENCE-019") {
		t.Fatalf("a shard twice: exit %d stderr %s", code, errOut)
	}
}

func TestShardUsage(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f.json")
	os.WriteFile(f, []byte("{}"), 0o644)
	t.Setenv("RUNMILL_SIGNING_KEY", "")
	t.Setenv("GITHUB_ACTIONS", "") // no workflow run to default the verification id to
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"evidence", "merge", f}, "missing required flag(s) --trust"},
		{[]string{"evidence", "merge", "--trust", f}, "no SHARD_BUNDLE"},
		{[]string{"evidence", "merge", f, "--trust", f, "--no-github", "--job-result", "cancelled"}, "not NAME=RESULT"},
		{[]string{"evidence", "merge", f, "--trust", f, "--no-github"}, "needs a signing key"},
		{[]string{"evidence", "merge", filepath.Join(dir, "nope"), "--trust", f}, "opening"},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--shard", "4/3"}, "not K/N"},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--shard-durations", f}, "needs --shard"},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--shard", "1/2", "--verification-id", "p-1", "--shard-durations", filepath.Join(dir, "nope")}, "reading --shard-durations"},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--shard", "1/2"}, "--shard 1/2 needs --verification-id"},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--shard", "1/2", "--verification-id", "two words"}, `verification id "two words"`},
		{[]string{"verify", "--repo", dir, "--base", "a", "--candidate", "b", "--no-github", "--verification-id", "p-1"}, "--verification-id needs --shard"},
	} {
		code, out, errOut := run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want 2 and %q", tc.args, code, out, errOut, tc.err)
		}
	}
}
