package discovery

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/runmill/verify/pkg/pathglob"
	"github.com/runmill/verify/pkg/policy"
)

// RepositoryPolicy is .runmill/checks.yaml as Load found it.
type RepositoryPolicy struct {
	Doc      policy.Repository
	Ref      PolicyRef
	ReadFrom ReadFrom
}

// OperatorPolicy is the operator's policy.yaml.
type OperatorPolicy struct {
	Doc policy.Operator
	Ref PolicyRef
}

// Input is everything Resolve unions. Base and Candidate are full commit ids.
type Input struct {
	Base, Candidate string
	Repository      *RepositoryPolicy // nil: read_from none
	// Change is the candidate's .runmill/checks.yaml when Repository was
	// read from the base (LoadChangePolicy): the declared skips it adds
	// or removes are recorded, never its checks. nil: none, or unreadable.
	Change       *RepositoryPolicy
	Operator     *OperatorPolicy // nil: no operator policy given
	ChangedPaths []string
	// Links are the tracked symlinks of the two trees ChangedPaths lie
	// between: a path rule also matches a changed path a symlink of
	// either makes visible under its patterns (links.go). Both, so that
	// neither removing nor retargeting a link escapes a rule.
	Links []Links
	// CheckoutRoot is the absolute path at which checks see the
	// repository (the sandbox's checkout): an absolute symlink target
	// under it points into the repository, any other outside.
	CheckoutRoot string
	GitHub       GitHub
	// Proposals are check ids the agent proposes: looked up in the configured
	// set, never executed when unknown (spec § 1).
	Proposals []string
	// Every requires every configured check, each path rule taken as
	// matched: a base proof (`verify --prove-base`) runs the baselines a
	// later change could need, and which paths it will touch is unknown.
	Every bool
}

// gate is one document's requirement rule for a check.
type gate struct {
	paths    []*pathglob.Pattern
	required bool
	by       Definer // the document this rule came from
}

type def struct {
	spec  policy.CheckSpec
	by    Definer
	gates []gate
}

// entry accumulates a manifest check while sources are applied.
type entry struct {
	Check
	sources map[Source]bool
}

