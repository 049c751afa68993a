package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Expectations schemas (spec § Portable signed-bundle verification).
const (
	ExpectationsSchema         = "runmill.asf-evidence-expectations/v1"
	TerminalExpectationsSchema = "runmill.asf-terminal-evidence-expectations/v1"
)

// Expectations are a verifier host's own observations of a candidate — from
// git, the base policy and the GitHub API, never copied from a bundle — that
// a delivery statement must match exactly (spec: "authoritative candidate,
// policy, check, review, and pull-request observations rather than claims
// copied from the signed statement").
type Expectations struct {
	Schema     string     `json:"schema"`
	Repository Repository `json:"repository"`
	// PullRequest is the pull request number; 0 expects a statement about
	// a commit outside any pull request.
	PullRequest int64  `json:"pull_request"`
	Head        string `json:"head"`
	Base        string `json:"base"`
	MergeBase   string `json:"merge_base"`
	// Landing is the landing commit the verifier host derived from git
	// (the same derivation as the signer's, docs/evidence.md § Landing).
	Landing Landing `json:"landing"`
	// CandidateTree is pkg/treehash's digest of a fresh checkout of the
	// landing commit (of Head when the landing merge conflicts).
	CandidateTree string            `json:"candidate_tree"`
	Policy        PolicyExpectation `json:"policy"`
	// RequiredChecks are the check ids the base policy requires for this
	// change (Discovery without agent proposals); the statement's manifest
	// may require more, never fewer.
	RequiredChecks []string          `json:"required_checks"`
	Reviews        ReviewExpectation `json:"reviews"`
	// Lockfiles are, per commit of the run (landing commit, base), the
	// digests ("sha256:<hex>" of the bytes, read from git) of its
	// dependency files at the repository root — package.json,
	// package-lock.json, go.sum — that exist there. Every check run's
	// prepared install must have been keyed by its commit's lockfile
	// (issue 15). Absent: not checked (an older expectations document).
	Lockfiles map[string]map[string]string `json:"lockfiles,omitempty"`
	// Harness is, per runnable check, the harness its runs must have seen
	// (issue 19), derived from git: a check listed here must record exactly
	// this; a check not listed must have run the candidate tree unaltered.
	Harness []HarnessExpectation `json:"harness,omitempty"`
	// Author is the pull request's author as GitHub names them ("" without
	// a pull request observed); it must be the statement's.
	Author string `json:"author"`
	// Renames are git's renames between the commits the statement
	// compares (issue 24), computed from git here: the statement's must be
	// exactly these. Absent (an older document): the statement may record
	// no rename.
	Renames *record.Renames `json:"renames,omitempty"`
	// ChangeDeclarations are, per check, the declared skips the change
	// adds to and removes from the repository policy (the candidate's
	// .runmill/checks.yaml against the base's), by test id, sorted by
	// check: the manifest's must be exactly these.
	ChangeDeclarations []ChangeDeclarationExpectation `json:"change_declarations,omitempty"`
}

