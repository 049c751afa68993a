// Package engine runs one verification end to end. This file is Discovery's
// glue: it gathers the sources from git and the operator's files and hands
// them to pkg/discovery.
package engine

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

// DiscoverOptions name the inputs of Discovery.
type DiscoverOptions struct {
	RepoDir         string
	Base, Candidate string // revisions as the user wrote them
	PolicyFile      string // operator policy; "" for none
	ProposalsFile   string // agent proposals; "-" reads Stdin; "" for none
	Stdin           io.Reader
	GitHubContexts  []string
	GitHubConsulted bool
	GitHubUnknown   []discovery.UnknownSource
	GitHubExcluded  []string
	// Every requires every configured check whatever the change touches
	// (discovery.Input.Every): a base proof's Discovery.
	Every bool
}

// Discover resolves the manifest for one change.
func Discover(ctx context.Context, o DiscoverOptions) (*discovery.Manifest, error) {
	m, _, err := discover(ctx, o)
	return m, err
}

// discover also returns the operator policy (nil without one), whose
// budgets and sandbox settings the engine applies.
func discover(ctx context.Context, o DiscoverOptions) (*discovery.Manifest, *discovery.OperatorPolicy, error) {
	repo, err := git.Open(ctx, o.RepoDir)
	if err != nil {
		return nil, nil, err
	}
	m, op, _, err := discoverIn(ctx, repo, o)
	return m, op, err
}

// discoverIn is discover in a repository already open: a run opens it once
// and passes it down.
func discoverIn(ctx context.Context, repo *git.Repo, o DiscoverOptions) (_ *discovery.Manifest, _ *discovery.OperatorPolicy, cmp comparison, err error) {
	in := discovery.Input{GitHub: discovery.GitHub{Consulted: o.GitHubConsulted, Contexts: o.GitHubContexts,
		Unknown: o.GitHubUnknown, Excluded: o.GitHubExcluded}}
	if in.Base, err = repo.ResolveCommit(ctx, o.Base, "--base"); err != nil {
		return nil, nil, cmp, err
	}
	if in.Candidate, err = repo.ResolveCommit(ctx, o.Candidate, "--candidate"); err != nil {
		return nil, nil, cmp, err
	}
	// Operator inputs are checked before anything is read from the change,
	// so a bad flag never costs a git walk.
	if o.PolicyFile != "" {
		if in.Operator, err = LoadOperatorPolicy(o.PolicyFile, repo.Dir); err != nil {
			return nil, nil, cmp, err
		}
	}
	if o.ProposalsFile != "" {
		if in.Proposals, err = readProposals(o.ProposalsFile, o.Stdin); err != nil {
			return nil, nil, cmp, err
		}
	}
	if err := admitTrees(ctx, repo, in.Operator, in.Candidate, in.Base); err != nil {
		return nil, nil, cmp, err
	}
	if in.Repository, err = discovery.LoadRepositoryPolicy(ctx, repo, in.Base, in.Candidate); err != nil {
		return nil, nil, cmp, err
	}
	// The candidate's policy only says which declared skips the change
	// makes or removes (issue 24); one that does not parse makes none, and
	// the base's governs either way.
	if in.Change, err = discovery.LoadChangePolicy(ctx, repo, in.Repository, in.Candidate); err != nil {
		in.Change = nil
	}
	// The change is what lies between two trees: the base tip's and the
	// landing tree's (comparison.changeSides).
	if cmp, err = compareCommits(ctx, repo, in.Base, in.Candidate); err != nil {
		return nil, nil, cmp, err
	}
	from, to := cmp.changeSides()
	if in.ChangedPaths, in.Links, err = changeBetween(ctx, repo, from, to, in.PathRules()); err != nil {
		return nil, nil, cmp, err
	}
	in.CheckoutRoot = sandbox.CheckoutPath
	in.Every = o.Every
	m, err := discovery.Resolve(in)
	return m, in.Operator, cmp, err
}

