package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// bigFixture is the speed case: 10 000 check records (5 000
// report-producing checks, each run at the base and at the candidate) and
// 1 M test ids (100 per record).
func bigFixture(tb testing.TB, checks, idsPerRun int) *fixture {
	tb.Helper()
	f := newFixture(tb)
	p := f.stmt.Predicate
	p.Manifest.Checks = nil
	p.Checks = nil
	p.Remote = []record.RemoteResult{}
	out := f.output([]byte("ok\n"))
	for c := 0; c < checks; c++ {
		id := fmt.Sprintf("check-%05d", c)
		spec := &policy.ReportSpec{Path: "reports/" + id + ".xml", Format: "junit"}
		cmd := "go test -json ./svc" + id + "/... > " + spec.Path
		p.Manifest.Checks = append(p.Manifest.Checks, discovery.Check{ID: id, Command: cmd, Report: spec, Required: true,
			Sources: []discovery.Source{discovery.SourceRepository}, DefinedBy: discovery.DefinedByRepository,
			Reasons: []string{"declared in .runmill/checks.yaml"}})
		ids := make([]report.TestID, idsPerRun)
		for i := range ids {
			ids[i] = report.TestID(fmt.Sprintf("example.com/shop/svc%05d/handlers::TestHandler%06d", c, i))
		}
		for _, ph := range []record.Phase{record.Baseline, record.Candidate} {
			commit, tree := fixBase, fixBaseTree
			if ph == record.Candidate {
				commit, tree = fixLanding.Commit, fixTree
			}
			sum := sha256.Sum256([]byte(id + string(ph)))
			h := hex.EncodeToString(sum[:])
			p.Checks = append(p.Checks, record.CheckRun{CheckID: id, Phase: ph, Command: cmd, Commit: commit,
				TreeBefore: tree, TreeAfter: tree, Executor: record.Orchestrator, Started: true, Status: record.Passed,
				Coverage: record.Proven, DurationMS: 1500, Stdout: out, Stderr: out,
				Report: &record.ReportRecord{Path: spec.Path, Format: report.JUnit, SHA256: h, Size: 4096,
					Artifact: ArtifactAddress(h), Inventory: &record.Inventory{Passed: ids}}})
		}
	}
	p.Manifest.GitHub = discovery.GitHub{Consulted: true, Contexts: []string{}}
	p.Reviews = f.stmt.Predicate.Reviews
	Decide(&p)
	f.stmt = NewDeliveryStatement(p)
	var err error
	if f.bundle, _, err = Sign(f.stmt, f.key); err != nil {
		tb.Fatal(err)
	}
	exp, err := ParseExpectations(f.expectations)
	if err != nil {
		tb.Fatal(err)
	}
	exp.RequiredChecks, exp.ChangeDeclarations = nil, nil
	for _, c := range p.Manifest.Checks {
		exp.RequiredChecks = append(exp.RequiredChecks, c.ID)
	}
	if f.expectations, err = exp.Encode(); err != nil {
		tb.Fatal(err)
	}
	return f
}

