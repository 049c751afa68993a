package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// The fixture is one realistic, valid delivery: a repository policy with a
// report-producing check run at the base and at the candidate (with one
// declared skip), a GitHub-required context reconciled as success, one
// approval, a sandbox probe holding a non-integer number, and every artifact
// in a content-addressed directory.

var (
	fixNow      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fixIssuedAt = time.Date(2026, 3, 1, 11, 59, 0, 0, time.UTC)
	fixKeyStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fixHead     = strings.Repeat("c", 40)
	fixBase     = strings.Repeat("b", 40)
	fixMerge    = strings.Repeat("a", 40)
	fixLanding  = Landing{BaseRef: "master", Commit: strings.Repeat("d", 40), GitTree: strings.Repeat("e", 40), Merged: true, Behind: 2, Conflicts: []string{}}
	fixTree     = "sha256:" + strings.Repeat("7", 64)
	fixBaseTree = "sha256:" + strings.Repeat("6", 64)
	fixRepoPol  = "sha256:" + strings.Repeat("1", 64)
	fixOpPol    = "sha256:" + strings.Repeat("2", 64)
)

// seed returns a deterministic entropy source for key generation.
func seed(b byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{b}, 64)) }

type fixture struct {
	key          *SigningKey
	trust        []byte
	expectations []byte
	stmt         *DeliveryStatement
	bundle       []byte
	dir          string // artifacts directory
	artifacts    map[string][]byte
}

func newKey(t testing.TB, b byte, from time.Time, validFor time.Duration) (*SigningKey, []byte) {
	t.Helper()
	priv, trust, err := GenerateKey(seed(b), from, validFor)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseSigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k, trust
}

// put stores content in the fixture's artifacts and returns its record.
func (f *fixture) put(content []byte) (hexSum string, addr string) {
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	f.artifacts[ArtifactAddress(h)] = content
	return h, ArtifactAddress(h)
}

func (f *fixture) output(content []byte) record.Output {
	h, a := f.put(content)
	return record.Output{SHA256: h, Size: int64(len(content)), Artifact: a, ArtifactSize: int64(len(content))}
}

