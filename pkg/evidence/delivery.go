package evidence

import (
	"fmt"
	"slices"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

var (
	phases      = []record.Phase{record.Baseline, record.Candidate, record.CandidateHarness}
	statuses    = []record.Status{record.Passed, record.Failed}
	coverages   = []record.Coverage{record.Proven, record.Unproven}
	reviewState = []string{"approved", "changes_requested", "commented", "dismissed"}
	readFroms   = []discovery.ReadFrom{discovery.ReadFromBase, discovery.ReadFromWorkingTree, discovery.ReadFromNone}
	autonomies  = []policy.Autonomy{policy.PROnly, policy.GuardedMerge, policy.Continuous}
	sources     = []discovery.Source{discovery.SourceRepository, discovery.SourceChangedPath, discovery.SourceGitHub, discovery.SourceAgent}
)

// checkStatement enforces the statement schema beyond field names and types:
// the in-toto envelope, one subject naming the candidate head, and the
// grammar of every commit, digest, address, timestamp and enumeration.
func checkStatement[P Predicate](st *Statement[P]) *failure {
	bad := func(format string, args ...any) *failure { return fail(ReasonStatement, format, args...) }
	if st.Type != StatementType {
		return bad("_type is %q, want %q", st.Type, StatementType)
	}
	if len(st.Subject) != 1 {
		return bad("the statement has %d subjects; a runmill statement has exactly one", len(st.Subject))
	}
	subj := st.Subject[0]
	var wantType string
	var cand TerminalCandidate
	switch p := any(&st.Predicate).(type) {
	case *Delivery:
		wantType = DeliveryPredicateType
		cand = TerminalCandidate{Repository: p.Candidate.Repository, PullRequest: p.Candidate.PullRequest, Head: p.Candidate.Head, Base: p.Candidate.Base}
		if f := checkDelivery(p); f != nil {
			return f
		}
	case *Terminal:
		wantType = TerminalPredicateType
		cand = p.Candidate
		if f := checkTerminal(p); f != nil {
			return f
		}
	case *Shard:
		wantType = ShardPredicateType
		cand = TerminalCandidate{Repository: p.Candidate.Repository, PullRequest: p.Candidate.PullRequest, Head: p.Candidate.Head, Base: p.Candidate.Base}
		if f := checkShard(p); f != nil {
			return f
		}
	}
	if st.PredicateType != wantType {
		return bad("predicateType is %q, want %q", st.PredicateType, wantType)
	}
	if subj.Digest.GitCommit != cand.Head || subj.Name != SubjectName(cand.Repository.Name, cand.Head) {
		return bad("the subject %q (gitCommit %q) does not name the candidate %s", subj.Name, subj.Digest.GitCommit, SubjectName(cand.Repository.Name, cand.Head))
	}
	return nil
}

func checkCandidate(c TerminalCandidate) *failure {
	if c.Repository.Name == "" || c.Repository.ID < 0 || c.PullRequest < 0 {
		return fail(ReasonStatement, "predicate.candidate: repository name, repository id ≥ 0 and pull_request ≥ 0 are required")
	}
	if !isCommit(c.Head) || !isCommit(c.Base) {
		return fail(ReasonStatement, "predicate.candidate: head and base must be commit ids")
	}
	return nil
}

func checkDelivery(p *Delivery) *failure {
	bad := func(format string, args ...any) *failure { return fail(ReasonStatement, format, args...) }
	if p.RunmillVersion == "" || p.RunID == "" {
		return bad("predicate.runmill_version and predicate.run_id must not be empty")
	}
	if _, err := parseTime(p.IssuedAt); err != nil {
		return bad("predicate.issued_at: %v", err)
	}
	c := p.Candidate
	if f := checkCandidate(TerminalCandidate{Repository: c.Repository, PullRequest: c.PullRequest, Head: c.Head, Base: c.Base}); f != nil {
		return f
	}
	if !isCommit(c.MergeBase) || !isDigest(c.Tree) {
		return bad("predicate.candidate: merge_base must be a commit id and tree a sha256: digest")
	}
	var landingErr *failure
	validateLanding(c.Landing, func(field, format string, args ...any) {
		if landingErr == nil {
			landingErr = bad("predicate.candidate.landing.%s: %s", field, fmt.Sprintf(format, args...))
		}
	})
	if landingErr != nil {
		return landingErr
	}
	if !c.Landing.Conflicted() && !c.Landing.Merged && c.Landing.Commit != c.Head {
		return bad("predicate.candidate.landing: a head containing the base lands as itself, not %s", c.Landing.Commit)
	}
	m := &p.Manifest
	if m.Schema != discovery.Schema {
		return bad("predicate.manifest.schema is %q, want %q", m.Schema, discovery.Schema)
	}
	if !slices.Contains(autonomies, m.Autonomy) {
		return bad("predicate.manifest.autonomy %q is unknown", m.Autonomy)
	}
	if !slices.Contains(readFroms, m.ReadFrom) {
		return bad("predicate.manifest.read_from %q is unknown", m.ReadFrom)
	}
	for _, ref := range []*discovery.PolicyRef{m.Policies.Repository, m.Policies.Operator} {
		if ref != nil && !isDigest(ref.Digest) {
			return bad("predicate.manifest.policies: digest %q is not sha256:<hex>", ref.Digest)
		}
	}
	for i, c := range m.Checks {
		if c.ID == "" {
			return bad("predicate.manifest.checks[%d].id is empty", i)
		}
		if c.DefinedBy != "" && c.DefinedBy != discovery.DefinedByOperator && c.DefinedBy != discovery.DefinedByRepository {
			return bad("predicate.manifest.checks[%d].defined_by %q is unknown", i, c.DefinedBy)
		}
		for j, src := range c.Sources {
			if !slices.Contains(sources, src) || slices.Contains(c.Sources[:j], src) {
				return bad("predicate.manifest.checks[%d].sources: unknown or repeated source %q", i, src)
			}
		}
	}
	for i := range p.Checks {
		if f := checkRunGrammar(i, &p.Checks[i]); f != nil {
			return f
		}
	}
	for i, r := range p.Remote {
		if r.Context == "" {
			return bad("predicate.remote[%d].context is empty", i)
		}
	}
	for i, r := range p.Reviews {
		if r.Reviewer == "" || !slices.Contains(reviewState, r.State) || !isCommit(r.Commit) {
			return bad("predicate.reviews[%d] needs a reviewer, a state of %v and a commit id", i, reviewState)
		}
	}
	switch m.ChangeDeclarations {
	case "", policy.ChangeDeclarationsWithApproval, policy.ChangeDeclarationsNever:
	default:
		return bad("predicate.manifest.change_declarations %q is unknown", m.ChangeDeclarations)
	}
	if f := checkRenames(p.Renames); f != nil {
		return f
	}
	return checkShardRefs(p.Shards)
}

func checkRunGrammar(i int, r *record.CheckRun) *failure {
	bad := func(format string, args ...any) *failure {
		return fail(ReasonStatement, "predicate.checks[%d]: %s", i, fmt.Sprintf(format, args...))
	}
	switch {
	case r.CheckID == "" || r.Executor == "":
		return bad("check_id and executor must not be empty")
	case !slices.Contains(phases, r.Phase):
		return bad("phase %q is not baseline, candidate or candidate-harness", r.Phase)
	case !slices.Contains(statuses, r.Status):
		return bad("status %q is not passed or failed", r.Status)
	case !slices.Contains(coverages, r.Coverage):
		return bad("coverage %q is not proven or unproven", r.Coverage)
	case !isCommit(r.Commit):
		return bad("commit %q is not a commit id", r.Commit)
	case !isDigest(r.TreeBefore) || !isDigest(r.TreeAfter):
		return bad("tree_before and tree_after must be sha256:<hex> tree digests")
	case r.DurationMS < 0:
		return bad("negative duration_ms")
	case !r.Started && (r.ExitCode != 0 || r.DurationMS != 0 || r.TimedOut || r.OOMKilled):
		return bad("a run that was not started has no exit code, duration, timeout or memory kill")
	case len(r.LandingConflicts) > 0 && (r.Started || r.Report != nil):
		return bad("a run refused for landing conflicts was not started and has no report")
	}
	for _, o := range []struct {
		name string
		out  record.Output
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if !digest.LowerHex(o.out.SHA256, 64) || !isArtifact(o.out.Artifact) || o.out.Size < 0 || o.out.ArtifactSize < 0 {
			return bad("%s needs a hex sha256, sizes ≥ 0 and an artifact address sha256/<hex>", o.name)
		}
	}
	if r.Phase == record.CandidateHarness && r.Harness == nil {
		return bad("a candidate-harness run records the harness it ran")
	}
	if h := r.Harness; h != nil {
		if msg := harnessGrammar(h, true, r.Phase == record.CandidateHarness); msg != "" {
			return bad("harness: %s", msg)
		}
		if len(h.Overlay()) == 0 && h.CommitTree != r.TreeBefore {
			return bad("harness: nothing laid over the commit, yet tree_before %s is not its commit_tree %s", r.TreeBefore, h.CommitTree)
		}
	}
	if f := checkReuseGrammar(r); f != "" {
		return bad("%s", f)
	}
	if f := checkMoved(r); f != "" {
		return bad("%s", f)
	}
	for _, t := range r.Tamper {
		// Only a candidate run carries the change's tamper facts, each
		// naming a file and a rule (docs/outcome.md § Tamper).
		if r.Phase != record.Candidate || t.File == "" || t.Rule == "" || t.Line < 0 || (t.ReportPath != "") != (t.Rule == "report-path") {
			return bad("tamper: a fact %+v on a %s run; only candidate runs carry them, each with a file, a rule and a line ≥ 0, and report_path exactly on report-path", t, r.Phase)
		}
	}
	if rep := r.Report; rep != nil {
		if rep.Path == "" || !slices.Contains(report.Formats, rep.Format) ||
			(rep.Identity != report.IdentityDefault && rep.Identity != report.IdentitySuitePath) {
			return bad("report needs a path, a format of %v and a known identity", report.Formats)
		}
		if !digest.LowerHex(rep.SHA256, 64) || !isArtifact(rep.Artifact) || rep.Size < 0 {
			return bad("report needs a hex sha256, a size ≥ 0 and an artifact address sha256/<hex>")
		}
		if inv := rep.Inventory; inv != nil {
			if f := checkInventory(inv, r.Phase == record.Baseline); f != nil {
				return bad("report.inventory: %s", f.msg)
			}
			if want := repeatedIDs(inv); !slices.Equal(rep.Duplicates, want[:min(len(want), report.MaxDuplicatesListed)]) {
				return bad("report.duplicates %q are not the first %d ids its inventory repeats", rep.Duplicates, report.MaxDuplicatesListed)
			}
		}
	}
	return nil
}

// checkInventory enforces the inventory's one encoding: each list sorted by
// byte order without repeats, no empty id, no id in two lists — except that
// a baseline's report may repeat an id (issue 24: each occurrence keeps
// authority by count), so a baseline's lists are sorted with repeats and
// may share an id. It runs in linear time on 1 M ids.
func checkInventory(inv *record.Inventory, baseline bool) *failure {
	lists := [][]report.TestID{inv.Passed, inv.Failed, inv.Skipped}
	for li, l := range lists {
		for i, id := range l {
			if id == "" {
				return fail(ReasonStatement, "an empty test id")
			}
			if i > 0 && (l[i-1] > id || l[i-1] == id && !baseline) {
				return fail(ReasonStatement, "%s ids are not sorted and unique at %q", []string{"passed", "failed", "skipped"}[li], id)
			}
		}
	}
	if baseline {
		return nil
	}
	// Three sorted lists are disjoint iff a three-way merge never meets
	// the same id twice.
	var i, j, k int
	a, b, c := inv.Passed, inv.Failed, inv.Skipped
	for i < len(a) || j < len(b) || k < len(c) {
		var m report.TestID
		first := true
		for _, x := range []struct {
			l []report.TestID
			n int
		}{{a, i}, {b, j}, {c, k}} {
			if x.n < len(x.l) && (first || x.l[x.n] < m) {
				m, first = x.l[x.n], false
			}
		}
		n := 0
		if i < len(a) && a[i] == m {
			i++
			n++
		}
		if j < len(b) && b[j] == m {
			j++
			n++
		}
		if k < len(c) && c[k] == m {
			k++
			n++
		}
		if n > 1 {
			return fail(ReasonStatement, "test id %q has two statuses", m)
		}
	}
	return nil
}

// repeatedIDs are the ids an inventory lists more than once, sorted: what
// a baseline's report.duplicates names (a candidate's inventory repeats
// none). Linear in the inventory: each list is sorted.
func repeatedIDs(inv *record.Inventory) []report.TestID {
	var out []report.TestID
	lists := [][]report.TestID{inv.Passed, inv.Failed, inv.Skipped}
	pos := make([]int, len(lists))
	for {
		var m report.TestID
		first := true
		for li, l := range lists {
			if pos[li] < len(l) && (first || l[pos[li]] < m) {
				m, first = l[pos[li]], false
			}
		}
		if first {
			return out
		}
		n := 0
		for li, l := range lists {
			for pos[li] < len(l) && l[pos[li]] == m {
				pos[li]++
				n++
			}
		}
		if n > 1 {
			out = append(out, m)
		}
	}
}

// bindDelivery enforces "exact candidate bindings": every fact the verifier
// host observed itself must equal what the statement says it verified.
func (v *verification) bindDelivery() *failure {
	e, p := v.delivery, &v.dst.Predicate
	bad := func(format string, args ...any) *failure { return fail(ReasonBinding, format, args...) }
	if p.BaseProof {
		// A proof measured a base for later verifications to reuse; it
		// ran no change, so it is never the verdict of one, whatever the
		// expectations name (and however a caller relaxes merge_ready).
		return bad("this is a base proof of %s (predicate.base_proof): baseline runs for later verifications to reuse, never a change's verdict", p.Candidate.Base)
	}
	c := p.Candidate
	for _, b := range []struct {
		field     string
		got, want any
	}{
		{"candidate.repository.name", c.Repository.Name, e.Repository.Name},
		{"candidate.repository.id", c.Repository.ID, e.Repository.ID},
		{"candidate.pull_request", c.PullRequest, e.PullRequest},
		{"candidate.head", c.Head, e.Head},
		{"candidate.base", c.Base, e.Base},
		{"candidate.merge_base", c.MergeBase, e.MergeBase},
		{"candidate.landing.base_ref", c.Landing.BaseRef, e.Landing.BaseRef},
		{"candidate.landing.commit", c.Landing.Commit, e.Landing.Commit},
		{"candidate.landing.git_tree", c.Landing.GitTree, e.Landing.GitTree},
		{"candidate.landing.merged", c.Landing.Merged, e.Landing.Merged},
		{"candidate.landing.behind", c.Landing.Behind, e.Landing.Behind},
		{"candidate.tree", c.Tree, e.CandidateTree},
		{"manifest.base", p.Manifest.Base, e.Base},
		{"manifest.candidate", p.Manifest.Candidate, e.Head},
		{"manifest.read_from", p.Manifest.ReadFrom, e.Policy.ReadFrom},
		{"manifest.policies.repository.digest", policyDigest(p.Manifest.Policies.Repository), e.Policy.RepositoryDigest},
		{"manifest.policies.operator.digest", policyDigest(p.Manifest.Policies.Operator), e.Policy.OperatorDigest},
	} {
		if b.got != b.want {
			return bad("predicate.%s is %v, the expectations say %v", b.field, b.got, b.want)
		}
	}
	if !slices.Equal(c.Landing.Conflicts, e.Landing.Conflicts) {
		return bad("predicate.candidate.landing.conflicts are %q, the expectations say %q", c.Landing.Conflicts, e.Landing.Conflicts)
	}
	if f := v.bindChange(); f != nil {
		return f
	}
	// Spec § 1: the repository policy is read from the base commit, or from
	// the candidate when it is new in the change.
	wantCommit := map[discovery.ReadFrom]string{discovery.ReadFromBase: e.Base, discovery.ReadFromWorkingTree: e.Head}[p.Manifest.ReadFrom]
	if ref := p.Manifest.Policies.Repository; ref != nil && ref.Commit != wantCommit {
		return bad("predicate.manifest.policies.repository was read at %q, but read_from %s means %q", ref.Commit, p.Manifest.ReadFrom, wantCommit)
	}
	// The required set is an observation too: the checks the manifest
	// requires for a reason other than an agent's proposal (spec § 1:
	// agents only add) must be exactly the ones the verifier host derived.
	var required []string
	for _, c := range p.Manifest.Checks {
		if c.Required && slices.ContainsFunc(c.Sources, func(s discovery.Source) bool { return s != discovery.SourceAgent }) {
			required = append(required, c.ID)
		}
	}
	slices.Sort(required)
	if required = slices.Compact(required); !slices.Equal(required, e.RequiredChecks) {
		return bad("the manifest requires %q, the expectations %q", required, e.RequiredChecks)
	}
	// Spec § 3: every result is pinned to a commit; a candidate run must
	// have measured exactly the landing tree (issue 24: the head, or its
	// merge with the base tip; the head when that merge conflicts, and
	// then it ran nothing), a baseline run the base tip.
	harnesses := make(map[string]*HarnessExpectation, len(e.Harness))
	for i := range e.Harness {
		harnesses[e.Harness[i].CheckID] = &e.Harness[i]
	}
	for i, r := range p.Checks {
		switch r.Phase {
		case record.Candidate:
			if want := e.Landing.measured(e.Head); r.Commit != want {
				return bad("predicate.checks[%d] (%s, candidate) ran at commit %s, not the landing commit %s", i, r.CheckID, r.Commit, want)
			}
			if f := bindHarness(i, &r, harnesses[r.CheckID], e.CandidateTree); f != nil {
				return f
			}
		case record.CandidateHarness:
			if want := e.Landing.measured(e.Head); r.Commit != want {
				return bad("predicate.checks[%d] (%s, candidate-harness) ran at commit %s, not the landing commit %s", i, r.CheckID, r.Commit, want)
			}
			if f := bindOwnHarness(i, &r, harnesses[r.CheckID], e.CandidateTree); f != nil {
				return f
			}
		case record.Baseline:
			if r.Commit != e.Base {
				return bad("predicate.checks[%d] (%s, baseline) ran at commit %s, not the base tip %s", i, r.CheckID, r.Commit, e.Base)
			}
			if h := harnesses[r.CheckID]; h != nil && (h.Baseline == nil || !harness.Equal(r.Harness, h.Baseline)) {
				return bad("predicate.checks[%d] (%s, baseline) records a harness other than the one git shows for the base tip", i, r.CheckID)
			}
		}
		if !slices.Equal(r.LandingConflicts, e.Landing.Conflicts) {
			return bad("predicate.checks[%d] (%s, %s) records landing conflicts %q, the expectations %q", i, r.CheckID, r.Phase, r.LandingConflicts, e.Landing.Conflicts)
		}
	}
	observed := map[Approval]bool{}
	for _, a := range e.Reviews.Approvals {
		observed[a] = true
	}
	for i, r := range p.Reviews {
		if r.State == "approved" && !observed[Approval{Reviewer: r.Reviewer, Commit: r.Commit}] {
			return bad("predicate.reviews[%d]: an approval by %q on %s that the expectations did not observe", i, r.Reviewer, r.Commit)
		}
	}
	return nil
}

// bindHarness holds a candidate run to the harness the verifier host
// derived from git (issue 19): the candidate's tree with exactly the base's
// version of each changed harness file laid over it, and no other tree.
func bindHarness(i int, r *record.CheckRun, want *HarnessExpectation, candidateTree string) *failure {
	bad := func(format string, args ...any) *failure {
		return fail(ReasonBinding, "predicate.checks[%d] (%s, candidate): %s", i, r.CheckID, fmt.Sprintf(format, args...))
	}
	if want == nil {
		// Nothing expected of the harness: the run saw the candidate tree
		// itself, and a record, if any, lays nothing over it.
		if r.TreeBefore != candidateTree || (r.Harness != nil && len(r.Harness.Overlay()) > 0) {
			return bad("ran tree %s, not the candidate tree %s", r.TreeBefore, candidateTree)
		}
		return nil
	}
	switch {
	case r.Harness == nil || !harness.Equal(r.Harness, &want.Candidate):
		return bad("records a harness other than the one git shows (base's version of each harness file the change edited, none of those it added)")
	case r.Harness.CommitTree != candidateTree:
		return bad("its commit tree %s is not the candidate tree %s", r.Harness.CommitTree, candidateTree)
	case r.TreeBefore != want.Tree:
		return bad("ran tree %s, not the candidate with the base's harness %s", r.TreeBefore, want.Tree)
	}
	return nil
}

// bindOwnHarness holds a candidate-harness run (issue 25) to what git
// shows: it exists only when the candidate run's harness differs from the
// commit, and it ran the candidate tree itself, every harness file in the
// commit's version.
func bindOwnHarness(i int, r *record.CheckRun, want *HarnessExpectation, candidateTree string) *failure {
	bad := func(format string, args ...any) *failure {
		return fail(ReasonBinding, "predicate.checks[%d] (%s, candidate-harness): %s", i, r.CheckID, fmt.Sprintf(format, args...))
	}
	switch {
	case want == nil || !want.Candidate.Changed():
		return bad("a run with the candidate's own harness, but git shows no harness change for the check")
	case r.Harness == nil || !harness.Equal(r.Harness, OwnHarness(&want.Candidate)):
		return bad("records a harness other than the candidate's own (every harness file in the commit's version)")
	case r.Harness.CommitTree != candidateTree || r.TreeBefore != candidateTree:
		return bad("ran tree %s (commit tree %s), not the candidate tree %s", r.TreeBefore, r.Harness.CommitTree, candidateTree)
	}
	return nil
}

// OwnHarness is the harness record of a candidate-harness run (issue 25):
// h's files, each in the commit's own version, nothing laid over. The
// engine records it and Verify derives it from the expected candidate
// record, so the two are one derivation.
func OwnHarness(h *harness.Record) *harness.Record {
	own := *h
	own.Files = slices.Clone(h.Files)
	for i := range own.Files {
		own.Files[i].Ran = harness.FromCommit
	}
	return &own
}

// harnessGrammar checks one harness record's encoding; "" when valid. own:
// the record of a candidate-harness run, in which every file ran the
// commit's version.
func harnessGrammar(h *harness.Record, needTree, own bool) string {
	switch {
	case h.Pinned && (!isCommit(h.Base) || h.Reason != ""):
		return "a pinned harness names its base commit and no reason"
	case !h.Pinned && h.Reason == "":
		return "an unpinned harness says why"
	case needTree && !isDigest(h.CommitTree), !needTree && h.CommitTree != "" && !isDigest(h.CommitTree):
		return "commit_tree must be a sha256:<hex> tree digest"
	}
	if len(h.Unpinned) > 0 && !h.Pinned {
		return "an unpinned harness lists no unresolved parts: nothing of it is pinned"
	}
	for _, u := range h.Unpinned {
		if u.Part == "" || u.Reason == "" {
			return "an unresolved part of the command names the part and the reason"
		}
	}
	for j, f := range h.Files {
		if f.Path == "" || (j > 0 && h.Files[j-1].Path >= f.Path) {
			return "files must have paths, sorted and unique"
		}
		if f.Base == nil && f.Commit == nil {
			return fmt.Sprintf("harness file %s exists at neither commit", f.Path)
		}
		switch f.Ran {
		case harness.FromBase:
			// The base's version, or for a file new in the change its
			// absence (issue 25).
			if own {
				return fmt.Sprintf("harness file %s ran the base's version in a run with the candidate's own harness", f.Path)
			}
			if !h.Pinned {
				return fmt.Sprintf("harness file %s ran the base's version, unpinned", f.Path)
			}
		case harness.FromCommit:
			if h.Pinned && !own {
				return fmt.Sprintf("harness file %s ran the commit's version in a pinned harness", f.Path)
			}
		default:
			return fmt.Sprintf("harness file %s: ran is %q, not base or commit", f.Path, f.Ran)
		}
		for _, x := range []*harness.Entry{f.Base, f.Commit} {
			if x != nil && (!slices.Contains([]string{"100644", "100755", "120000"}, x.Mode) || !isCommit(x.Blob)) {
				return fmt.Sprintf("harness file %s: an entry needs a file mode and a blob id", f.Path)
			}
		}
	}
	return ""
}

// checkIndex maps check ids to their manifest entries (the first one, as
// discovery.Manifest.Check answers), so lookups over 10 000 runs stay linear.
func checkIndex(m *discovery.Manifest) map[string]discovery.Check {
	idx := make(map[string]discovery.Check, len(m.Checks))
	for _, c := range m.Checks {
		if _, dup := idx[c.ID]; !dup {
			idx[c.ID] = c
		}
	}
	return idx
}

func policyDigest(r *discovery.PolicyRef) string {
	if r == nil {
		return ""
	}
	return r.Digest
}

// checkRecords enforces that the recorded facts agree with each other:
// output sizes and addresses, and proven coverage only with a parsed report
// the manifest declared (spec § 4 "proven vs unproven coverage").
func (v *verification) checkRecords() *failure {
	p := &v.dst.Predicate
	specs := checkIndex(&p.Manifest)
	bad := func(i int, format string, args ...any) *failure {
		return fail(ReasonRecord, "predicate.checks[%d] (%s): %s", i, p.Checks[i].CheckID, fmt.Sprintf(format, args...))
	}
	if msg := baseProofGrammar(p); msg != "" {
		return fail(ReasonRecord, "a base proof %s", msg)
	}
	for i, r := range p.Checks {
		for _, o := range []struct {
			name string
			out  record.Output
		}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
			switch {
			case o.out.ArtifactSize > o.out.Size:
				return bad(i, "%s stores %d bytes of a %d-byte stream", o.name, o.out.ArtifactSize, o.out.Size)
			case o.out.ArtifactSize == o.out.Size && o.out.Artifact != ArtifactAddress(o.out.SHA256):
				return bad(i, "%s was kept whole but its artifact %s is not the stream's digest %s", o.name, o.out.Artifact, o.out.SHA256)
			case o.out.ArtifactSize < o.out.Size && o.out.Artifact == ArtifactAddress(o.out.SHA256):
				return bad(i, "%s was cut to %d bytes but its artifact claims the whole stream's digest", o.name, o.out.ArtifactSize)
			}
		}
		spec, listed := specs[r.CheckID]
		if rep := r.Report; rep != nil {
			if rep.Artifact != ArtifactAddress(rep.SHA256) {
				return bad(i, "report artifact %s is not the report's digest %s", rep.Artifact, rep.SHA256)
			}
			if !listed || spec.Report == nil {
				return bad(i, "records a report the manifest does not declare")
			}
			if rep.Path != spec.Report.Path || string(rep.Format) != spec.Report.Format || string(rep.Identity) != spec.Report.Identity {
				return bad(i, "report %s (%s) is not the declared %s (%s)", rep.Path, rep.Format, spec.Report.Path, spec.Report.Format)
			}
		}
		if r.Coverage == record.Proven && (r.Report == nil || r.Report.Inventory == nil) {
			return bad(i, "coverage is proven without a parsed report")
		}
		if listed && r.Command != spec.Command {
			return bad(i, "ran %q, but the manifest's command is %q", r.Command, spec.Command)
		}
		if u := r.Dependencies; u != nil {
			var lockfiles map[string]map[string]string
			if v.delivery != nil {
				lockfiles = v.delivery.Lockfiles
			}
			if msg := checkDependencyUse(u, spec.Dependencies, r.Commit, lockfiles); msg != "" {
				return bad(i, "%s", msg)
			}
		}
	}
	return v.checkJudgements()
}

