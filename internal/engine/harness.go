package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/treehash"
)

// harnesses computes each check run's harness (issue 19: the scripts and
// runner configs a check runs are read from the base, as its policy is) and
// caches what every run of one commit shares: the commit's file list and
// the hash of its unaltered tree.
type harnesses struct {
	repo      *git.Repo
	checkouts *checkout.Manager
	m         *discovery.Manifest
	// ledger, when set, learns of the checkouts commitTree makes, so the
	// terminal statement's cleanup observation looks for them too.
	ledger *ledger

	mu    sync.Mutex
	files map[string]*onceValue[harness.Tree]
	trees map[string]*onceValue[string]
	// found is each command's discovered harness over the base (the same
	// for every run of every check with that command).
	found map[string]*onceValue[harness.Discovery]
	// resolved is each check's record at each commit: a check's baseline is
	// resolved for its reuse key and again for its run, and a changed
	// harness's candidate-harness run resolves the candidate's again
	// (a pass over both trees: 190–250 ms at 500 000 files).
	resolved map[string]*onceValue[*harness.Record]
}

type onceValue[T any] struct {
	once sync.Once
	v    T
	err  error
}

func newHarnesses(repo *git.Repo, co *checkout.Manager, m *discovery.Manifest) *harnesses {
	return &harnesses{repo: repo, checkouts: co, m: m,
		files: map[string]*onceValue[harness.Tree]{}, trees: map[string]*onceValue[string]{},
		found: map[string]*onceValue[harness.Discovery]{}, resolved: map[string]*onceValue[*harness.Record]{}}
}

func cached[T any](h *harnesses, mp map[string]*onceValue[T], key string, f func() (T, error)) (T, error) {
	h.mu.Lock()
	o, ok := mp[key]
	if !ok {
		o = &onceValue[T]{}
		mp[key] = o
	}
	h.mu.Unlock()
	o.once.Do(func() { o.v, o.err = f() })
	return o.v, o.err
}

func (h *harnesses) tree(ctx context.Context, commit string) (harness.Tree, error) {
	return cached(h, h.files, commit, func() (harness.Tree, error) { return h.repo.Files(ctx, commit) })
}

// record is the harness of a run of c at commit, before its checkout
// exists (its Overlay is what that checkout lays over the commit).
func (h *harnesses) record(ctx context.Context, c discovery.Check, commit string) (*harness.Record, error) {
	hr, err := cached(h, h.resolved, c.ID+"\x00"+commit, func() (*harness.Record, error) {
		return harnessRecord(ctx, h.tree, h.discover, h.m, c, commit)
	})
	if err != nil {
		return nil, err
	}
	// Each run's copy: finish sets the run's CommitTree in it.
	own := *hr
	own.Files, own.Unpinned = slices.Clone(hr.Files), slices.Clone(hr.Unpinned)
	return &own, nil
}

// maxHarnessBlob bounds a base file Discover reads (a script, a makefile, a
// package.json); it skips what is larger than it reads.
const maxHarnessBlob = 64 << 20

// discover is command's harness as pkg/harness.Discover resolves it over
// the base, once per command.
func (h *harnesses) discover(ctx context.Context, command string) (harness.Discovery, error) {
	return cached(h, h.found, command, func() (harness.Discovery, error) {
		base, err := h.tree(ctx, h.m.Base)
		if err != nil {
			return harness.Discovery{}, err
		}
		return harness.Discover(command, base, func(blob string) ([]byte, error) {
			b, err := h.repo.ReadBlobs(ctx, []string{blob}, maxHarnessBlob)
			if err != nil {
				return nil, err
			}
			return b[0], nil
		})
	})
}

// harnessRecord is the one derivation of a run's harness, shared by the
// engine and Expect: the base is the policy's base, the command's harness
// is discovered over it, and nothing is pinned when the check's repository
// policy is new in the change.
func harnessRecord(ctx context.Context, tree func(context.Context, string) (harness.Tree, error),
	discover func(context.Context, string) (harness.Discovery, error), m *discovery.Manifest, c discovery.Check, commit string) (*harness.Record, error) {
	base, err := tree(ctx, m.Base)
	if err != nil {
		return nil, err
	}
	at, err := tree(ctx, commit)
	if err != nil {
		return nil, err
	}
	d, err := discover(ctx, c.Command)
	if err != nil {
		return nil, fmt.Errorf("check %s: discovering its harness: %w", c.ID, err)
	}
	rec, err := harness.Resolve(ctx, d, c.Harness, base, at, !evidence.Requirement(m, c).NewInChange, m.Base)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", c.ID, err)
	}
	if !rec.Pinned {
		rec.Base = ""
	}
	return rec, nil
}

// commitTree is the hash of commit's own tree, for a run whose tree as run
// differs from it: measured once per commit, in a checkout of its own.
func (h *harnesses) commitTree(ctx context.Context, commit string) (string, error) {
	return h.treeOf(ctx, commit, nil)
}

