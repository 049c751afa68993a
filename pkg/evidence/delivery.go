package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/verdict"
)

// Requirements maps a resolved manifest onto the coverage pass's
// requirements. It is the one mapping both the engine (taking the verdict)
// and Verify (recomputing it) use, so the two cannot drift apart.
func Requirements(m *discovery.Manifest) []verdict.Requirement {
	out := make([]verdict.Requirement, 0, len(m.Checks))
	for _, c := range m.Checks {
		out = append(out, Requirement(m, c))
	}
	return out
}

// Requirement maps one manifest check. A check of a repository policy that
// is new in the change (read_from: working-tree) has no baseline contract
// (spec § 1: a new manifest can only add).
func Requirement(m *discovery.Manifest, c discovery.Check) verdict.Requirement {
	r := verdict.Requirement{
		CheckID:     c.ID,
		Required:    c.Required,
		Runnable:    c.Runnable(),
		Remote:      c.HasSource(discovery.SourceGitHub),
		Report:      c.Report != nil,
		NewInChange: m.ReadFrom == discovery.ReadFromWorkingTree && c.DefinedBy == discovery.DefinedByRepository,
	}
	for _, s := range c.Sources {
		r.Sources = append(r.Sources, string(s))
	}
	return r
}

// Facts derives pkg/verdict's facts of one run from its record. A run's
// tree moved exactly when its recorded digests differ; nothing is taken
// from a flag the signer could set independently of what it measured.
func (r *CheckRun) Facts() verdict.Result {
	res := verdict.Result{
		CheckID:      r.CheckID,
		Phase:        r.Phase,
		Executor:     r.Executor,
		Started:      r.Started,
		ExitCode:     r.ExitCode,
		TimedOut:     r.TimedOut,
		OOMKilled:    r.OOMKilled,
		TreeMoved:    r.TreeBefore != r.TreeAfter,
		Observations: r.Observations,
	}
	if rep := r.Report; rep != nil && rep.Inventory != nil {
		res.Report = &verdict.ReportFacts{
			Passed: len(rep.Inventory.Passed), Failed: len(rep.Inventory.Failed), Skipped: len(rep.Inventory.Skipped),
			FailedTests: rep.FailedTests, Faults: rep.Faults, ClaimedFailures: rep.ClaimedFailures, ShownFailures: rep.ShownFailures,
			Duplicates: len(rep.Duplicates),
		}
	}
	return res
}

// Judge decides r's status, coverage and findings from its facts through
// verdict.Judge and stores them in r: what the engine calls once a run's
// facts are complete, and exactly what Verify recomputes.
func Judge(m *discovery.Manifest, r *CheckRun) verdict.Judgement {
	c, _ := m.Check(r.CheckID)
	j := verdict.Judge(Requirement(m, c), r.Facts())
	r.Status, r.Coverage, r.Findings = j.Status, j.Coverage, j.Findings
	return j
}

// VerdictInput derives pkg/verdict's input from the facts a delivery
// predicate records.
func VerdictInput(p *Delivery) verdict.Input {
	in := verdict.Input{
		Requirements:    Requirements(&p.Manifest),
		Results:         make([]verdict.Result, 0, len(p.Checks)),
		Remote:          p.Remote,
		PendingContexts: p.PendingContexts,
		Failures:        p.Failures,
		AllowUnproven:   !p.Manifest.FailOnSkippedCheck,
	}
	for i := range p.Checks {
		in.Results = append(in.Results, p.Checks[i].Facts())
	}
	return in
}

// Decide takes the verdict from p's records and stores it in p.Verdict: what
// the engine calls before signing, and exactly what Verify recomputes.
func Decide(p *Delivery) verdict.Verdict {
	p.Verdict = verdict.Evaluate(VerdictInput(p))
	return p.Verdict
}

// maxMessageLine bounds the first line of a failure message a record keeps.
const maxMessageLine = 200