// baseProofGrammar is what makes a statement a base proof ("" when p is
// one, or is not marked as one): one commit as base and head, no change
// (no pull request, no landing merge), and only baseline runs executed
// there — nothing a reusing verification could take for a candidate's.
func baseProofGrammar(p *Delivery) string {
	if !p.BaseProof {
		return ""
	}
	c := &p.Candidate
	switch {
	case c.Head != c.Base || p.Manifest.Base != c.Base || p.Manifest.Candidate != c.Base:
		return fmt.Sprintf("measures one commit: candidate.head %s, candidate.base %s, manifest base %s and candidate %s differ", c.Head, c.Base, p.Manifest.Base, p.Manifest.Candidate)
	case c.PullRequest != 0 || len(p.Reviews) > 0 || c.Landing.Merged || c.Landing.Conflicted():
		return "belongs to no pull request and merges nothing"
	case len(p.Remote) > 0 || len(p.PendingContexts) > 0 || len(p.Shards) > 0:
		return "reconciles no remote check and merges no shard"
	case p.Verdict.MergeReady || !slices.ContainsFunc(p.Failures, func(f record.Finding) bool { return f.Rule == verdict.RuleBaseProof }):
		return "is never merge-ready, and its failures say why (" + verdict.RuleBaseProof + ")"
	}
	for i, r := range p.Checks {
		if r.Phase != record.Baseline || r.Commit != c.Base {
			return fmt.Sprintf("holds baseline runs at %s only; checks[%d] (%s) is a %s run at %s", c.Base, i, r.CheckID, r.Phase, r.Commit)
		}
		if r.ReusedFrom != nil {
			return fmt.Sprintf("is executed: checks[%d] (%s) was reused", i, r.CheckID)
		}
	}
	return ""
}