// fixRenames are the fixture's renames between base tip and landing: the
// JUnit classname calc/old (a path, as go-junit-report writes a package)
// moved with its directory.
func fixRenames() *record.Renames {
	return &record.Renames{From: fixBase, To: fixLanding.Commit,
		Files:      []record.FileRename{{From: "calc/old", To: "calc/mul", Similarity: 100}},
		GoPackages: []record.PackageMove{}}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{artifacts: map[string][]byte{}}
	f.key, f.trust = newKey(t, 1, fixKeyStart, 90*24*time.Hour)

	unitSpec := &policy.ReportSpec{Path: "reports/unit.xml", Format: "junit"}
	manifest := discovery.Manifest{
		Schema: discovery.Schema, Base: fixBase, Candidate: fixHead, ReadFrom: discovery.ReadFromBase,
		Policies: discovery.Policies{
			Repository: &discovery.PolicyRef{Path: ".runmill/checks.yaml", Commit: fixBase, Digest: fixRepoPol},
			Operator:   &discovery.PolicyRef{Path: "/etc/runmill/policy.yaml", Digest: fixOpPol},
		},
		Autonomy: "pr-only", FailOnSkippedCheck: true, ChangedPaths: 3,
		GitHub: discovery.GitHub{Consulted: true, Contexts: []string{"ci / build"}},
		Checks: []discovery.Check{
			{ID: "ci / build", Required: true, Sources: []discovery.Source{discovery.SourceGitHub}, Reasons: []string{"branch protection requires it"}},
			{ID: "unit", Command: "go test ./... 2>&1 | go-junit-report > reports/unit.xml", Report: unitSpec,
				DeclaredSkips: []policy.DeclaredSkip{{TestID: "net::TestStaging", Cause: "needs staging; ENG-88"}},
				Timeout:       policy.Duration(10 * time.Minute), Required: true, Sources: []discovery.Source{discovery.SourceRepository},
				DefinedBy: discovery.DefinedByRepository, Reasons: []string{"declared in .runmill/checks.yaml"},
				// Issue 24: a declaration the change makes (alice, not the
				// author, approved the head) and one it removes.
				ChangeDeclaredSkips: []policy.DeclaredSkip{{TestID: "calc::TestDiv", Cause: "division moves to the rational type; ENG-90"}},
				ChangeRemovedSkips:  []string{"net::TestLegacy"}},
		},
		ChangeDeclarations: policy.ChangeDeclarationsWithApproval,
	}
	baseReport := []byte(`<testsuite><testcase classname="calc" name="TestAdd"/><testcase classname="calc" name="TestDiv"/><testcase classname="calc/old" name="TestMul"/><testcase classname="net" name="TestStaging"/></testsuite>`)
	candReport := []byte(`<testsuite><testcase classname="calc" name="TestAdd"/><testcase classname="calc" name="TestSub"/><testcase classname="calc/mul" name="TestMul"/><testcase classname="net" name="TestStaging"><skipped/></testcase></testsuite>`)
	rep := func(content []byte, inv *record.Inventory) *record.ReportRecord {
		h, a := f.put(content)
		return &record.ReportRecord{Path: unitSpec.Path, Format: report.JUnit, SHA256: h, Size: int64(len(content)), Artifact: a, Inventory: inv}
	}
	// The candidate's stdout was cut by the capture cap: the artifact is a
	// prefix and the stream digest covers more.
	fullOut := bytes.Repeat([]byte("ok  calc 0.01s\n"), 100)
	cut := fullOut[:600]
	fullSum := sha256.Sum256(fullOut)
	_, cutAddr := f.put(cut)
	p := Delivery{
		RunmillVersion: "v0.1.0-test",
		IssuedAt:       formatTime(fixIssuedAt),
		RunID:          "run-20260301-0001",
		Candidate: Candidate{Repository: Repository{Name: "octo/shop", ID: 4242}, PullRequest: 17,
			Head: fixHead, Base: fixBase, MergeBase: fixMerge, Landing: fixLanding, Tree: fixTree, Author: "octocat"},
		Manifest: manifest,
		Renames:  fixRenames(),
		Checks: []record.CheckRun{
			{CheckID: "unit", Phase: record.Baseline, Command: manifest.Checks[1].Command, Commit: fixBase,
				TreeBefore: fixBaseTree, TreeAfter: fixBaseTree, Executor: record.Orchestrator, ExitCode: 0,
				Started: true, Status: record.Passed, Coverage: record.Proven, DurationMS: 1234,
				Stdout: f.output([]byte("ok  calc 0.01s\n")), Stderr: f.output(nil),
				Report: rep(baseReport, &record.Inventory{Passed: []report.TestID{"calc/old::TestMul", "calc::TestAdd", "calc::TestDiv", "net::TestStaging"}}),
				Notes:  []string{"baseline"}},
			{CheckID: "unit", Phase: record.Candidate, Command: manifest.Checks[1].Command, Commit: fixLanding.Commit,
				TreeBefore: fixTree, TreeAfter: fixTree, Executor: record.Orchestrator, ExitCode: 0,
				Started: true, Status: record.Passed, Coverage: record.Proven, DurationMS: 2345,
				Stdout: record.Output{SHA256: hex.EncodeToString(fullSum[:]), Size: int64(len(fullOut)), Artifact: cutAddr, ArtifactSize: int64(len(cut))},
				Stderr: f.output([]byte("warning: \"quoted\" \u2028 é 😀\n")),
				Report: rep(candReport, &record.Inventory{Passed: []report.TestID{"calc/mul::TestMul", "calc::TestAdd", "calc::TestSub"}, Skipped: []report.TestID{"net::TestStaging"}}),
				Moved:  []record.TestMove{{From: "calc/old::TestMul", To: "calc/mul::TestMul", By: record.MovedFile}}},
		},
		Remote:  []record.RemoteResult{{Context: "ci / build", Conclusion: record.Success}},
		Reviews: []Review{{Reviewer: "alice", State: "approved", Commit: fixHead}, {Reviewer: "bob", State: "commented", Commit: fixBase}},
		Sandbox: json.RawMessage(`{"checks":[{"name":"network.tcp-external","ok":true}],"cpu_quota":1.5,"runtime":{"containerd":"2.1.0","private":false}}`),
	}
	Decide(&p)
	if !p.Verdict.MergeReady {
		t.Fatalf("fixture verdict is not merge-ready: %+v", p.Verdict)
	}
	f.stmt = NewDeliveryStatement(p)
	var err error
	f.bundle, _, err = Sign(f.stmt, f.key)
	if err != nil {
		t.Fatal(err)
	}
	f.expectations, err = Expectations{
		Repository: Repository{Name: "octo/shop", ID: 4242}, PullRequest: 17,
		Head: fixHead, Base: fixBase, MergeBase: fixMerge, Landing: fixLanding, CandidateTree: fixTree,
		Policy:             PolicyExpectation{ReadFrom: discovery.ReadFromBase, RepositoryDigest: fixRepoPol, OperatorDigest: fixOpPol},
		RequiredChecks:     []string{"ci / build", "unit"},
		Reviews:            ReviewExpectation{RequiredApprovals: 1, Approvals: []Approval{{Reviewer: "alice", Commit: fixHead}}},
		Author:             "octocat",
		Renames:            fixRenames(),
		ChangeDeclarations: []ChangeDeclarationExpectation{{CheckID: "unit", Added: []string{"calc::TestDiv"}, Removed: []string{"net::TestLegacy"}}},
	}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeArtifacts writes the fixture's artifacts below a new directory.
func (f *fixture) writeArtifacts(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	for addr, content := range f.artifacts {
		if err := os.WriteFile(filepath.Join(dir, addr), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.dir = dir
	return dir
}

func (f *fixture) verify(opts VerifyOptions) Result {
	if opts.Now.IsZero() {
		opts.Now = fixNow
	}
	return Verify(f.bundle, f.trust, f.expectations, opts)
}

// resign signs a statement payload as given, without Sign's validation.
func (f *fixture) resign(t testing.TB, payload []byte) []byte {
	t.Helper()
	b, err := signPayload(payload, f.key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// payload returns the fixture bundle's payload bytes.
func payloadOf(t testing.TB, bundle []byte) []byte {
	t.Helper()
	pb, err := parseBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return pb.payload
}