// ReportFactsOf fills rec's report facts from a parsed inventory: the
// named failed tests, the faults, the summary's claim and the baseline's
// repeated ids. The engine calls it; Verify reads the same fields.
func ReportFactsOf(rec *ReportRecord, inv *report.Inventory) {
	rec.Inventory = ToInventory(inv)
	rec.FailedTests = FailedTestsOf(inv)
	rec.Faults = nil
	for _, f := range inv.Faults {
		rec.Faults = append(rec.Faults, printable.Text(f.Scope+": "+f.Message, maxFault))
	}
	rec.ClaimedFailures, rec.ShownFailures = -1, 0
	if claimed, shown, _ := inv.ClaimsMoreFailures(); inv.Claims != nil && (inv.Claims.Failures != nil || inv.Claims.Errors != nil) {
		rec.ClaimedFailures, rec.ShownFailures = claimed, shown
	}
	rec.Duplicates = slices.Clone(inv.Duplicates)
}

// maxFault bounds one recorded fault.
const maxFault = 1000

// FailedTestsOf lists what a report record names of its failed tests: the
// first verdict.MaxNamedFailures failed ids in order, each with the first
// line of its message.
func FailedTestsOf(inv *report.Inventory) []verdict.FailedTest {
	var out []verdict.FailedTest
	for _, t := range inv.Tests {
		if t.Status == report.Failed {
			out = append(out, verdict.FailedTest{ID: t.ID, Message: report.FirstLine(t.Message, maxMessageLine)})
		}
	}
	return verdict.SortFailedTests(out)
}

// ToInventory converts a parsed report inventory into the statement's form
// (ids sorted per status).
func ToInventory(inv *report.Inventory) *Inventory {
	out := &Inventory{Passed: []report.TestID{}, Failed: []report.TestID{}, Skipped: []report.TestID{}}
	for _, t := range inv.Tests {
		switch t.Status {
		case report.Passed:
			out.Passed = append(out.Passed, t.ID)
		case report.Failed:
			out.Failed = append(out.Failed, t.ID)
		default:
			out.Skipped = append(out.Skipped, t.ID)
		}
	}
	for _, l := range [][]report.TestID{out.Passed, out.Failed, out.Skipped} {
		slices.Sort(l)
	}
	return out
}

// reportInventory converts back, for pkg/outcome.
func (inv *Inventory) reportInventory(rec *ReportRecord) *report.Inventory {
	out := &report.Inventory{Format: rec.Format, Identity: rec.Identity, SHA256: rec.SHA256, Bytes: rec.Size}
	out.Tests = make([]report.Test, 0, len(inv.Passed)+len(inv.Failed)+len(inv.Skipped))
	for _, l := range []struct {
		ids []report.TestID
		st  report.Status
	}{{inv.Passed, report.Passed}, {inv.Failed, report.Failed}, {inv.Skipped, report.Skipped}} {
		for _, id := range l.ids {
			out.Tests = append(out.Tests, report.Test{ID: id, Status: l.st})
		}
	}
	out.Counts = report.Counts{Total: len(out.Tests), Passed: len(inv.Passed), Failed: len(inv.Failed), Skipped: len(inv.Skipped)}
	return out
}

var (
	phases      = []verdict.Phase{verdict.Baseline, verdict.Candidate}
	statuses    = []verdict.Status{verdict.Passed, verdict.Failed}
	coverages   = []verdict.Coverage{verdict.Proven, verdict.Unproven}
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
	return checkShardRefs(p.Shards)
}

func checkRunGrammar(i int, r *CheckRun) *failure {
	bad := func(format string, args ...any) *failure {
		return fail(ReasonStatement, "predicate.checks[%d]: %s", i, fmt.Sprintf(format, args...))
	}
	switch {
	case r.CheckID == "" || r.Executor == "":
		return bad("check_id and executor must not be empty")
	case !slices.Contains(phases, r.Phase):
		return bad("phase %q is not baseline or candidate", r.Phase)
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
	}
	for _, o := range []struct {
		name string
		out  Output
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if !digest.LowerHex(o.out.SHA256, 64) || !isArtifact(o.out.Artifact) || o.out.Size < 0 || o.out.ArtifactSize < 0 {
			return bad("%s needs a hex sha256, sizes ≥ 0 and an artifact address sha256/<hex>", o.name)
		}
	}
	if h := r.Harness; h != nil {
		if msg := harnessGrammar(h, true); msg != "" {
			return bad("harness: %s", msg)
		}
		if len(h.Overlay()) == 0 && h.CommitTree != r.TreeBefore {
			return bad("harness: nothing laid over the commit, yet tree_before %s is not its commit_tree %s", r.TreeBefore, h.CommitTree)
		}
	}
	if f := checkReuseGrammar(r); f != "" {
		return bad("%s", f)
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
			if f := checkInventory(inv); f != nil {
				return bad("report.inventory: %s", f.msg)
			}
		}
	}
	return nil
}