// ChangeDeclarationExpectation is what one check's declared skips become in
// the change.
type ChangeDeclarationExpectation struct {
	CheckID string   `json:"check_id"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

// HarnessExpectation is the harness one check's runs must record.
type HarnessExpectation struct {
	CheckID string `json:"check_id"`
	// Candidate is the candidate run's record; its commit_tree is the
	// candidate tree.
	Candidate harness.Record `json:"candidate"`
	// Tree is pkg/treehash's digest of the candidate with the base's
	// harness laid over it: the candidate run's tree_before.
	Tree string `json:"tree"`
	// Baseline is the baseline run's record (commit_tree aside), for a
	// check that declares a report.
	Baseline *harness.Record `json:"baseline,omitempty"`
}

// LockfileNames are the dependency files Expectations.Lockfiles covers.
var LockfileNames = []string{"package.json", "package-lock.json", "go.sum", "Cargo.lock", "pnpm-lock.yaml", "yarn.lock"}

// dependencyLockfile is the file of a strategy's key that must equal the
// run commit's own.
var dependencyLockfile = map[string]string{"npm": "package-lock.json", "go-modules": "go.sum", "cargo": "Cargo.lock", "pnpm": "pnpm-lock.yaml", "yarn": "yarn.lock"}

// PolicyExpectation is which policy bytes must have governed the run.
type PolicyExpectation struct {
	// ReadFrom is where the repository manifest must have been read.
	ReadFrom discovery.ReadFrom `json:"read_from"`
	// RepositoryDigest is "sha256:<hex>" of .runmill/checks.yaml as read,
	// "" when there is none.
	RepositoryDigest string `json:"repository_digest"`
	// OperatorDigest is "sha256:<hex>" of the operator policy, "" when the
	// run must have had none.
	OperatorDigest string `json:"operator_digest"`
	// ChangeDeclarations is the operator's verification.change_declarations
	// as the verifier host resolves it; "" (an older document): not bound.
	ChangeDeclarations policy.ChangeDeclarations `json:"change_declarations,omitempty"`
}

// ReviewExpectation is the review state the verifier host observed.
type ReviewExpectation struct {
	// RequiredApprovals is how many distinct approvals on Head the merge
	// needs.
	RequiredApprovals int64 `json:"required_approvals"`
	// Approvals are the approvals observed (reviewer and commit). Every
	// approval the statement records must be among them.
	Approvals []Approval `json:"approvals"`
}

// Approval is one approving review.
type Approval struct {
	Reviewer string `json:"reviewer"`
	Commit   string `json:"commit"`
}

// TerminalExpectations are what a terminal statement must be about.
type TerminalExpectations struct {
	Schema      string     `json:"schema"`
	Repository  Repository `json:"repository"`
	PullRequest int64      `json:"pull_request"`
	Head        string     `json:"head"`
	Base        string     `json:"base"`
}

// maxRequiredChecks bounds an expectations document.
const maxRequiredChecks = 10_000

// ParseExpectations strictly parses a delivery expectations document.
func ParseExpectations(b []byte) (*Expectations, error) {
	var e Expectations
	if err := decodeStrict(b, &e); err != nil {
		return nil, rmerr.Wrap(rmerr.EvidenceExpectations, err, "parsing the expectations document")
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// ParseTerminalExpectations strictly parses a terminal expectations document.
func ParseTerminalExpectations(b []byte) (*TerminalExpectations, error) {
	var e TerminalExpectations
	if err := decodeStrict(b, &e); err != nil {
		return nil, rmerr.Wrap(rmerr.EvidenceExpectations, err, "parsing the terminal expectations document")
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// expectationsSchema returns the schema a document declares, for choosing
// its parser. It reads nothing else.
func expectationsSchema(b []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	_ = json.Unmarshal(b, &head) // the strict parse that follows reports any error
	return head.Schema
}

func (e *Expectations) validate() error {
	var errs rmerr.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.EvidenceExpectations, format, args...).InField(field))
	}
	if e.Schema != ExpectationsSchema {
		bad("schema", "schema is %q, want %q", e.Schema, ExpectationsSchema)
	}
	validateRepository(e.Repository, e.PullRequest, bad)
	for _, c := range []struct{ field, v string }{{"head", e.Head}, {"base", e.Base}, {"merge_base", e.MergeBase}} {
		if !isCommit(c.v) {
			bad(c.field, "%q is not a commit id (40 or 64 lower-case hex digits)", c.v)
		}
	}
	validateLanding(e.Landing, func(field, format string, args ...any) { bad("landing."+field, format, args...) })
	if !isDigest(e.CandidateTree) {
		bad("candidate_tree", "%q is not a tree digest (sha256:<64 lower-case hex digits>)", e.CandidateTree)
	}
	switch e.Policy.ReadFrom {
	case discovery.ReadFromBase, discovery.ReadFromWorkingTree, discovery.ReadFromNone:
	default:
		bad("policy.read_from", "unknown read_from %q", e.Policy.ReadFrom)
	}
	if (e.Policy.ReadFrom == discovery.ReadFromNone) != (e.Policy.RepositoryDigest == "") {
		bad("policy.repository_digest", "a repository policy digest is given exactly when read_from is not %q", discovery.ReadFromNone)
	}
	for _, d := range []struct{ field, v string }{{"policy.repository_digest", e.Policy.RepositoryDigest}, {"policy.operator_digest", e.Policy.OperatorDigest}} {
		if d.v != "" && !isDigest(d.v) {
			bad(d.field, "%q is not sha256:<64 lower-case hex digits>", d.v)
		}
	}
	// A document that expects no check would let an empty run pass the
	// required-evidence step; nothing required is never merge-ready.
	if len(e.RequiredChecks) == 0 || len(e.RequiredChecks) > maxRequiredChecks {
		bad("required_checks", "list 1 to %d required check ids, not %d", maxRequiredChecks, len(e.RequiredChecks))
	}
	if !slices.IsSorted(e.RequiredChecks) || len(slices.Compact(slices.Clone(e.RequiredChecks))) != len(e.RequiredChecks) {
		bad("required_checks", "check ids must be sorted and unique")
	}
	for i, id := range e.RequiredChecks {
		if id == "" {
			bad(fmt.Sprintf("required_checks[%d]", i), "empty check id")
		}
	}
	seenHarness := map[string]bool{}
	for i, h := range e.Harness {
		f := fmt.Sprintf("harness[%d]", i)
		if h.CheckID == "" || seenHarness[h.CheckID] {
			bad(f+".check_id", "empty or repeated check id %q", h.CheckID)
		}
		seenHarness[h.CheckID] = true
		if !isDigest(h.Tree) {
			bad(f+".tree", "%q is not a tree digest", h.Tree)
		}
		if msg := harnessGrammar(&h.Candidate, true, false); msg != "" {
			bad(f+".candidate", "%s", msg)
		}
		if h.Baseline != nil {
			if msg := harnessGrammar(h.Baseline, false, false); msg != "" {
				bad(f+".baseline", "%s", msg)
			}
		}
	}
	if e.Reviews.RequiredApprovals < 0 {
		bad("reviews.required_approvals", "negative")
	}
	switch e.Policy.ChangeDeclarations {
	case "", policy.ChangeDeclarationsWithApproval, policy.ChangeDeclarationsNever:
	default:
		bad("policy.change_declarations", "unknown change_declarations %q", e.Policy.ChangeDeclarations)
	}
	if f := checkRenames(e.Renames); f != nil {
		bad("renames", "%s", f.msg)
	}
	for i, c := range e.ChangeDeclarations {
		if c.CheckID == "" || (i > 0 && e.ChangeDeclarations[i-1].CheckID >= c.CheckID) {
			bad(fmt.Sprintf("change_declarations[%d].check_id", i), "check ids must be non-empty, sorted and unique")
		}
		if !slices.IsSorted(c.Added) || !slices.IsSorted(c.Removed) {
			bad(fmt.Sprintf("change_declarations[%d]", i), "added and removed must be sorted")
		}
	}
	seen := map[Approval]bool{}
	for i, a := range e.Reviews.Approvals {
		if a.Reviewer == "" || !isCommit(a.Commit) {
			bad(fmt.Sprintf("reviews.approvals[%d]", i), "an approval needs a reviewer and a commit id")
		}
		if seen[a] {
			bad(fmt.Sprintf("reviews.approvals[%d]", i), "approval listed twice")
		}
		seen[a] = true
	}
	return errs.Err()
}

func (e *TerminalExpectations) validate() error {
	var errs rmerr.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.EvidenceExpectations, format, args...).InField(field))
	}
	if e.Schema != TerminalExpectationsSchema {
		bad("schema", "schema is %q, want %q", e.Schema, TerminalExpectationsSchema)
	}
	validateRepository(e.Repository, e.PullRequest, bad)
	for _, c := range []struct{ field, v string }{{"head", e.Head}, {"base", e.Base}} {
		if !isCommit(c.v) {
			bad(c.field, "%q is not a commit id (40 or 64 lower-case hex digits)", c.v)
		}
	}
	return errs.Err()
}

func validateRepository(r Repository, pr int64, bad func(field, format string, args ...any)) {
	if r.Name == "" {
		bad("repository.name", "empty repository name")
	}
	if r.ID < 0 {
		bad("repository.id", "negative repository id")
	}
	if pr < 0 {
		bad("pull_request", "negative pull request number")
	}
}

// Encode validates e and returns it as indented JSON.
func (e Expectations) Encode() ([]byte, error) {
	if e.Schema == "" {
		e.Schema = ExpectationsSchema
	}
	fillNilSlices(&e)
	if err := e.validate(); err != nil {
		return nil, err
	}
	return encodeIndented(e)
}

// Encode validates e and returns it as indented JSON.
func (e TerminalExpectations) Encode() ([]byte, error) {
	if e.Schema == "" {
		e.Schema = TerminalExpectationsSchema
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return encodeIndented(e)
}

// encodeIndented writes v as indented JSON whose strings are escaped the
// RFC 8785 way (encoding/json would write \u003c for '<' and \u2028, which
// the strict decoder refuses as second spellings).
func encodeIndented(v any) ([]byte, error) {
	c, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, c, "", "  "); err != nil {
		return nil, fmt.Errorf("indenting JSON: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// validateLanding holds a landing record to its shape: a commit and its
// tree, or conflicts and neither.
func validateLanding(l Landing, bad func(field, format string, args ...any)) {
	if l.Behind < 0 {
		bad("behind", "%d is negative", l.Behind)
	}
	if !slices.IsSorted(l.Conflicts) || len(slices.Compact(slices.Clone(l.Conflicts))) != len(l.Conflicts) || slices.Contains(l.Conflicts, "") {
		bad("conflicts", "paths must be non-empty, sorted and unique")
	}
	if l.Conflicted() {
		if l.Commit != "" || l.GitTree != "" || l.Merged {
			bad("commit", "a conflicted landing has no commit, git_tree or merge")
		}
		return
	}
	if !isCommit(l.Commit) || !isCommit(l.GitTree) {
		bad("commit", "commit %q and git_tree %q must be object ids (40 or 64 lower-case hex digits)", l.Commit, l.GitTree)
	}
	if l.Merged != (l.Behind > 0) {
		bad("merged", "merged is %v with %d commits behind: a head behind its base lands as a merge, one containing it as itself", l.Merged, l.Behind)
	}
}
