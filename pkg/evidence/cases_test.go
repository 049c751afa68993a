package evidence

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// newTerminal returns a valid terminal statement signed with f's key and
// its expectations.
func newTerminal(t testing.TB, f *fixture) (bundle, expectations []byte, st *TerminalStatement) {
	t.Helper()
	var c Chain
	at := fixIssuedAt.Add(-3 * time.Minute)
	for i, ev := range []struct {
		kind   string
		detail any
	}{
		{"run.started", map[string]any{"run_id": "run-20260301-0001"}},
		{"check.finished", map[string]any{"check_id": "unit", "phase": "candidate", "exit_code": 0}},
		{"run.finished", nil},
	} {
		if err := c.Append(at.Add(time.Duration(i)*time.Minute), ev.kind, ev.detail); err != nil {
			t.Fatal(err)
		}
	}
	events, head := c.Events()
	st = NewTerminalStatement(Terminal{
		RunmillVersion: "v0.1.0-test", IssuedAt: formatTime(fixIssuedAt), RunID: "run-20260301-0001",
		Candidate: TerminalCandidate{Repository: Repository{Name: "octo/shop", ID: 4242}, PullRequest: 17, Head: fixHead, Base: fixBase},
		Outcome:   "merge-ready", DeliveryDigest: Digest(payloadOf(t, f.bundle)),
		Events: events, ChainHead: head,
		Cleanup: Cleanup{Complete: true, Resources: []CleanupResource{
			{Kind: "container", ID: "runmill-unit-1", Gone: true}, {Kind: "checkout", ID: "/var/lib/runmill/co/1", Gone: true}}},
		Budget: []BudgetEntry{
			{CheckID: "unit", Phase: record.Candidate, Resource: "wall-time-ms", Limit: 600000, Consumed: 2345},
			{CheckID: "unit", Phase: record.Candidate, Resource: "stdout-bytes", Limit: 1000, Consumed: 1500, Exceeded: true}},
		SideEffects: []SideEffect{{Kind: "artifact", Target: "sha256/" + strings.Repeat("0", 64), Digest: "sha256:" + strings.Repeat("0", 64)},
			{Kind: "api-call", Target: "GET https://api.github.com/repos/octo/shop/branches/main/protection"}},
	})
	var err error
	if bundle, _, err = Sign(st, f.key); err != nil {
		t.Fatal(err)
	}
	if expectations, err = (TerminalExpectations{Repository: Repository{Name: "octo/shop", ID: 4242}, PullRequest: 17, Head: fixHead, Base: fixBase}).Encode(); err != nil {
		t.Fatal(err)
	}
	return bundle, expectations, st
}

func TestVerifyTerminal(t *testing.T) {
	f := newFixture(t)
	b, e, _ := newTerminal(t, f)
	res := Verify(b, f.trust, e, VerifyOptions{Now: fixNow})
	if !res.Valid || res.Kind != "terminal" {
		out, _ := json.MarshalIndent(res, "", "  ")
		t.Fatalf("valid terminal bundle rejected:\n%s", out)
	}
	// Spec: terminal bundles have no portable artifact manifest, so an
	// artifacts directory is refused — before anything is read from it.
	res = Verify(b, f.trust, e, VerifyOptions{Now: fixNow, ArtifactsDir: "/nonexistent"})
	if res.Valid || res.Reason != ReasonTerminalArtifacts {
		t.Fatalf("terminal bundle with an artifacts dir: %+v", res)
	}
	// A delivery bundle checked against terminal expectations, and the
	// reverse, say which kind they got.
	if res := Verify(f.bundle, f.trust, e, VerifyOptions{Now: fixNow}); res.Reason != ReasonExpectations {
		t.Errorf("delivery bundle, terminal expectations: %s %s", res.Reason, res.Message)
	}
	if res := Verify(b, f.trust, f.expectations, VerifyOptions{Now: fixNow}); res.Reason != ReasonExpectations {
		t.Errorf("terminal bundle, delivery expectations: %s %s", res.Reason, res.Message)
	}
}

