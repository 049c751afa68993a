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
// time of the fan-out.
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
	keyPEM, trust, err := evidence.Keygen(24 * time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := evidence.ParseSigningKey(keyPEM)
	// The shards' state outlives their sub-benchmarks: the merge reads
	// their bundles and artifacts.
	shardState := b.TempDir()
	run := func(b *testing.B, shard *evidence.ShardSpec) *engine.Run {
		state := b.TempDir()
		if shard != nil {
			state = shardState
		}
		o := engine.VerifyOptions{
			Discover: engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand},
			StateDir: state, ContainerdAddress: containerdAddress, Version: "bench",
			Parallel: 2, SigningKey: key, Shard: shard,
		}
		res, err := engine.Verify(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	b.Run("unsharded", func(b *testing.B) {
		for b.Loop() {
			if !run(b, nil).MergeReady() {
				b.Fatal("not merge-ready")
			}
		}
	})
	bundles := make([]engine.ShardBundle, 3)
	var artifacts []string
	for k := 1; k <= 3; k++ {
		b.Run(fmt.Sprintf("shard-%d-of-3", k), func(b *testing.B) {
			var last *engine.Run
			for b.Loop() {
				last = run(b, &evidence.ShardSpec{Index: k, Count: 3})
			}
			body, err := os.ReadFile(last.BundlePath)
			if err != nil {
				b.Fatal(err)
			}
			bundles[k-1] = engine.ShardBundle{Name: last.BundlePath, Bytes: body}
			artifacts = append(artifacts, filepath.Join(last.Dir, "artifacts"))
		})
	}
	b.Run("merge", func(b *testing.B) {
		if bundles[2].Bytes == nil {
			b.Skip("the shard benchmarks did not run (use -bench 'Sharded')")
		}
		for b.Loop() {
			m, err := engine.Merge(context.Background(), engine.MergeOptions{Shards: bundles, Trust: trust,
				StateDir: b.TempDir(), SigningKey: key, Version: "bench", ArtifactDirs: artifacts})
			if err != nil {
				b.Fatal(err)
			}
			if !m.MergeReady() {
				b.Fatal("merged verdict not merge-ready")
			}
		}
	})
}
