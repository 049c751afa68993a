package evidence

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

func manifestOf(ids ...string) *discovery.Manifest {
	m := &discovery.Manifest{}
	for _, id := range ids {
		m.Checks = append(m.Checks, discovery.Check{ID: id, Command: "true", Required: true})
	}
	// A remote check is not runnable: no shard gets it.
	m.Checks = append(m.Checks, discovery.Check{ID: "ci / build", Required: true, Sources: []discovery.Source{discovery.SourceGitHub}})
	return m
}

func TestAssignShards(t *testing.T) {
	six := manifestOf("f", "e", "d", "c", "b", "a")
	for _, tc := range []struct {
		name      string
		m         *discovery.Manifest
		n         int
		durations map[string]int64
		want      map[string]int
	}{
		{"round-robin in id order without durations", six, 3, nil,
			map[string]int{"a": 1, "b": 2, "c": 3, "d": 1, "e": 2, "f": 3}},
		{"one shard takes everything", six, 1, nil,
			map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}},
		{"more shards than checks leaves shards empty", manifestOf("a", "b"), 4, nil, map[string]int{"a": 1, "b": 2}},
		{"longest first to the least-loaded shard", manifestOf("a", "b", "c", "d"), 2, map[string]int64{"a": 10, "b": 9, "c": 1, "d": 1},
			map[string]int{"a": 1, "b": 2, "c": 2, "d": 1}},
		{"an unknown duration weighs the mean of the known", manifestOf("a", "b", "c"), 2, map[string]int64{"a": 10, "b": 2},
			map[string]int{"a": 1, "c": 2, "b": 2}},
		{"a check listed twice is assigned once", manifestOf("a", "a", "b"), 2, nil, map[string]int{"a": 1, "b": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AssignShards(tc.m, tc.n, tc.durations)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("AssignShards = %v, want %v", got, tc.want)
			}
			// The same inputs give the same answer, whatever the manifest
			// order: every shard computes it on its own.
			rev := *tc.m
			rev.Checks = slices.Clone(tc.m.Checks)
			slices.Reverse(rev.Checks)
			if again := AssignShards(&rev, tc.n, tc.durations); !maps.Equal(again, got) {
				t.Fatalf("manifest order changed the assignment: %v vs %v", again, got)
			}
		})
	}
}

func TestParseShardSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ShardSpec
		ok   bool
	}{
		{"1/3", ShardSpec{Index: 1, Count: 3}, true}, {"3/3", ShardSpec{Index: 3, Count: 3}, true}, {"1/1", ShardSpec{Index: 1, Count: 1}, true},
		{"256/256", ShardSpec{Index: 256, Count: 256}, true},
		{"0/3", ShardSpec{}, false}, {"4/3", ShardSpec{}, false}, {"1/0", ShardSpec{}, false}, {"1/257", ShardSpec{}, false},
		{"01/3", ShardSpec{}, false}, {"+1/3", ShardSpec{}, false}, {"1/3 ", ShardSpec{}, false}, {"1/3/3", ShardSpec{}, false},
		{"a/b", ShardSpec{}, false}, {"", ShardSpec{}, false}, {"-1/3", ShardSpec{}, false}, {"3", ShardSpec{}, false},
	} {
		got, err := ParseShardSpec(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseShardSpec(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && rmerr.CodeOf(err) != rmerr.Usage {
			t.Errorf("ParseShardSpec(%q): code %s, want %s", tc.in, rmerr.CodeOf(err), rmerr.Usage)
		}
	}
}

func FuzzParseShardSpec(f *testing.F) {
	for _, s := range []string{"1/3", "0/0", "256/256", "01/3", "1/3\n", "9999999999999999999/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseShardSpec(s)
		if err != nil {
			return
		}
		if sp.Index < 1 || sp.Index > sp.Count || sp.Count > MaxShards || fmt.Sprintf("%d/%d", sp.Index, sp.Count) != s {
			t.Fatalf("ParseShardSpec(%q) accepted %+v", s, sp)
		}
	})
}