// Resolve unions the sources into a manifest. It is pure: the same input
// always gives the same manifest (entries sorted by id).
func Resolve(in Input) (*Manifest, error) {
	m := &Manifest{
		Schema:             Schema,
		Base:               in.Base,
		Candidate:          in.Candidate,
		ReadFrom:           ReadFromNone,
		Autonomy:           policy.PROnly,
		FailOnSkippedCheck: true,
		ChangeDeclarations: policy.ChangeDeclarationsWithApproval,
		ChangedPaths:       len(in.ChangedPaths),
		GitHub: GitHub{Consulted: in.GitHub.Consulted, Contexts: append([]string{}, in.GitHub.Contexts...),
			Unknown: slices.Clone(in.GitHub.Unknown), Excluded: slices.Clone(in.GitHub.Excluded)},
		Checks:           []Check{},
		NotTriggered:     []NotTriggered{},
		IgnoredProposals: []IgnoredProposal{},
		Conflicts:        []Conflict{},
	}
	defs := map[string]*def{}
	var order []string
	add := func(spec policy.CheckSpec, by Definer) error {
		g, err := gateOf(spec, by)
		if err != nil {
			return err
		}
		d, ok := defs[spec.ID]
		if !ok {
			defs[spec.ID] = &def{spec: spec, by: by, gates: []gate{g}}
			order = append(order, spec.ID)
			return nil
		}
		// The operator wins the definition; both documents' requirement
		// rules stay, so repository content can add a requirement but
		// cannot replace a command or evidence rule chosen outside it.
		if fields := differing(d.spec, spec); len(fields) > 0 {
			m.Conflicts = append(m.Conflicts, Conflict{ID: spec.ID, Fields: fields, Winner: DefinedByOperator})
		}
		d.spec, d.by = spec, by
		d.gates = append(d.gates, g)
		return nil
	}
	if in.Repository != nil {
		m.ReadFrom = in.Repository.ReadFrom
		ref := in.Repository.Ref
		m.Policies.Repository = &ref
		for _, c := range in.Repository.Doc.Checks {
			if err := add(c, DefinedByRepository); err != nil {
				return nil, err
			}
		}
	}
	if in.Operator != nil {
		ref := in.Operator.Ref
		m.Policies.Operator = &ref
		m.Autonomy = in.Operator.Doc.Autonomy
		if m.Autonomy == "" {
			m.Autonomy = policy.PROnly
		}
		m.FailOnSkippedCheck = in.Operator.Doc.Verification.FailOnSkipped()
		m.RequirePinnedHarness = in.Operator.Doc.Verification.RequirePinnedHarness
		m.ChangeDeclarations = in.Operator.Doc.Verification.ChangeDeclarationsMode()
		for _, c := range in.Operator.Doc.Verification.Commands {
			if err := add(c, DefinedByOperator); err != nil {
				return nil, err
			}
		}
	}

	// Indexed on first use: a manifest whose rules all match plainly, or
	// that has none, never builds it.
	var trees []*linkTree
	indexed := false
	throughLinks := func(pats []*pathglob.Pattern) (SymlinkMatch, bool) {
		if !indexed {
			trees, indexed = linkTrees(in), true
		}
		return linkMatch(trees, pats)
	}
	entries := map[string]*entry{}
	require := func(id string, src Source, required bool, reason string) *entry {
		e, ok := entries[id]
		if !ok {
			e = &entry{Check: Check{ID: id}, sources: map[Source]bool{}}
			if d, ok := defs[id]; ok {
				s := d.spec
				e.Command, e.Report, e.DeclaredSkips = s.Run, s.Report, s.DeclaredSkips
				e.Timeout, e.Image, e.Dependencies, e.DefinedBy = s.Timeout, s.Image, s.Dependencies, d.by
				e.Harness = s.Harness
				if d.by == DefinedByRepository && in.Repository != nil && in.Repository.ReadFrom == ReadFromBase {
					e.ChangeDeclaredSkips, e.ChangeRemovedSkips = changeDeclarations(s, in.Change, id)
				}
			}
			entries[id] = e
		}
		e.sources[src] = true
		e.Required = e.Required || required
		e.Reasons = append(e.Reasons, reason)
		return e
	}

	unmatched := map[string][]string{}
	for _, id := range order {
		if in.Every {
			require(id, SourceRepository, true, "a base proof requires every configured check, whatever paths a change touches")
			continue
		}
		for _, g := range defs[id].gates {
			if len(g.paths) == 0 {
				why := "declared by the " + string(g.by) + " policy"
				if !g.required {
					why += " (required: false)"
				}
				require(id, SourceRepository, g.required, why)
				continue
			}
			if p, pat, ok := firstMatch(g.paths, in.ChangedPaths); ok {
				why := fmt.Sprintf("changed path %s matches %s", p, pat)
				if !g.required {
					why += " (required: false)"
				}
				require(id, SourceChangedPath, g.required, why)
				continue
			}
			if sm, ok := throughLinks(g.paths); ok {
				why := sm.reason()
				if !g.required {
					why += " (required: false)"
				}
				e := require(id, SourceChangedPath, g.required, why)
				e.SymlinkMatches = append(e.SymlinkMatches, sm)
				continue
			}
			for _, p := range g.paths {
				unmatched[id] = append(unmatched[id], p.String())
			}
		}
	}
	if in.Operator != nil && !in.Every {
		for i, r := range in.Operator.Doc.Verification.PathRules {
			pats, err := compileAll(r.Paths)
			if err != nil {
				return nil, fmt.Errorf("operator path_rules[%d]: %w", i, err)
			}
			if p, pat, ok := firstMatch(pats, in.ChangedPaths); ok {
				for _, id := range r.Checks {
					require(id, SourceChangedPath, true, fmt.Sprintf("operator path rule %d: changed path %s matches %s", i, p, pat))
				}
				continue
			}
			if sm, ok := throughLinks(pats); ok {
				for _, id := range r.Checks {
					e := require(id, SourceChangedPath, true, fmt.Sprintf("operator path rule %d: %s", i, sm.reason()))
					e.SymlinkMatches = append(e.SymlinkMatches, sm)
				}
			}
		}
	}
	for _, ctx := range in.GitHub.Contexts {
		require(ctx, SourceGitHub, true, "required by branch protection")
	}
	seen := map[string]bool{}
	for _, id := range in.Proposals {
		if seen[id] {
			continue
		}
		seen[id] = true
		if _, ok := defs[id]; !ok {
			m.IgnoredProposals = append(m.IgnoredProposals, IgnoredProposal{ID: id,
				Reason: "not a configured check id; unknown ids are ignored, never executed"})
			continue
		}
		require(id, SourceAgent, true, "proposed by the agent (a configured check)")
	}

	for _, id := range order {
		if _, in := entries[id]; !in {
			m.NotTriggered = append(m.NotTriggered, NotTriggered{ID: id, Paths: unmatched[id]})
		}
	}
	for _, e := range entries {
		for s := range e.sources {
			e.Sources = append(e.Sources, s)
		}
		sort.Slice(e.Sources, func(i, j int) bool { return sourceOrder[e.Sources[i]] < sourceOrder[e.Sources[j]] })
		m.Checks = append(m.Checks, e.Check)
	}
	sort.Slice(m.Checks, func(i, j int) bool { return m.Checks[i].ID < m.Checks[j].ID })
	sort.Slice(m.NotTriggered, func(i, j int) bool { return m.NotTriggered[i].ID < m.NotTriggered[j].ID })
	sort.Slice(m.Conflicts, func(i, j int) bool { return m.Conflicts[i].ID < m.Conflicts[j].ID })
	return m, nil
}