// TestTamperMatrixTerminal re-signs every mutation of a terminal statement.
func TestTamperMatrixTerminal(t *testing.T) {
	f := newFixture(t)
	b, e, _ := newTerminal(t, f)
	payload := payloadOf(t, b)
	const tp = `\$\.predicate`
	rules := []rule{
		{"key-re-encoded|re-encoded", `.*`, ReasonCanonical},
		{"duplicated", `.*[^\]]`, ReasonCanonical},
		{"reordered", `.*\.\{\}`, ReasonCanonical},
		{"key-case", tp + `\.events\[\d\]\.detail\..*`, "canonical|event-chain"}, // a different event
		{"key-case", `.*`, "canonical|statement"},
		// Any change to an event changes its digest, which the next event
		// (or chain_head) carries.
		{"removed", tp + `\.events\[\d\]\.detail.*`, ReasonEventChain},
		{"removed", tp + `\.(delivery_digest|side_effects\[0\]\.digest)`, valid},
		{"removed", `.*[^\]]`, ReasonStatement}, // every other member is required
		{"duplicated|removed|reordered", tp + `\.events.*`, ReasonEventChain},
		{"changed", tp + `\.(events.*|chain_head)`, ReasonEventChain},
		{"changed", tp + `\.cleanup\.complete|` + tp + `\.cleanup\.resources\[\d\]\.(gone|kind)`, ReasonCleanup},
		{"changed", tp + `\.budget\[\d\]\.(exceeded|resource|phase)`, ReasonBudget},
		{"changed", tp + `\.side_effects\[\d\]\.kind`, ReasonSideEffects},
		// What the ledgers list is what the signer says happened: a
		// different, still consistent ledger is a different statement.
		{"changed|duplicated|removed", tp + `\.cleanup\.resources\[\d\](\.id)?|` + tp + `\.(budget|side_effects)\[\d\](\.check_id|\.target|\.digest|\.limit|\.consumed)?`, valid},
		{"changed", tp + `\.(run_id|runmill_version|delivery_digest)`, valid},
		{"changed", tp + `\.issued_at`, ReasonKeyWindow},
		{"changed", tp + `\.candidate\.(base|pull_request|repository\.id)`, ReasonBinding},
		{"changed", `.*`, ReasonStatement}, // grammar, enumerations, subject
		{"duplicated|removed", `.*`, ReasonStatement},
	}
	muts := mutate(t, payload, orderMatters)
	runMatrix(t, muts, rules, func(doc []byte) Result {
		return Verify(f.resign(t, doc), f.trust, e, VerifyOptions{Now: fixNow})
	})
}