// shardsOf splits the fixture's delivery into n signed shards the way the
// engine would: AssignShards, and each shard's runs of its checks.
func shardsOf(t testing.TB, f *fixture, n int) [][]byte {
	t.Helper()
	d := f.stmt.Predicate
	assign := AssignShards(&d.Manifest, n, nil)
	var out [][]byte
	for k := 1; k <= n; k++ {
		p := Shard{RunmillVersion: d.RunmillVersion, IssuedAt: d.IssuedAt, RunID: fmt.Sprintf("%s-shard%d", d.RunID, k),
			Index: k, Count: n, VerificationID: "octo-org/shop/actions/runs/4242", ManifestDigest: ManifestDigest(&d.Manifest), Candidate: d.Candidate, Manifest: d.Manifest,
			Reviews: d.Reviews, Sandbox: d.Sandbox, Renames: d.Renames}
		for id, s := range assign {
			if s == k {
				p.Assigned = append(p.Assigned, id)
			}
		}
		slices.Sort(p.Assigned)
		for _, r := range d.Checks {
			if assign[r.CheckID] == k {
				p.Checks = append(p.Checks, r)
			}
		}
		b, _, err := Sign(NewShardStatement(p), f.key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func mergeBundles(t *testing.T, f *fixture, trust []byte, bundles [][]byte) (*Delivery, error) {
	t.Helper()
	var vs []*VerifiedShard
	for _, b := range bundles {
		v, err := VerifyShard(b, trust, fixNow)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return MergeShards(vs, MergeOptions{RunmillVersion: "test", RunID: "merged"})
}

func TestMergeShards(t *testing.T) {
	f := newFixture(t)
	shards := shardsOf(t, f, 2)
	t.Run("the merge recomputes the unsharded verdict", func(t *testing.T) {
		d, err := mergeBundles(t, f, f.trust, shards)
		if err != nil {
			t.Fatal(err)
		}
		d.Remote = f.stmt.Predicate.Remote // what the merge's reconciliation would record
		got := Decide(d)
		if want := f.stmt.Predicate.Verdict; !got.MergeReady || fmt.Sprint(got.Reasons()) != fmt.Sprint(want.Reasons()) {
			t.Fatalf("merged verdict %+v, unsharded %+v", got, want)
		}
		if !sameRenames(d.Renames, f.stmt.Predicate.Renames) || d.Candidate.Author != "octocat" {
			t.Fatalf("the merge lost the renames %+v or the author %q", d.Renames, d.Candidate.Author)
		}
		if len(d.Shards) != 2 || d.Shards[0].Index != 1 || d.Shards[1].BundleSize != int64(len(shards[1])) {
			t.Fatalf("shard refs %+v", d.Shards)
		}
		if fl := checkShardRefs(d.Shards); fl != nil {
			t.Fatalf("the merge's own shard list fails its grammar: %s", fl.msg)
		}
		if fl := checkShardRefs([]ShardRef{d.Shards[1], d.Shards[0]}); fl == nil {
			t.Fatal("descending shard indices pass the grammar")
		}
		refs, fl := artifactRefs(d)
		if fl != nil || !slices.ContainsFunc(refs, func(r artifactRef) bool { return r.addr == d.Shards[1].Bundle }) {
			t.Fatalf("the shard bundles are not artifacts of the merged statement: %v %v", refs, fl)
		}
	})
	t.Run("a missing shard is named and is not merge-ready", func(t *testing.T) {
		d, err := mergeBundles(t, f, f.trust, shards[1:])
		if err != nil {
			t.Fatal(err)
		}
		d.Remote = f.stmt.Predicate.Remote
		v := Decide(d)
		if v.MergeReady || !slices.ContainsFunc(v.Reasons(), func(x record.Finding) bool {
			return x.Rule == RuleShardMissing && strings.Contains(x.Message, "shard 1 of 2") && strings.Contains(x.Message, "unit")
		}) {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("a failed shard job is not merge-ready", func(t *testing.T) {
		var vs []*VerifiedShard
		for _, b := range shards {
			v, err := VerifyShard(b, f.trust, fixNow)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		d, err := MergeShards(vs, MergeOptions{RunmillVersion: "test", RunID: "m", JobResults: map[string]string{"shard": "failure"}})
		if err != nil {
			t.Fatal(err)
		}
		d.Remote = f.stmt.Predicate.Remote
		if v := Decide(d); v.MergeReady {
			t.Fatal("merge-ready after a failed shard job")
		}
	})

	resigned := func(mod func(*Shard)) []byte {
		var st ShardStatement
		if err := decodeStrict(payloadOf(t, shards[0]), &st); err != nil {
			t.Fatal(err)
		}
		mod(&st.Predicate)
		payload, err := Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		return f.resign(t, payload)
	}
	terminalOnly, terminalTrust := newKey(t, 7, fixKeyStart, 90*24*time.Hour)
	terminalTrust = []byte(strings.Replace(string(terminalTrust), `"delivery",`, ``, 1))
	terminalSigned := func() []byte {
		var st ShardStatement
		if err := decodeStrict(payloadOf(t, shards[0]), &st); err != nil {
			t.Fatal(err)
		}
		b, _, err := Sign(&st, terminalOnly)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()
	for _, tc := range []struct {
		name    string
		bundles [][]byte
		trust   []byte
		code    rmerr.Code
		substr  string
	}{
		{"no shard", nil, f.trust, rmerr.EvidenceShard, "no shard"},
		{"a shard twice", [][]byte{shards[0], shards[1], shards[0]}, f.trust, rmerr.EvidenceShard, "given twice"},
		{"another shard count", [][]byte{shards[0], resigned(func(p *Shard) { p.Index, p.Count = 2, 3; p.Assigned, p.Checks = []string{}, []record.CheckRun{} })},
			f.trust, rmerr.EvidenceShard, "3-shard"},
		{"a check in two shards", [][]byte{shards[0], resigned(func(p *Shard) { p.Index = 2 })}, f.trust, rmerr.EvidenceShard, "and to shard 2/2"},
		{"the manifest digest is not its manifest's", [][]byte{resigned(func(p *Shard) { p.Manifest.ChangedPaths++ })},
			f.trust, rmerr.EvidenceStatement, "manifest_digest"},
		{"another manifest", [][]byte{shards[0], resigned(func(p *Shard) {
			p.Index, p.Assigned, p.Checks = 2, []string{}, []record.CheckRun{}
			p.Manifest.ChangedPaths++
			p.ManifestDigest = ManifestDigest(&p.Manifest)
		})}, f.trust, rmerr.EvidenceShard, "Discovery differed"},
		{"another candidate tree", [][]byte{shards[0], resigned(func(p *Shard) {
			p.Index, p.Assigned, p.Checks = 2, []string{}, []record.CheckRun{}
			p.Candidate.Tree = "sha256:" + strings.Repeat("e", 64)
		})}, f.trust, rmerr.EvidenceShard, "tree"},
		{"other renames", [][]byte{shards[0], resigned(func(p *Shard) {
			p.Index, p.Assigned, p.Checks = 2, []string{}, []record.CheckRun{}
			p.Renames = nil
		})}, f.trust, rmerr.EvidenceShard, "different renames"},
		{"a shard of another run of the same candidate", [][]byte{shards[0], resigned(func(p *Shard) {
			p.Index, p.Assigned, p.Checks = 2, []string{}, []record.CheckRun{}
			p.VerificationID = "octo-org/shop/actions/runs/4243"
		})}, f.trust, rmerr.EvidenceShard, `shard 2/2 is of verification "octo-org/shop/actions/runs/4243", shard 1/2 of verification "octo-org/shop/actions/runs/4242"`},
		{"no verification id", [][]byte{resigned(func(p *Shard) { p.VerificationID = "" })}, f.trust, rmerr.EvidenceStatement, "predicate.verification_id"},
		{"a verification id with a control character", [][]byte{resigned(func(p *Shard) { p.VerificationID = "run\x1b[2J" })}, f.trust, rmerr.EvidenceStatement, "predicate.verification_id"},
		{"a run of a check not assigned", [][]byte{resigned(func(p *Shard) { p.Assigned = []string{} })}, f.trust, rmerr.EvidenceStatement, "not among the checks assigned"},
		{"unsorted assignment", [][]byte{resigned(func(p *Shard) { p.Assigned = []string{"unit", "unit"} })}, f.trust, rmerr.EvidenceStatement, "sorted"},
		{"index out of range", [][]byte{resigned(func(p *Shard) { p.Index = 3 })}, f.trust, rmerr.EvidenceStatement, "index"},
		{"an untrusted key", [][]byte{shards[0]}, terminalTrust, rmerr.EvidenceSignature, "no trusted key"},
		{"a key not trusted for delivery", [][]byte{terminalSigned}, terminalTrust, rmerr.EvidenceKeyWindow, "not trusted for delivery"},
		{"a delivery bundle", [][]byte{f.bundle}, f.trust, rmerr.EvidenceStatement, "not a shard statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mergeBundles(t, f, tc.trust, tc.bundles)
			if err == nil || rmerr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.substr) {
				t.Fatalf("got %v (code %s); want %s mentioning %q", err, rmerr.CodeOf(err), tc.code, tc.substr)
			}
		})
	}
	t.Run("expired issued_at", func(t *testing.T) {
		if _, err := VerifyShard(shards[0], f.trust, fixKeyStart.Add(-time.Hour)); rmerr.CodeOf(err) != rmerr.EvidenceKeyWindow {
			t.Fatalf("a shard issued after the verifier's now: %v", err)
		}
	})
}

func FuzzVerifyShard(f *testing.F) {
	fx := newFixture(f)
	for _, b := range shardsOf(f, fx, 2) {
		f.Add(b)
	}
	f.Add(fx.bundle)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := VerifyShard(b, fx.trust, fixNow)
		if err != nil {
			return
		}
		// Whatever verified was signed by the fixture's key and names a
		// shard of a verification.
		if v.KeyID != fx.key.KeyID() || v.Statement.PredicateType != ShardPredicateType {
			t.Fatalf("verified %+v", v)
		}
	})
}