// changeDeclarations compares one check's declared skips at the base (base)
// with the candidate's policy: the entries it adds (by test id) and the
// base's test ids it no longer declares. A check the candidate's policy
// drops removes all of them; without a candidate policy (none, or one
// that does not parse) the change declares nothing and removes nothing.
func changeDeclarations(base policy.CheckSpec, change *RepositoryPolicy, id string) (added []policy.DeclaredSkip, removed []string) {
	if change == nil {
		return nil, nil
	}
	var cand *policy.CheckSpec
	for i := range change.Doc.Checks {
		if change.Doc.Checks[i].ID == id {
			cand = &change.Doc.Checks[i]
			break
		}
	}
	inBase := map[string]bool{}
	for _, d := range base.DeclaredSkips {
		inBase[d.TestID] = true
	}
	inCand := map[string]bool{}
	if cand != nil {
		for _, d := range cand.DeclaredSkips {
			inCand[d.TestID] = true
			if !inBase[d.TestID] {
				added = append(added, d)
			}
		}
	}
	for t := range inBase {
		if !inCand[t] {
			removed = append(removed, t)
		}
	}
	slices.SortFunc(added, func(a, b policy.DeclaredSkip) int { return strings.Compare(a.TestID, b.TestID) })
	slices.Sort(removed)
	return added, removed
}

// PathRules reports whether any rule depends on changed paths, that is
// whether Resolve needs Links at all.
func (in Input) PathRules() bool {
	if in.Operator != nil {
		if len(in.Operator.Doc.Verification.PathRules) > 0 {
			return true
		}
		for _, c := range in.Operator.Doc.Verification.Commands {
			if len(c.Paths) > 0 {
				return true
			}
		}
	}
	if in.Repository != nil {
		for _, c := range in.Repository.Doc.Checks {
			if len(c.Paths) > 0 {
				return true
			}
		}
	}
	return false
}

func gateOf(s policy.CheckSpec, by Definer) (gate, error) {
	pats, err := compileAll(s.Paths)
	if err != nil {
		return gate{}, fmt.Errorf("check %q: %w", s.ID, err)
	}
	return gate{paths: pats, required: s.IsRequired(), by: by}, nil
}

func compileAll(ps []string) ([]*pathglob.Pattern, error) {
	out := make([]*pathglob.Pattern, 0, len(ps))
	for _, p := range ps {
		c, err := pathglob.Compile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// firstMatch returns the first changed path any pattern matches.
func firstMatch(pats []*pathglob.Pattern, paths []string) (string, string, bool) {
	for _, p := range paths {
		for _, pat := range pats {
			if pat.Match(p) {
				return p, pat.String(), true
			}
		}
	}
	return "", "", false
}

// differing names the definition fields on which two specs disagree.
func differing(a, b policy.CheckSpec) []string {
	var f []string
	if a.Run != b.Run {
		f = append(f, "run")
	}
	if !reflect.DeepEqual(a.Report, b.Report) {
		f = append(f, "report")
	}
	if !reflect.DeepEqual(a.DeclaredSkips, b.DeclaredSkips) {
		f = append(f, "declared_skips")
	}
	if a.Timeout != b.Timeout {
		f = append(f, "timeout")
	}
	if a.Image != b.Image {
		f = append(f, "image")
	}
	if a.Dependencies != b.Dependencies {
		f = append(f, "dependencies")
	}
	if !reflect.DeepEqual(a.Paths, b.Paths) {
		f = append(f, "paths")
	}
	if !reflect.DeepEqual(a.Harness, b.Harness) {
		f = append(f, "harness")
	}
	if a.IsRequired() != b.IsRequired() {
		f = append(f, "required")
	}
	return f
}