// BenchmarkVerify10kChecks1MIDs measures Verify on the speed case
// (target: under 2 s).
func BenchmarkVerify10kChecks1MIDs(b *testing.B) {
	f := bigFixture(b, 5000, 100)
	b.Logf("bundle %d bytes, payload %d bytes", len(f.bundle), len(payloadOf(b, f.bundle)))
	b.SetBytes(int64(len(f.bundle)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := f.verify(VerifyOptions{}); !res.Valid {
			b.Fatalf("%s: %s", res.Reason, res.Message)
		}
	}
}

// TestWriteSpeedFixture writes both speed cases for the CLI measurements in
// docs/benchmarks.md (DIR/big: 10 000 runs and 1 M ids; DIR/artifacts: the
// 1 GiB store under DIR/artifacts/cas):
//
//	RUNMILL_SPEED_DIR=/tmp/speed go test ./pkg/evidence -run TestWriteSpeedFixture
func TestWriteSpeedFixture(t *testing.T) {
	dir := os.Getenv("RUNMILL_SPEED_DIR")
	if dir == "" {
		t.Skip("set RUNMILL_SPEED_DIR to write the speed fixture")
	}
	big := bigFixture(t, 5000, 100)
	art, _, _ := artifactFixture(t, filepath.Join(dir, "artifacts"))
	for sub, f := range map[string]*fixture{"big": big, "artifacts": art} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"evidence.json": f.bundle, "trust.json": f.trust, "expectations.json": f.expectations} {
			if err := os.WriteFile(filepath.Join(dir, sub, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("verify with --now %s", fixNow.Format(time.RFC3339))
}

// artifactSizes is the 1 GiB of the artifact speed case, a mix of a few
// large reports and many small outputs: 2×256 MiB, 8×32 MiB, 64×2 MiB and
// 1 024×128 KiB (1 098 files).
var artifactSizes = []struct {
	n    int
	size int64
}{{2, 256 << 20}, {8, 32 << 20}, {64, 2 << 20}, {1024, 128 << 10}}

// artifactFixture writes the 1 GiB case below dir (dir/cas/sha256/<hex>)
// and returns a fixture whose statement references every file, one per
// check run's stdout.
func artifactFixture(tb testing.TB, dir string) (*fixture, []string, int64) {
	tb.Helper()
	f := newFixture(tb)
	cas := filepath.Join(dir, "cas", "sha256")
	if err := os.MkdirAll(cas, 0o755); err != nil {
		tb.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{1})
	var outs []record.Output
	var paths []string
	var total int64
	for _, g := range artifactSizes {
		for i := 0; i < g.n; i++ {
			b := make([]byte, g.size)
			rng.Read(b)
			sum := sha256.Sum256(b)
			h := hex.EncodeToString(sum[:])
			p := filepath.Join(cas, h)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				tb.Fatal(err)
			}
			paths = append(paths, p)
			total += g.size
			outs = append(outs, record.Output{SHA256: h, Size: g.size, Artifact: ArtifactAddress(h), ArtifactSize: g.size})
		}
	}
	for addr, b := range f.artifacts { // the fixture's own, small ones
		if err := os.WriteFile(filepath.Join(dir, "cas", addr), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	p := f.stmt.Predicate
	for i, o := range outs {
		r := p.Checks[1]
		if i%2 == 0 {
			r = p.Checks[0]
		}
		r.Stdout = o
		p.Checks = append(p.Checks, r)
	}
	Decide(&p)
	f.stmt = NewDeliveryStatement(p)
	var err error
	if f.bundle, _, err = Sign(f.stmt, f.key); err != nil {
		tb.Fatal(err)
	}
	f.dir = filepath.Join(dir, "cas")
	return f, paths, total
}

// BenchmarkArtifacts1GiB re-hashes the 1 GiB case with Verify and with
// sha256sum, side by side in one run (target: runmill ≥ 0.9× sha256sum):
//
//	go test ./pkg/evidence -run XXX -bench Artifacts1GiB -benchtime 3x -count 3
func BenchmarkArtifacts1GiB(b *testing.B) {
	sum, err := exec.LookPath("sha256sum")
	if err != nil {
		b.Skip("sha256sum is not installed")
	}
	f, paths, total := artifactFixture(b, b.TempDir())
	b.Run("sha256sum", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			if out, err := exec.Command(sum, append([]string{"-b"}, paths...)...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
	b.Run("runmill", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			if res := f.verify(VerifyOptions{ArtifactsDir: f.dir}); !res.Valid {
				b.Fatalf("%s: %s", res.Reason, res.Message)
			}
		}
	})
}

// maxChecks and maxIDs size issue 13's largest case: 3 400 report-producing
// checks run at base and candidate, 1 000 test ids per run (6.8 M ids), a
// bundle just under DefaultLimits.MaxBundleBytes.
const maxChecks, maxIDs = 3400, 1000

// maxFixture is the largest accepted bundle and the same bundle with a
// signature that does not verify (another message's, so the envelope is
// byte for byte as valid as the signed one).
func maxFixture(tb testing.TB) (f *fixture, badSig []byte) {
	f = bigFixture(tb, maxChecks, maxIDs)
	if int64(len(f.bundle)) > DefaultLimits.MaxBundleBytes {
		tb.Fatalf("the bundle has %d bytes, over the %d cap", len(f.bundle), DefaultLimits.MaxBundleBytes)
	}
	marker := []byte(`"sig": "`)
	i := bytes.Index(f.bundle, marker)
	if i < 0 {
		tb.Fatal("no signature in the bundle")
	}
	i += len(marker)
	other := base64.StdEncoding.EncodeToString(f.key.sign([]byte("another message")))
	badSig = append([]byte(nil), f.bundle...)
	copy(badSig[i:i+len(other)], other)
	return f, badSig
}

// BenchmarkVerifyMaxBundle measures Verify on the largest accepted bundle and
// on a bad-signature bundle of the same size, reporting the heap bytes each
// verification allocated, absolutely and per bundle byte (issue 13, S4):
//
//	go test ./pkg/evidence -run XXX -bench VerifyMaxBundle -benchtime 3x -timeout 30m
func BenchmarkVerifyMaxBundle(b *testing.B) {
	f, badSig := maxFixture(b)
	b.Logf("bundle %d bytes, payload %d bytes", len(f.bundle), len(payloadOf(b, f.bundle)))
	for _, c := range []struct {
		name   string
		bundle []byte
		valid  bool
	}{{"accepted", f.bundle, true}, {"bad-signature", badSig, false}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.bundle)))
			var total uint64
			for i := 0; i < b.N; i++ {
				var res Result
				total += allocated(func() { res = Verify(c.bundle, f.trust, f.expectations, VerifyOptions{Now: fixNow}) })
				if res.Valid != c.valid || (!c.valid && res.Reason != ReasonSignature) {
					b.Fatalf("valid=%v %s: %s", res.Valid, res.Reason, res.Message)
				}
			}
			b.ReportMetric(float64(total)/float64(b.N), "alloc-bytes/op")
			b.ReportMetric(float64(total)/float64(b.N)/float64(len(c.bundle)), "alloc/bundle-byte")
		})
	}
}

// TestWriteMaxFixture writes issue 13's largest case for the CLI
// measurements in docs/benchmarks.md: DIR/evidence.json (accepted),
// DIR/bad-signature.json, DIR/trust.json, DIR/expectations.json:
//
//	RUNMILL_MAX_DIR=/tmp/max go test ./pkg/evidence -run TestWriteMaxFixture -timeout 30m
func TestWriteMaxFixture(t *testing.T) {
	dir := os.Getenv("RUNMILL_MAX_DIR")
	if dir == "" {
		t.Skip("set RUNMILL_MAX_DIR to write the largest bundle")
	}
	f, badSig := maxFixture(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"evidence.json": f.bundle, "bad-signature.json": badSig, "trust.json": f.trust, "expectations.json": f.expectations} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("bundle %d bytes; verify with --now %s", len(f.bundle), fixNow.Format(time.RFC3339))
}
