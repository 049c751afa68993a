package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/cli"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// signedDelivery writes a small valid delivery bundle signed with the key at
// keyPath, its expectations and its artifacts, and returns their paths.
func signedDelivery(t *testing.T, keyPath string, issued time.Time) (bundle, expect, artifacts string) {
	t.Helper()
	dir := t.TempDir()
	artifacts = filepath.Join(dir, "cas")
	os.MkdirAll(filepath.Join(artifacts, "sha256"), 0o755)
	put := func(b []byte) (string, string) {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		os.WriteFile(filepath.Join(artifacts, "sha256", h), b, 0o644)
		return h, evidence.ArtifactAddress(h)
	}
	out := func(b []byte) record.Output {
		h, a := put(b)
		return record.Output{SHA256: h, Size: int64(len(b)), Artifact: a, ArtifactSize: int64(len(b))}
	}
	head, base := strings.Repeat("c", 40), strings.Repeat("b", 40)
	tree := "sha256:" + strings.Repeat("7", 64)
	spec := &policy.ReportSpec{Path: "r.tap", Format: "tap"}
	cmd := "prove > r.tap"
	rep := func(b []byte) *record.ReportRecord {
		h, a := put(b)
		return &record.ReportRecord{Path: "r.tap", Format: report.TAP, SHA256: h, Size: int64(len(b)), Artifact: a,
			Inventory: &record.Inventory{Passed: []report.TestID{"adds"}}}
	}
	tap := []byte("1..1\nok 1 - adds\n")
	// head contains base: it lands as itself.
	landing := evidence.Landing{Commit: head, GitTree: strings.Repeat("d", 40), Conflicts: []string{}}
	p := evidence.Delivery{
		RunmillVersion: "test", IssuedAt: issued.UTC().Format(time.RFC3339Nano), RunID: "r1",
		Candidate: evidence.Candidate{Repository: evidence.Repository{Name: "o/n", ID: 1}, PullRequest: 2, Head: head, Base: base,
			MergeBase: base, Landing: landing, Tree: tree},
		Manifest: discovery.Manifest{Schema: discovery.Schema, Base: base, Candidate: head, ReadFrom: discovery.ReadFromNone,
			Autonomy: policy.PROnly, FailOnSkippedCheck: true,
			Checks: []discovery.Check{{ID: "unit", Command: cmd, Report: spec, Required: true,
				Sources: []discovery.Source{discovery.SourceRepository}, Reasons: []string{"policy"}}}},
		Checks: []record.CheckRun{
			{CheckID: "unit", Phase: record.Baseline, Command: cmd, Commit: base, TreeBefore: tree, TreeAfter: tree,
				Executor: record.Orchestrator, Started: true, Status: record.Passed, Coverage: record.Proven, Stdout: out(nil), Stderr: out(nil), Report: rep(tap)},
			{CheckID: "unit", Phase: record.Candidate, Command: cmd, Commit: head, TreeBefore: tree, TreeAfter: tree,
				Executor: record.Orchestrator, Started: true, Status: record.Passed, Coverage: record.Proven, Stdout: out([]byte("ok\n")), Stderr: out(nil), Report: rep(tap)},
		},
	}
	evidence.Decide(&p)
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	key, err := evidence.ParseSigningKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := evidence.Sign(evidence.NewDeliveryStatement(p), key)
	if err != nil {
		t.Fatal(err)
	}
	e, err := evidence.Expectations{Repository: evidence.Repository{Name: "o/n", ID: 1}, PullRequest: 2, Head: head, Base: base,
		MergeBase: base, Landing: landing, CandidateTree: tree, Policy: evidence.PolicyExpectation{ReadFrom: discovery.ReadFromNone},
		RequiredChecks: []string{"unit"}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	bundle, expect = filepath.Join(dir, "evidence.json"), filepath.Join(dir, "expect.json")
	os.WriteFile(bundle, b, 0o644)
	os.WriteFile(expect, e, 0o644)
	return bundle, expect, artifacts
}

func TestEvidenceKeygenAndVerify(t *testing.T) {
	dir := t.TempDir()
	key, trust := filepath.Join(dir, "runmill.key"), filepath.Join(dir, "trusted-signers.json")
	code, out, errOut := run(t, "evidence", "keygen", "--key-out", key, "--trust-out", trust, "--valid-for", "30d")
	if code != 0 || errOut != "" {
		t.Fatalf("keygen: exit %d stderr %q", code, errOut)
	}
	var info map[string]string
	if err := json.Unmarshal([]byte(out), &info); err != nil || info["key_id"] == "" {
		t.Fatalf("keygen stdout: %q", out)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", st.Mode(), err)
	}
	nb, _ := time.Parse(time.RFC3339, info["not_before"])
	na, _ := time.Parse(time.RFC3339, info["not_after"])
	if na.Sub(nb) != 30*24*time.Hour {
		t.Fatalf("window %s – %s", info["not_before"], info["not_after"])
	}

	bundle, expect, cas := signedDelivery(t, key, time.Now())
	code, out, errOut = run(t, "evidence", "verify", bundle, "--trust", trust, "--expectations", expect, "--artifacts-dir", cas)
	if code != 0 || errOut != "" {
		t.Fatalf("verify: exit %d stdout %s stderr %q", code, out, errOut)
	}
	var res evidence.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Valid || res.KeyID != info["key_id"] || res.Artifacts == nil {
		t.Fatalf("verdict: %v %s", err, out)
	}

	// The key window is judged at the signed issued_at, so the bundle stays
	// valid after the key's window ended …
	code, _, _ = run(t, "evidence", "verify", bundle, "--trust", trust, "--expectations", expect,
		"--now", time.Now().Add(31*24*time.Hour).UTC().Format(time.RFC3339))
	if code != 0 {
		t.Fatalf("verifying later: exit %d", code)
	}
	// … and an invalid bundle is an answer: exit 1, the verdict on stdout,
	// nothing on stderr. As of an hour ago, issued_at lies in the future.
	code, out, errOut = run(t, "evidence", "verify", bundle, "--trust", trust, "--expectations", expect,
		"--now", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	if code != 1 || errOut != "" || !strings.Contains(out, `"reason": "key-window"`) {
		t.Fatalf("from the past: exit %d stdout %s stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, "evidence", "verify", trust, "--trust", trust, "--expectations", expect)
	if code != 1 || !strings.Contains(out, `"reason": "schema"`) {
		t.Fatalf("not a bundle: exit %d stdout %s", code, out)
	}

	// keygen never overwrites.
	code, _, errOut = run(t, "evidence", "keygen", "--key-out", key, "--trust-out", filepath.Join(dir, "t2.json"))
	if code != 2 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("overwrite: exit %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "t2.json")); err == nil {
		t.Fatal("keygen wrote a trust document for a key it did not write")
	}
}

func TestEvidenceUsage(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f.json")
	os.WriteFile(f, []byte("{}"), 0o644)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"evidence", "verify", f}, "missing required flag(s) --trust, --expectations"},
		{[]string{"evidence", "verify", "--trust", f, "--expectations", f}, "exactly one BUNDLE"},
		{[]string{"evidence", "verify", f, f, "--trust", f, "--expectations", f}, "exactly one BUNDLE"},
		{[]string{"evidence", "verify", f, "--trust", f, "--expectations", f, "--now", "yesterday"}, "not an RFC 3339 time"},
		{[]string{"evidence", "verify", filepath.Join(dir, "nope"), "--trust", f, "--expectations", f}, "opening"},
		{[]string{"evidence", "verify", f, "--trust", f, "--expectations", f, "--artifacts-dir", f}, "not a directory"},
		{[]string{"evidence", "keygen", "--key-out", filepath.Join(dir, "k")}, "missing required flag(s) --trust-out"},
		{[]string{"evidence", "keygen", "--key-out", filepath.Join(dir, "k"), "--trust-out", filepath.Join(dir, "t"), "--valid-for", "401d"}, "RM-EVIDENCE-018"},
		{[]string{"evidence", "keygen", "--key-out", filepath.Join(dir, "k"), "--trust-out", filepath.Join(dir, "t"), "--valid-for", "soon"}, "--valid-for"},
	} {
		code, out, errOut := run(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want 2 and %q", tc.args, code, out, errOut, tc.err)
		}
	}
}