// TestVerifyCases are the named acceptance cases.
func TestVerifyCases(t *testing.T) {
	f := newFixture(t)
	dir := f.writeArtifacts(t)
	payload := payloadOf(t, f.bundle)
	stmt := f.stmt
	rep := stmt.Predicate.Checks[1].Report
	var largest int64
	for _, a := range f.artifacts {
		largest = max(largest, int64(len(a)))
	}

	otherKey, otherTrust := newKey(t, 2, fixKeyStart, 90*24*time.Hour)
	signedByOther, err := signPayload(payload, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	var forged Bundle
	_ = json.Unmarshal(signedByOther, &forged)
	forged.VerificationMaterial.PublicKey.Hint = f.key.KeyID() // claims to be the trusted key
	forgedHint, _ := json.Marshal(forged)

	// Ed25519ph (RFC 8032 prehash variant) over the same PAE.
	digest := sha512.Sum512(pae(PayloadType, payload))
	phSig, err := f.key.priv.Sign(nil, digest[:], &ed25519.Options{Hash: crypto.SHA512})
	if err != nil {
		t.Fatal(err)
	}
	var ph Bundle
	_ = json.Unmarshal(f.bundle, &ph)
	ph.DSSEEnvelope.Signatures[0].Sig = base64.StdEncoding.EncodeToString(phSig)
	phBundle, _ := json.Marshal(ph)

	var two Bundle
	_ = json.Unmarshal(f.bundle, &two)
	two.DSSEEnvelope.Signatures = append(two.DSSEEnvelope.Signatures, two.DSSEEnvelope.Signatures[0])
	twoSigs, _ := json.Marshal(two)

	var indented bytes.Buffer
	_ = json.Indent(&indented, payload, "", " ")
	notJCS := f.resign(t, indented.Bytes())

	// Key windows: the fixture's statement was issued 2026-03-01T11:59Z.
	_, expiredKey := newKeyAt(t, 1, fixKeyStart.Add(-100*24*time.Hour), 90*24*time.Hour) // ended 2026-01-21
	_, notYetKey := newKeyAt(t, 1, fixIssuedAt.Add(time.Hour), 90*24*time.Hour)          // starts after issuing
	_, justInKey := newKeyAt(t, 1, fixIssuedAt.Add(-90*24*time.Hour), 90*24*time.Hour)   // ends exactly at issued_at
	expiringDoc := withExpires(t, f.trust, fixNow)                                       // the document expires now
	terminalOnly := withPurposes(t, f.trust, []Purpose{PurposeTerminal})                 // may not sign deliveries
	futureBundle := resignWith(t, f, func(p *Delivery) { p.IssuedAt = formatTime(fixNow.Add(6 * time.Minute)) })
	skewBundle := resignWith(t, f, func(p *Delivery) { p.IssuedAt = formatTime(fixNow.Add(4 * time.Minute)) })

	// Artifacts.
	flipped := copyDir(t, dir)
	flipByte(t, filepath.Join(flipped, rep.Artifact))
	longer := copyDir(t, dir)
	appendByte(t, filepath.Join(longer, rep.Artifact))
	symlinked := copyDir(t, dir)
	target := filepath.Join(t.TempDir(), "elsewhere")
	moveAndLink(t, filepath.Join(symlinked, rep.Artifact), target)
	dirLinked := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "sha256"), filepath.Join(dirLinked, "sha256")); err != nil {
		t.Fatal(err)
	}
	fifo := copyDir(t, dir)
	os.Remove(filepath.Join(fifo, rep.Artifact))
	if err := syscall.Mkfifo(filepath.Join(fifo, rep.Artifact), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := resignWith(t, f, func(p *Delivery) {
		r := p.Checks[1].Report
		r.SHA256, r.Artifact, r.Size = strings.Repeat("e", 64), ArtifactAddress(strings.Repeat("e", 64)), 10<<30
	})
	traversal := f.resign(t, []byte(strings.Replace(string(payload), `"artifact":"`+rep.Artifact, `"artifact":"sha256/../../../../etc/passwd`, 1)))

	for _, tc := range []struct {
		name                 string
		bundle, trust, expec []byte
		opts                 VerifyOptions
		want                 Reason
	}{
		{"valid", nil, nil, nil, VerifyOptions{ArtifactsDir: dir}, valid},
		{"wrong key", signedByOther, nil, nil, VerifyOptions{}, ReasonSignature},
		{"wrong key, trusted hint", forgedHint, nil, nil, VerifyOptions{}, ReasonSignature},
		{"right bundle, other trust", nil, otherTrust, nil, VerifyOptions{}, ReasonSignature},
		{"Ed25519ph signature", phBundle, nil, nil, VerifyOptions{}, ReasonSignature},
		{"two signatures", twoSigs, nil, nil, VerifyOptions{}, ReasonSchema},
		{"valid JSON, not JCS", notJCS, nil, nil, VerifyOptions{}, ReasonCanonical},
		{"expired key", nil, expiredKey, nil, VerifyOptions{}, ReasonKeyWindow},
		{"key not yet valid", nil, notYetKey, nil, VerifyOptions{}, ReasonKeyWindow},
		{"window ends at issued_at", nil, justInKey, nil, VerifyOptions{}, valid},
		{"key without the purpose", nil, terminalOnly, nil, VerifyOptions{}, ReasonKeyWindow},
		{"expired trust document", nil, expiringDoc, nil, VerifyOptions{}, ReasonTrust},
		{"issued in the future", futureBundle, nil, nil, VerifyOptions{}, ReasonKeyWindow},
		{"issued within the skew", skewBundle, nil, nil, VerifyOptions{}, valid},
		{"no clock", nil, nil, nil, VerifyOptions{Now: time.Time{}}, ReasonOptions},
		{"negative cap", nil, nil, nil, VerifyOptions{Limits: Limits{MaxArtifactBytes: -1}}, ReasonOptions},
		{"bundle over its cap", nil, nil, nil, VerifyOptions{Limits: Limits{MaxBundleBytes: int64(len(f.bundle) - 1)}}, ReasonInputSize},
		{"bundle at its cap", nil, nil, nil, VerifyOptions{Limits: Limits{MaxBundleBytes: int64(len(f.bundle))}}, valid},
		{"artifact byte flipped", nil, nil, nil, VerifyOptions{ArtifactsDir: flipped}, ReasonArtifact},
		{"artifact one byte longer", nil, nil, nil, VerifyOptions{ArtifactsDir: longer}, ReasonArtifact},
		{"artifact one byte over the cap", nil, nil, nil, VerifyOptions{ArtifactsDir: dir, Limits: Limits{MaxArtifactBytes: largest - 1}}, ReasonArtifact},
		{"artifact at the cap", nil, nil, nil, VerifyOptions{ArtifactsDir: dir, Limits: Limits{MaxArtifactBytes: largest}}, valid},
		{"artifacts over the total cap", nil, nil, nil, VerifyOptions{ArtifactsDir: dir, Limits: Limits{MaxArtifactsTotal: 100}}, ReasonArtifact},
		{"too many artifacts", nil, nil, nil, VerifyOptions{ArtifactsDir: dir, Limits: Limits{MaxArtifacts: 5}}, ReasonArtifact},
		{"10 GB artifact claimed, default cap", huge, nil, nil, VerifyOptions{ArtifactsDir: dir}, ReasonArtifact},
		{"10 GB artifact claimed, absent", huge, nil, nil, VerifyOptions{ArtifactsDir: dir, Limits: Limits{MaxArtifactBytes: 16 << 30}}, ReasonArtifact},
		{"10 GB artifact claimed, no dir", huge, nil, nil, VerifyOptions{}, valid}, // only --artifacts-dir checks bodies
		{"symlinked artifact", nil, nil, nil, VerifyOptions{ArtifactsDir: symlinked}, ReasonArtifact},
		{"symlinked sha256 directory", nil, nil, nil, VerifyOptions{ArtifactsDir: dirLinked}, ReasonArtifact},
		{"FIFO artifact", nil, nil, nil, VerifyOptions{ArtifactsDir: fifo}, ReasonArtifact},
		{"missing artifacts dir", nil, nil, nil, VerifyOptions{ArtifactsDir: filepath.Join(dir, "nope")}, ReasonArtifact},
		{"path traversal address", traversal, nil, nil, VerifyOptions{ArtifactsDir: dir}, ReasonStatement},
		{"candidate run with a finding", resignWith(t, f, func(p *Delivery) {
			p.Checks[1].Observations = []record.Finding{{Rule: "outcome.focused", Message: "a focused test"}}
			Judge(&p.Manifest, &p.Checks[1], p.Checks)
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonRequiredEvidence},
		// Issue 12: a correctly signed statement whose recorded status
		// contradicts its facts is invalid, whatever its verdict says.
		{"status contradicts a masked exit code", resignWith(t, f, func(p *Delivery) {
			p.Checks[1].ExitCode = 1
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonVerdictMismatch},
		{"status contradicts a failed test in the report", resignWith(t, f, func(p *Delivery) {
			inv := p.Checks[1].Report.Inventory
			inv.Failed = []report.TestID{"calc::TestMul"}
			p.Checks[1].Report.FailedTests = []record.FailedTest{{ID: "calc::TestMul", Message: "got 4, want 6"}}
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonVerdictMismatch},
		{"status contradicts a report fault", resignWith(t, f, func(p *Delivery) {
			p.Checks[1].Report.Faults = []string{"example.com/calc: build failed"}
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonVerdictMismatch},
		{"coverage contradicts a zero-test report", resignWith(t, f, func(p *Delivery) {
			inv := p.Checks[1].Report.Inventory
			inv.Skipped = append(inv.Passed, inv.Skipped...)
			slices.Sort(inv.Skipped)
			inv.Passed = []report.TestID{}
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonVerdictMismatch},
		// Issue 12: adopting runmill in one change. The repository policy
		// is new (read from the candidate), so its checks have no baseline
		// contract: a baseline that could not run is no missing evidence.
		{"a check new in the change without a baseline inventory", resignWith(t, f, func(p *Delivery) {
			p.Manifest.ReadFrom = discovery.ReadFromWorkingTree
			p.Manifest.Policies.Repository.Commit = fixHead
			b := &p.Checks[0]
			b.ExitCode, b.Report = 127, nil
			b.Observations = []record.Finding{{Rule: "report.empty", Message: "the command did not write the report"}}
			b.Notes = []string{}
			Judge(&p.Manifest, b, p.Checks)
			p.Checks[1].Moved = nil // nothing to have moved from
			Decide(p)
		}), nil, withReadFrom(t, f.expectations, discovery.ReadFromWorkingTree), VerifyOptions{}, valid},
		{"failed test named that the inventory does not fail", resignWith(t, f, func(p *Delivery) {
			p.Checks[1].Report.FailedTests = []record.FailedTest{{ID: "calc::TestAdd"}}
			Decide(p)
		}), nil, nil, VerifyOptions{}, ReasonVerdictMismatch},
		{"empty inputs", []byte{}, []byte{}, []byte{}, VerifyOptions{}, ReasonSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, tr, e := pick(tc.bundle, f.bundle), pick(tc.trust, f.trust), pick(tc.expec, f.expectations)
			if tc.name == "empty inputs" {
				b, tr, e = tc.bundle, tc.trust, tc.expec
			}
			opts := tc.opts
			if opts.Now.IsZero() && tc.name != "no clock" {
				opts.Now = fixNow
			}
			start := time.Now()
			res := Verify(b, tr, e, opts)
			if got := outcomeOf(res); got != tc.want {
				t.Fatalf("got %s (%s), want %s", got, res.Message, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if !res.Valid && (res.Code == "" || res.Message == "") {
				t.Errorf("a failed result needs a code and a message: %+v", res)
			}
		})
	}
}

// TestNotMergeReadyUnsafe: an authentic, consistent bundle whose verdict is
// negative fails the merge-ready step, unless the caller explicitly asks to
// inspect it; the result then still says merge_ready: false.
func TestNotMergeReadyUnsafe(t *testing.T) {
	f := newFixture(t)
	b := resignWith(t, f, func(p *Delivery) {
		p.Failures = []record.Finding{{Code: "RM-VERIFY-005", Rule: "dependencies.stale", Message: "node_modules does not match package-lock.json"}}
		Decide(p)
	})
	res := Verify(b, f.trust, f.expectations, VerifyOptions{Now: fixNow})
	if res.Valid || res.Reason != ReasonNotMergeReady || !strings.Contains(res.Message, "RM-VERIFY-005") {
		t.Fatalf("got %+v", res)
	}
	res = Verify(b, f.trust, f.expectations, VerifyOptions{Now: fixNow, AllowNotMergeReadyUnsafe: true})
	if !res.Valid || res.MergeReady == nil || *res.MergeReady {
		t.Fatalf("unsafe inspection: %+v", res)
	}
}

func pick(a, b []byte) []byte {
	if a != nil {
		return a
	}
	return b
}

func newKeyAt(t testing.TB, seedByte byte, from time.Time, validFor time.Duration) (*SigningKey, []byte) {
	return newKey(t, seedByte, from, validFor)
}

// withReadFrom returns expectations observing the repository policy read
// from the given place.
func withReadFrom(t testing.TB, expectations []byte, rf discovery.ReadFrom) []byte {
	t.Helper()
	var e Expectations
	if err := json.Unmarshal(expectations, &e); err != nil {
		t.Fatal(err)
	}
	e.Policy.ReadFrom = rf
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resignWith re-signs the fixture's statement after change.
func resignWith(t testing.TB, f *fixture, change func(p *Delivery)) []byte {
	t.Helper()
	var st DeliveryStatement
	if err := decodeStrict(payloadOf(t, f.bundle), &st); err != nil {
		t.Fatal(err)
	}
	change(&st.Predicate)
	b, _, err := Sign(&st, f.key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withExpires(t testing.TB, trust []byte, at time.Time) []byte {
	doc, err := ParseTrust(trust)
	if err != nil {
		t.Fatal(err)
	}
	doc.Expires = formatTime(at)
	b, err := doc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withPurposes(t testing.TB, trust []byte, ps []Purpose) []byte {
	doc, err := ParseTrust(trust)
	if err != nil {
		t.Fatal(err)
	}
	doc.Keys[0].Purposes = ps
	b, err := doc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyDir(t testing.TB, dir string) string {
	t.Helper()
	out := t.TempDir()
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return out
}

func flipByte(t testing.TB, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendByte(t testing.TB, path string) {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte{'\n'})
	fh.Close()
}

func moveAndLink(t testing.TB, path, target string) {
	if err := os.Rename(path, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