// checkRequired enforces "required evidence": every check the expectations
// require is required by the signed manifest and has a passing, proven,
// orchestrator-run candidate result whose tree did not move (spec § 2–4);
// report-producing checks also have such a baseline; remote checks a
// success; and the observed approvals meet the required count.
func (v *verification) checkRequired() *failure {
	e, p := v.delivery, &v.dst.Predicate
	specs := checkIndex(&p.Manifest)
	runs := map[string][]int{} // check id → its runs, so the pass stays linear
	for i, r := range p.Checks {
		runs[r.CheckID] = append(runs[r.CheckID], i)
	}
	bad := func(id, format string, args ...any) *failure {
		return fail(ReasonRequiredEvidence, "required check %q: %s", id, fmt.Sprintf(format, args...))
	}
	// Issue 25: where git shows the harness changed, the candidate's own
	// harness must have run too, and passed.
	changed := map[string]bool{}
	for _, h := range e.Harness {
		changed[h.CheckID] = h.Candidate.Changed()
	}
	for _, id := range e.RequiredChecks {
		spec, ok := specs[id]
		if !ok || !spec.Required {
			return bad(id, "the signed manifest does not require it")
		}
		if !spec.Runnable() {
			if !spec.HasSource(discovery.SourceGitHub) {
				return bad(id, "no runnable command and no remote result (RM-VERIFY-001)")
			}
			n := 0
			for _, r := range p.Remote {
				if r.Context == id {
					if r.Conclusion != record.Success {
						return bad(id, "remote conclusion %s", r.Conclusion)
					}
					n++
				}
			}
			if n == 0 {
				return bad(id, "no remote conclusion recorded")
			}
			continue
		}
		for _, phase := range []record.Phase{record.Candidate, record.Baseline, record.CandidateHarness} {
			// A check of a policy new in the change has no baseline
			// contract (spec § 1): its candidate run stands alone.
			if phase == record.Baseline && (spec.Report == nil || Requirement(&p.Manifest, spec).NewInChange) {
				continue
			}
			if phase == record.CandidateHarness && !changed[id] {
				continue
			}
			n := 0
			for _, i := range runs[id] {
				r := &p.Checks[i]
				if r.Phase != phase || r.Executor != record.Orchestrator {
					continue
				}
				n++
				if r.TreeBefore != r.TreeAfter {
					return bad(id, "the tree moved during the %s run (RM-VERIFY-002)", phase)
				}
				// The rule is stricter than the verdict's when a policy
				// sets fail_on_skipped_check: false: an unproven result may
				// still be merge-ready there, but it is not evidence.
				if r.Coverage != record.Proven {
					return bad(id, "the %s run's coverage is unproven", phase)
				}
				// Status and findings were recomputed from the facts by
				// checkJudgements before this step.
				if phase != record.Baseline && (r.Status != record.Passed || len(r.Findings) > 0) {
					return bad(id, "the %s run did not pass (status %s, exit code %d, timed out %t, %d findings)", phase, r.Status, r.ExitCode, r.TimedOut, len(r.Findings))
				}
				if phase == record.Baseline && len(r.Findings) > 0 {
					return bad(id, "the baseline run is not valid evidence (timed out %t, %d findings)", r.TimedOut, len(r.Findings))
				}
			}
			if n == 0 {
				return bad(id, "no orchestrator %s result", phase)
			}
		}
	}
	approvers := map[string]bool{}
	for _, a := range e.Reviews.Approvals {
		if a.Commit == e.Head {
			approvers[a.Reviewer] = true
		}
	}
	if int64(len(approvers)) < e.Reviews.RequiredApprovals {
		return fail(ReasonRequiredEvidence, "%d approvals on the head commit, %d required", len(approvers), e.Reviews.RequiredApprovals)
	}
	return nil
}