// checkInventory enforces the inventory's one encoding: each list sorted by
// byte order without repeats, no empty id, no id in two lists. It runs in
// linear time on 1 M ids.
func checkInventory(inv *Inventory) *failure {
	lists := [][]report.TestID{inv.Passed, inv.Failed, inv.Skipped}
	for li, l := range lists {
		for i, id := range l {
			if id == "" {
				return fail(ReasonStatement, "an empty test id")
			}
			if i > 0 && l[i-1] >= id {
				return fail(ReasonStatement, "%s ids are not sorted and unique at %q", []string{"passed", "failed", "skipped"}[li], id)
			}
		}
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

// bindDelivery enforces "exact candidate bindings": every fact the verifier
// host observed itself must equal what the statement says it verified.
func (v *verification) bindDelivery() *failure {
	e, p := v.delivery, &v.dst.Predicate
	bad := func(format string, args ...any) *failure { return fail(ReasonBinding, format, args...) }
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
	// have measured exactly the candidate tree, a baseline run the commit
	// the change started from: the merge base of base and head (the base
	// itself when head contains it).
	harnesses := make(map[string]*HarnessExpectation, len(e.Harness))
	for i := range e.Harness {
		harnesses[e.Harness[i].CheckID] = &e.Harness[i]
	}
	for i, r := range p.Checks {
		switch r.Phase {
		case verdict.Candidate:
			if r.Commit != e.Head {
				return bad("predicate.checks[%d] (%s, candidate) ran at commit %s, not the candidate %s", i, r.CheckID, r.Commit, e.Head)
			}
			if f := bindHarness(i, &r, harnesses[r.CheckID], e.CandidateTree); f != nil {
				return f
			}
		case verdict.Baseline:
			if r.Commit != e.MergeBase {
				return bad("predicate.checks[%d] (%s, baseline) ran at commit %s, not the merge base %s", i, r.CheckID, r.Commit, e.MergeBase)
			}
			if h := harnesses[r.CheckID]; h != nil && (h.Baseline == nil || !harness.Equal(r.Harness, h.Baseline)) {
				return bad("predicate.checks[%d] (%s, baseline) records a harness other than the one git shows for the merge base with the base's harness", i, r.CheckID)
			}
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
func bindHarness(i int, r *CheckRun, want *HarnessExpectation, candidateTree string) *failure {
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
		return bad("records a harness other than the one git shows (base's version of each harness file the change edited)")
	case r.Harness.CommitTree != candidateTree:
		return bad("its commit tree %s is not the candidate tree %s", r.Harness.CommitTree, candidateTree)
	case r.TreeBefore != want.Tree:
		return bad("ran tree %s, not the candidate with the base's harness %s", r.TreeBefore, want.Tree)
	}
	return nil
}

// harnessGrammar checks one harness record's encoding; "" when valid.
func harnessGrammar(h *harness.Record, needTree bool) string {
	switch {
	case h.Pinned && (!isCommit(h.Base) || h.Reason != ""):
		return "a pinned harness names its base commit and no reason"
	case !h.Pinned && h.Reason == "":
		return "an unpinned harness says why"
	case needTree && !isDigest(h.CommitTree), !needTree && h.CommitTree != "" && !isDigest(h.CommitTree):
		return "commit_tree must be a sha256:<hex> tree digest"
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
			if f.Base == nil || !h.Pinned {
				return fmt.Sprintf("harness file %s ran the base's version without one, or unpinned", f.Path)
			}
		case harness.FromCommit:
			if f.Base != nil && h.Pinned {
				return fmt.Sprintf("harness file %s exists at the base but ran the commit's version", f.Path)
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
	for i, r := range p.Checks {
		for _, o := range []struct {
			name string
			out  Output
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
		if r.Coverage == verdict.Proven && (r.Report == nil || r.Report.Inventory == nil) {
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
					if r.Conclusion != verdict.Success {
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
		for _, phase := range []verdict.Phase{verdict.Candidate, verdict.Baseline} {
			// A check of a policy new in the change has no baseline
			// contract (spec § 1): its candidate run stands alone.
			if phase == verdict.Baseline && (spec.Report == nil || Requirement(&p.Manifest, spec).NewInChange) {
				continue
			}
			n := 0
			for _, i := range runs[id] {
				r := &p.Checks[i]
				if r.Phase != phase || r.Executor != verdict.Orchestrator {
					continue
				}
				n++
				if r.TreeBefore != r.TreeAfter {
					return bad(id, "the tree moved during the %s run (RM-VERIFY-002)", phase)
				}
				// The rule is stricter than the verdict's when a policy
				// sets fail_on_skipped_check: false: an unproven result may
				// still be merge-ready there, but it is not evidence.
				if r.Coverage != verdict.Proven {
					return bad(id, "the %s run's coverage is unproven", phase)
				}
				// Status and findings were recomputed from the facts by
				// checkJudgements before this step.
				if phase == verdict.Candidate && (r.Status != verdict.Passed || len(r.Findings) > 0) {
					return bad(id, "the candidate run did not pass (status %s, exit code %d, timed out %t, %d findings)", r.Status, r.ExitCode, r.TimedOut, len(r.Findings))
				}
				if phase == verdict.Baseline && len(r.Findings) > 0 {
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

// checkJudgements recomputes every run's status, coverage and findings from
// its recorded facts through verdict.Judge, the function the engine used,
// and requires equality: a signed statement whose recorded status
// contradicts its facts is not evidence (issue 12, "one place decides").
// It also holds each report's named failures to its inventory.
func (v *verification) checkJudgements() *failure {
	p := &v.dst.Predicate
	for i := range p.Checks {
		r := &p.Checks[i]
		bad := func(format string, args ...any) *failure {
			return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s, %s): %s", i, r.CheckID, r.Phase, fmt.Sprintf(format, args...))
		}
		if rep := r.Report; rep != nil && rep.Inventory != nil {
			named := rep.Inventory.Failed[:min(len(rep.Inventory.Failed), verdict.MaxNamedFailures)]
			if len(rep.FailedTests) != len(named) {
				return bad("the report names %d failed tests; its inventory's first %d failed ids must be named", len(rep.FailedTests), len(named))
			}
			for k, t := range rep.FailedTests {
				if t.ID != named[k] {
					return bad("the report's named failed test %q is not its inventory's failed id %q", t.ID, named[k])
				}
			}
		}
		c, _ := p.Manifest.Check(r.CheckID)
		j := verdict.Judge(Requirement(&p.Manifest, c), r.Facts())
		if j.Status != r.Status || j.Coverage != r.Coverage {
			return bad("recorded status %s and coverage %s, but its facts give %s and %s", r.Status, r.Coverage, j.Status, j.Coverage)
		}
		want, _ := json.Marshal(j.Findings)
		have, _ := json.Marshal(verdict.Normalize(r.Findings))
		if !bytes.Equal(want, have) {
			return bad("its recorded findings differ from those its facts give")
		}
	}
	return nil
}

// recomputeVerdict enforces "verdict recomputed from the recorded facts with
// pkg/verdict and equal to the signed one", and, one level down, that the
// preservation and zero-test findings of every candidate run follow from
// the recorded inventories (pkg/outcome), so a signer cannot record a full
// inventory and omit the finding it implies.
func (v *verification) recomputeVerdict() *failure {
	p := &v.dst.Predicate
	if f := recomputeOutcome(p); f != nil {
		return f
	}
	got := verdict.Evaluate(VerdictInput(p))
	want, err1 := json.Marshal(p.Verdict)
	have, err2 := json.Marshal(got)
	if err1 != nil || err2 != nil || !bytes.Equal(want, have) {
		return fail(ReasonVerdictMismatch, "the signed verdict (merge_ready %t) differs from the verdict recomputed from the records (merge_ready %t)", p.Verdict.MergeReady, got.MergeReady)
	}
	mr := p.Verdict.MergeReady
	v.result.MergeReady = &mr
	return nil
}

func isPreservationRule(rule string) bool {
	return strings.HasPrefix(rule, "outcome.preservation.") || strings.HasPrefix(rule, "outcome.declared-skip.")
}

func recomputeOutcome(p *Delivery) *failure {
	specs := checkIndex(&p.Manifest)
	type key struct {
		id    string
		phase verdict.Phase
	}
	runs := map[key][]int{}
	for i, r := range p.Checks {
		if r.Executor == verdict.Orchestrator {
			runs[key{r.CheckID, r.Phase}] = append(runs[key{r.CheckID, r.Phase}], i)
		}
	}
	// Each candidate run is judged on its own, so the runs are shared out
	// to one worker per core; the first failing run in record order is
	// reported, whichever worker found it.
	check := func(i int) *failure {
		r := &p.Checks[i]
		if r.Executor != verdict.Orchestrator || r.Phase != verdict.Candidate || r.Report == nil || r.Report.Inventory == nil {
			return nil
		}
		cand := r.Report.Inventory.reportInventory(r.Report)
		base := runs[key{r.CheckID, verdict.Baseline}]
		if len(base) != 1 || len(runs[key{r.CheckID, verdict.Candidate}]) != 1 {
			return nil // the verdict judges every run; preservation pairs one with one
		}
		b := &p.Checks[base[0]]
		if b.Report == nil || b.Report.Inventory == nil {
			return nil // no baseline inventory: the verdict fails the check itself
		}
		want := withCheck(outcome.Compare(b.Report.Inventory.reportInventory(b.Report), cand, declaredSkips(specs[r.CheckID])), r.CheckID)
		var have []verdict.Finding
		for _, f := range r.Observations {
			if isPreservationRule(f.Rule) {
				have = append(have, f)
			}
		}
		have = withCheck(have, r.CheckID)
		w, _ := json.Marshal(want)
		h, _ := json.Marshal(have)
		if !bytes.Equal(w, h) {
			return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s): its preservation findings differ from those recomputed from the baseline and candidate inventories", i, r.CheckID)
		}
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), 1+len(p.Checks)/64)
	type found struct {
		at int
		f  *failure
	}
	firsts := make([]found, workers)
	var wg sync.WaitGroup
	for w := range workers {
		firsts[w].at = len(p.Checks)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(p.Checks); i += workers {
				if f := check(i); f != nil {
					firsts[w] = found{i, f} // i only grows: the worker's first
					return
				}
			}
		}()
	}
	wg.Wait()
	first := found{at: len(p.Checks)}
	for _, f := range firsts {
		if f.f != nil && f.at < first.at {
			first = f
		}
	}
	return first.f
}

func declaredSkips(c discovery.Check) []policy.DeclaredSkip { return c.DeclaredSkips }

func withCheck(fs []verdict.Finding, id string) []verdict.Finding {
	out := make([]verdict.Finding, len(fs))
	for i, f := range fs {
		if f.Check == "" {
			f.Check = id
		}
		out[i] = f
	}
	return verdict.Normalize(out)
}

// checkMergeReady: a valid result is an authority decision, so it requires a
// merge-ready verdict (spec: a contradictory bundle "never becomes an
// authority decision"; neither does a negative one).
func (v *verification) checkMergeReady() *failure {
	if v.dst.Predicate.Verdict.MergeReady || v.opts.AllowNotMergeReadyUnsafe {
		return nil
	}
	reasons := v.dst.Predicate.Verdict.Reasons()
	msg := "the signed verdict is not merge-ready"
	if len(reasons) > 0 {
		msg += fmt.Sprintf(" (%d reasons; first: %s)", len(reasons), reasons[0].Err().Error())
	}
	return fail(ReasonNotMergeReady, "%s", msg)
}