// treeOf is the hash of a fresh checkout of commit with pins laid over it,
// measured once per commit and pins in a checkout of its own: the commit's
// own tree (no pins), or the tree a reused run must have run (reuse.go).
func (h *harnesses) treeOf(ctx context.Context, commit string, pins []harness.Pin) (string, error) {
	return cached(h, h.trees, pinKey(commit, pins), func() (string, error) {
		co, err := h.checkouts.CreatePinned(ctx, commit, pins)
		if err != nil {
			return "", err
		}
		defer co.Remove()
		if h.ledger != nil {
			h.ledger.addRun(ledgerRun{checkoutDir: co.Dir, mounted: co.Mounted()})
		}
		d, _, err := treehash.Sum(ctx, co.Dir, treehash.Options{})
		if err != nil {
			return "", err
		}
		return d.String(), co.Remove()
	})
}

// finish completes a run's record once its tree as run is measured, and
// says in the run's notes what it ran: the spec's "harness changed in this
// change: ran the base's version".
func (h *harnesses) finish(ctx context.Context, rec *record.CheckRun, hr *harness.Record, logf func(string, ...any)) error {
	hr.CommitTree = rec.TreeBefore
	if len(hr.Overlay()) > 0 {
		t, err := h.commitTree(ctx, rec.Commit)
		if err != nil {
			return err
		}
		hr.CommitTree = t
	}
	rec.Harness = hr
	for _, n := range explain.HarnessNotes(rec.Phase, hr) {
		rec.Notes = append(rec.Notes, n)
		logf("%s (%s): %s", rec.CheckID, rec.Phase, n)
	}
	return nil
}

// pinKey names what a checkout laid over its commit, so that "every fresh
// checkout of one commit hashes the same" (sameTree) compares like with
// like: each pin by its mode and full object id (a symlink whose target text
// is a file's content has that file's blob id).
func pinKey(commit string, pins []harness.Pin) string {
	if len(pins) == 0 {
		return commit
	}
	var b strings.Builder
	b.WriteString(commit + " with the base's harness")
	for _, p := range pins {
		if p.Remove {
			fmt.Fprintf(&b, " %q removed", p.Path)
		} else {
			fmt.Fprintf(&b, " %q@%s:%s", p.Path, p.Mode, p.Blob)
		}
	}
	return b.String()
}

// expectHarness derives, from git alone, the harness every runnable check's
// runs must record (evidence.HarnessExpectation): the same derivation as the
// engine's, and the candidate tree with the base's harness measured in a
// pinned checkout of its own.
func expectHarness(ctx context.Context, h *harnesses, m *discovery.Manifest, cmp comparison, candidateTree string) ([]evidence.HarnessExpectation, error) {
	candidate := cmp.candidate()
	out := []evidence.HarnessExpectation{}
	pinned := map[string]string{}
	for _, c := range m.Checks {
		if !c.Runnable() || slices.ContainsFunc(out, func(x evidence.HarnessExpectation) bool { return x.CheckID == c.ID }) {
			continue
		}
		cand, err := h.record(ctx, c, candidate)
		if err != nil {
			return nil, err
		}
		cand.CommitTree = candidateTree
		x := evidence.HarnessExpectation{CheckID: c.ID, Candidate: *cand, Tree: candidateTree}
		if pins := cand.Overlay(); len(pins) > 0 {
			key := pinKey(candidate, pins)
			if x.Tree = pinned[key]; x.Tree == "" {
				co, err := h.checkouts.CreatePinned(ctx, candidate, pins)
				if err != nil {
					return nil, err
				}
				d, _, err := treehash.Sum(ctx, co.Dir, treehash.Options{})
				if rerr := co.Remove(); err == nil {
					err = rerr
				}
				if err != nil {
					return nil, err
				}
				x.Tree, pinned[key] = d.String(), d.String()
			}
		}
		if c.Report != nil {
			if x.Baseline, err = h.record(ctx, c, cmp.baseline); err != nil {
				return nil, err
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// CheckHarness is one check's harness as a candidate run of it would take
// it: the files discovery and its harness: entries name, whose version
// runs, and what runmill could not resolve.
type CheckHarness struct {
	CheckID string          `json:"check_id"`
	Harness *harness.Record `json:"harness"`
}

// DiscoverHarness is Discover with each runnable check's resolved harness
// at the candidate (`runmill manifest`; issue 25: the rules in
// docs/policy.md, visible before a run).
func DiscoverHarness(ctx context.Context, o DiscoverOptions) (*discovery.Manifest, []CheckHarness, error) {
	repo, err := git.Open(ctx, o.RepoDir)
	if err != nil {
		return nil, nil, err
	}
	m, _, cmp, err := discoverIn(ctx, repo, o)
	if err != nil {
		return nil, nil, err
	}
	h := newHarnesses(repo, nil, m)
	out := []CheckHarness{}
	for _, c := range m.Checks {
		if !c.Runnable() || slices.ContainsFunc(out, func(x CheckHarness) bool { return x.CheckID == c.ID }) {
			continue
		}
		rec, err := h.record(ctx, c, cmp.candidate())
		if err != nil {
			return nil, nil, err
		}
		out = append(out, CheckHarness{CheckID: c.ID, Harness: rec})
	}
	return m, out, nil
}