// admitTrees holds the repository to the operator's checkout limits (git's
// defaults without them) and measures the commits' trees from their
// objects (issue 23): a change whose tree is too large to check out is
// refused here, in Discovery, before anything lists or writes it — the
// candidate's 1 000 000 paths before its changed paths are listed, its
// 3 GB before a checkout fills runmill's memory — and the run's checkouts
// reuse the measures (checkout.Manager.MeasureWith).
func admitTrees(ctx context.Context, repo *git.Repo, op *discovery.OperatorPolicy, commits ...string) error {
	if op != nil {
		repo.Limits = git.Limits{Entries: op.Doc.Budgets.CheckoutEntries, Bytes: op.Doc.Budgets.CheckoutBytes}
	}
	for _, c := range commits {
		if _, err := repo.TreeSize(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// changeBetween lists the paths that differ between the trees of from and
// to and, when path rules need them (links: the policies have some), the
// symlinks of both trees: a rule sees a changed file through a link of
// either (docs/policy.md § Path rules see through symlinks).
func changeBetween(ctx context.Context, repo *git.Repo, from, to string, links bool) ([]string, []discovery.Links, error) {
	paths, err := repo.ChangedPaths(ctx, from, to)
	if err != nil || !links {
		return paths, nil, err
	}
	var trees []discovery.Links
	for _, c := range slices.Compact([]string{to, from}) {
		targets, dirs, err := repo.Symlinks(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		trees = append(trees, discovery.Links{Commit: c, Targets: targets, Dirs: dirs})
	}
	return paths, trees, nil
}

// LoadOperatorPolicy reads the operator policy. It must be a regular file
// outside the repository under test: a pull request must not be able to edit
// the policy that judges it.
func LoadOperatorPolicy(file, repoDir string) (*discovery.OperatorPolicy, error) {
	bad := func(err error, format string, args ...any) error {
		return rmerr.Wrap(rmerr.PolicyInvalid, err, format, args...).At(file, 0)
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, bad(err, "reading operator policy").(*rmerr.Error).WithHint("pass --policy the path of the operator's policy.yaml")
	}
	if repoDir != "" {
		if rr, err := filepath.EvalSymlinks(repoDir); err == nil && fsname.Within(real, rr) {
			return nil, rmerr.New(rmerr.PolicyInvalid, "operator policy lives inside the repository under test (%s)", rr).At(file, 0).
				WithHint("keep the operator policy outside the repository, where a pull request cannot edit it")
		}
	}
	f, _, err := bounded.OpenRegular(real)
	if errors.Is(err, bounded.ErrNotRegular) {
		return nil, rmerr.New(rmerr.PolicyInvalid, "operator policy: %v", err).At(file, 0).
			WithHint("pass --policy the path of the operator's policy.yaml")
	}
	if err != nil {
		return nil, bad(err, "reading operator policy")
	}
	defer f.Close()
	data, err := policy.ReadCapped(f, rmerr.PolicyInvalid, file)
	if err != nil {
		return nil, err
	}
	doc, err := policy.ParseOperator(data, file)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(file)
	return &discovery.OperatorPolicy{Doc: doc.Value, Ref: discovery.PolicyRef{Path: abs, Digest: doc.Digest}}, nil
}

func readProposals(file string, stdin io.Reader) ([]string, error) {
	if file == "-" {
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		return discovery.ParseProposals(stdin, "<stdin>")
	}
	// The file named, not a symlink to it: OpenRegular refuses a link.
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.PolicyProposals, err, "reading agent proposals").At(file, 0)
	}
	f, _, err := bounded.OpenRegular(real)
	if errors.Is(err, bounded.ErrNotRegular) {
		return nil, rmerr.New(rmerr.PolicyProposals, "agent proposals: %v", err).At(file, 0)
	}
	if err != nil {
		return nil, rmerr.Wrap(rmerr.PolicyProposals, err, "reading agent proposals").At(file, 0)
	}
	defer f.Close()
	return discovery.ParseProposals(f, file)
}

// Policies are the two documents that govern changes on top of one base
// commit, read as verification reads them.
type Policies struct {
	RepoDir      string // the repository's top level
	Base         string // the resolved base commit
	Repository   *discovery.RepositoryPolicy
	Operator     *discovery.OperatorPolicy // nil: no operator policy given
	OperatorFile string
}

// LoadPolicies loads the operator policy (policyFile, "" for none) and the
// repository's .runmill/checks.yaml at base, base and candidate being the
// same commit: the policy that governs changes on top of base. The operator
// policy is read first, so that a caller can still apply its settings when
// the repository's is broken: the result is then non-nil (operator only)
// together with the error. A base without checks.yaml is RM-VERIFY-004.
func LoadPolicies(ctx context.Context, repoDir, base, policyFile string) (*Policies, error) {
	p := &Policies{OperatorFile: policyFile}
	if policyFile != "" {
		op, err := LoadOperatorPolicy(policyFile, repoDir)
		if err != nil {
			return nil, err
		}
		p.Operator = op
	}
	r, err := git.Open(ctx, repoDir)
	if err != nil {
		return p, err
	}
	p.RepoDir = r.Dir
	if p.Base, err = r.ResolveCommit(ctx, base, "--base"); err != nil {
		return p, err
	}
	if p.Repository, err = discovery.LoadRepositoryPolicy(ctx, r, p.Base, p.Base); err != nil {
		return p, err
	}
	if p.Repository == nil {
		return p, rmerr.New(rmerr.VerifyManifest, "no %s at %s", policy.RepoPolicyPath, objectid.Short(p.Base)).At(r.Dir, 0).
			WithHint("run 'runmill init', review and commit %s", policy.RepoPolicyPath)
	}
	return p, nil
}

// Definitions returns every configured check by id with the definition
// that applies: the operator's wins over the repository's, as in
// discovery.Resolve (spec § 1).
func (p *Policies) Definitions() map[string]policy.CheckSpec {
	defs := map[string]policy.CheckSpec{}
	if p.Repository != nil {
		for _, c := range p.Repository.Doc.Checks {
			defs[c.ID] = c
		}
	}
	if p.Operator != nil {
		for _, c := range p.Operator.Doc.Verification.Commands {
			defs[c.ID] = c
		}
	}
	return defs
}

// HostPaths are the host paths the sandbox binds (jobHostPaths): the
// operator's sandbox.host_paths, nil without an operator policy (the
// sandbox's defaults apply), with the runner's tool-cache installs.
func (p *Policies) HostPaths() []string {
	if p == nil || p.Operator == nil {
		return jobHostPaths(nil)
	}
	return jobHostPaths(p.Operator.Doc.Sandbox.HostPaths)
}
