package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
)

// BenchmarkSharded is docs/benchmarks.md § Sharding: six report checks of
// equal cost (each run sleeps RUNMILL_BENCH_CHECK_SECONDS, default 3, then
// writes its TAP report), verified whole and as three shards, each with
// --parallel 2 (one 2-core runner per job, as on GitHub), and the merge of
// the three shard bundles. A shard is timed on its own: on GitHub the shards
// are separate jobs on separate runners, so the slowest shard is the wall
// time of the fan-out. Run it with -benchtime 1x -count N: each iteration
// is one round of all five, and the metrics are per round.
// benchRound counts rounds across -count repetitions (each is a new call).
var benchRound int

func BenchmarkSharded(b *testing.B) {
	if containerdAddress == "" {
		b.Skip(noSandbox)
	}
	secs := os.Getenv("RUNMILL_BENCH_CHECK_SECONDS")
	if secs == "" {
		secs = "3"
	}
	var pol strings.Builder
	pol.WriteString("checks:\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&pol, "  - id: check%d\n    run: sleep %s && sh tests/run.sh > reports/c%d.tap\n    report: {path: reports/c%d.tap, format: tap}\n", i, secs, i, i)
	}
	r, base := shopRepo(b, pol.String())
	r.Checkout("pr", true)
	r.Write("tests/discount.t", "x\n")
	cand := r.Commit("pr")
	_, key, trust := newTestKey(b)
	run := func(b *testing.B, shard *evidence.ShardSpec) (*engine.Run, time.Duration) {
		state, err := os.MkdirTemp(b.TempDir(), "state-")
		if err != nil {
			b.Fatal(err)
		}
		o := engine.VerifyOptions{
			Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand},
			StateDir: state, ContainerdAddress: containerdAddress, Version: "bench",
			Parallel: 2, SigningKey: key, Shard: shard,
		}
		start := time.Now()
		res, err := engine.Verify(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		return res, time.Since(start)
	}
	// One round is the unsharded verification, the three shards and the
	// merge, measured back to back so that the ratio compares runs under
	// the same load; odd rounds run the shards first, so a load trend
	// favours neither side.
	for b.Loop() {
		benchRound++
		round := benchRound
		var whole, slowest time.Duration
		var bundles []engine.ShardBundle
		var artifacts []string
		unsharded := func() {
			res, d := run(b, nil)
			if !res.MergeReady() {
				b.Fatal("not merge-ready")
			}
			whole = d
		}
		shards := func() {
			for k := 1; k <= 3; k++ {
				res, d := run(b, &evidence.ShardSpec{Index: k, Count: 3, VerificationID: "bench"})
				slowest = max(slowest, d)
				body, err := os.ReadFile(res.BundlePath)
				if err != nil {
					b.Fatal(err)
				}
				bundles = append(bundles, engine.ShardBundle{Name: res.BundlePath, Bytes: body})
				artifacts = append(artifacts, filepath.Join(res.Dir, "artifacts"))
			}
		}
		if round%2 == 1 {
			shards()
			unsharded()
		} else {
			unsharded()
			shards()
		}
		start := time.Now()
		m, err := engine.Merge(context.Background(), engine.MergeOptions{Shards: bundles, Trust: trust,
			StateDir: b.TempDir(), SigningKey: key, Version: "bench", ArtifactDirs: artifacts})
		merge := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if !m.MergeReady() {
			b.Fatal("merged verdict not merge-ready")
		}
		b.ReportMetric(whole.Seconds(), "unsharded-s")
		b.ReportMetric(slowest.Seconds(), "slowest-shard-s")
		b.ReportMetric(slowest.Seconds()/whole.Seconds(), "slowest/unsharded")
		b.ReportMetric(float64(merge.Microseconds())/1000, "merge-ms")
	}
}
