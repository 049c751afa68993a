package evidence

import (
	"encoding/json"
	"slices"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// The wire identifiers of DESIGN.md § Evidence wire format. They are part of
// the interface: a verifier refuses anything else.
const (
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// DeliveryPredicateType marks a delivery statement: what one run proved
	// about one candidate commit.
	DeliveryPredicateType = "https://runmill.dev/asf-evidence/v1"
	// TerminalPredicateType marks a terminal statement: how a run ended,
	// what it cleaned up, what it consumed and what it touched.
	TerminalPredicateType = "https://runmill.dev/asf-terminal-evidence/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// BundleMediaType is the Sigstore bundle v0.3 media type.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// DigestAlgGitCommit is the subject digest algorithm (in-toto's
	// "gitCommit"): the candidate commit's object id.
	DigestAlgGitCommit = "gitCommit"
)

// Predicate is one of the runmill predicates.
type Predicate interface {
	Delivery | Terminal | Shard
}

// Statement is an in-toto Statement v1 carrying a runmill predicate. Every
// runmill field lives in Predicate (DESIGN.md); the envelope fields are
// in-toto's, spelled as in-toto spells them.
type Statement[P Predicate] struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     P         `json:"predicate"`
}

// Subject names the candidate commit. A runmill statement has exactly one.
type Subject struct {
	// Name is SubjectName(repository, head): "git+<repository>@<head>".
	Name   string        `json:"name"`
	Digest SubjectDigest `json:"digest"`
}

// SubjectDigest holds the commit id under in-toto's gitCommit algorithm, so
// `cosign verify-blob-attestation --digest <head> --digestAlg gitCommit`
// matches it.
type SubjectDigest struct {
	GitCommit string `json:"gitCommit"`
}

// SubjectName is the one subject name of a statement about head in repository.
func SubjectName(repository, head string) string { return "git+" + repository + "@" + head }

// Repository identifies the repository under verification.
type Repository struct {
	// Name is "owner/name" on GitHub, or the name the operator gave a
	// repository that has no forge.
	Name string `json:"name"`
	// ID is GitHub's numeric repository id (stable across renames); 0 when
	// the run did not consult GitHub.
	ID int64 `json:"id"`
}

// Candidate is what a delivery statement is about: the exact commits and
// tree the verdict describes.
type Candidate struct {
	Repository Repository `json:"repository"`
	// PullRequest is the pull request number, 0 when the run verified a
	// commit outside any pull request.
	PullRequest int64 `json:"pull_request"`
	// Head is the candidate commit (the subject).
	Head string `json:"head"`
	// Base is the base commit: the repository policy is read there and the
	// baseline runs measure it (spec § 1, § 3).
	Base string `json:"base"`
	// MergeBase is git merge-base of Base and Head: where the change
	// forked. Informational since issue 24; nothing runs there.
	MergeBase string `json:"merge_base"`
	// Landing is what Head lands as on Base: the commit and git tree every
	// candidate run measured.
	Landing Landing `json:"landing"`
	// Tree is pkg/treehash's digest of a fresh checkout of the landing
	// commit (of Head when the landing merge conflicts), "sha256:<hex>":
	// every candidate run must have measured exactly it.
	Tree string `json:"tree"`
	// Author is the pull request's author as GitHub names them, "" when
	// no pull request was observed: an approval counts for the change's
	// own declared skips only when someone else gave it (issue 24).
	Author string `json:"author"`
}

// Landing is the change as it would land on the base tip (issue 24,
// docs/outcome.md § The landing tree): the head itself when it contains
// the base, else git's three-way merge of base and head in a synthetic
// merge commit (parents base then head, author and committer "runmill
// <runmill@invalid>" at 1970-01-01T00:00:00Z, so anyone derives the same
// id from git).
type Landing struct {
	// BaseRef names the base as the run was given it (the pull request's
	// target branch, or the --base revision when it is not a commit id);
	// empty when the base was given as a commit id.
	BaseRef string `json:"base_ref"`
	// Commit is the landing commit; empty when the merge conflicts.
	Commit string `json:"commit"`
	// GitTree is Commit's git tree id; empty when the merge conflicts.
	GitTree string `json:"git_tree"`
	// Merged: Commit is the synthetic merge, not Head.
	Merged bool `json:"merged"`
	// Behind is how many commits of Base the head lacks.
	Behind int `json:"behind"`
	// Conflicts are the paths git's merge could not merge, sorted; every
	// candidate run records them (record.CheckRun.LandingConflicts).
	Conflicts []string `json:"conflicts"`
}

// Equal reports whether c and o describe the same candidate.
func (c Candidate) Equal(o Candidate) bool {
	cl, ol := c.Landing, o.Landing
	return c.Repository == o.Repository && c.PullRequest == o.PullRequest && c.Head == o.Head && c.Base == o.Base &&
		c.MergeBase == o.MergeBase && c.Tree == o.Tree && cl.BaseRef == ol.BaseRef && cl.Commit == ol.Commit &&
		cl.GitTree == ol.GitTree && cl.Merged == ol.Merged && cl.Behind == ol.Behind && slices.Equal(cl.Conflicts, ol.Conflicts)
}

// measured is the commit candidate runs check out: Commit, or head when
// the merge conflicts (they measure its tree and run nothing).
func (l Landing) measured(head string) string {
	if l.Conflicted() {
		return head
	}
	return l.Commit
}

// Conflicted reports whether the change does not merge with the base.
func (l Landing) Conflicted() bool { return len(l.Conflicts) > 0 }

// Delivery is the predicate of a delivery statement.
type Delivery struct {
	// RunmillVersion is the version of the runmill that signed.
	RunmillVersion string `json:"runmill_version"`
	// IssuedAt is when the statement was signed, RFC 3339 in UTC. It is
	// asserted by the signer, not proven (docs/evidence.md § Trust model).
	IssuedAt string `json:"issued_at"`
	// RunID identifies the run on the signer's side.
	RunID     string    `json:"run_id"`
	Candidate Candidate `json:"candidate"`
	// Manifest is the resolved required set exactly as Discovery produced
	// it, including the policy digests and read_from.
	Manifest discovery.Manifest `json:"manifest"`
	// Checks is every check run the orchestrator recorded, baseline and
	// candidate, in execution order.
	Checks []record.CheckRun `json:"checks"`
	// Remote is the reconciled conclusion of every remote (GitHub) context.
	Remote []record.RemoteResult `json:"remote"`
	// PendingContexts are required remote contexts still inside their wait
	// window when the verdict was taken.
	PendingContexts []string `json:"pending_contexts"`
	// Failures are failures the orchestrator decided outside any check run
	// (RM-CI-002, RM-VERIFY-005 …); they are an input of the verdict.
	Failures []record.Finding `json:"failures"`
	// Reviews are the pull-request reviews the orchestrator observed.
	Reviews []Review `json:"reviews"`
	// Dependencies are the dependency diffs between the baseline commit and
	// the candidate, one per strategy the manifest's checks declare.
	Dependencies []DependencyDiff `json:"dependencies,omitempty"`
	// Renames are git's renames between the baseline runs' commit and the
	// candidate runs' (issue 24): what pkg/outcome maps a moved test's id
	// through. Absent in older evidence (then no test moved).
	Renames *record.Renames `json:"renames,omitempty"`
	// Sandbox is the sandbox probe: what the runtime measurably enforced.
	// Its shape belongs to internal/sandbox; here it is any JSON object.
	Sandbox json.RawMessage `json:"sandbox"`
	// Verdict is the verdict the orchestrator took. A verifier recomputes it
	// from the records above and requires equality.
	Verdict verdict.Verdict `json:"verdict"`
	// Shards are the shard bundles a merged verification was taken from
	// (`evidence merge`); absent for a run that was not sharded.
	Shards []ShardRef `json:"shards,omitempty"`
	// BaseProof marks a base proof (`verify --prove-base`): the baselines
	// of every report check at one base commit (candidate.head and
	// candidate.base), run so that later verifications against that commit
	// reuse them. It holds baseline runs only, its verdict is never
	// merge-ready, and a delivery verifier refuses it as a change's
	// verdict (bindDelivery). Absent (false) in every other statement.
	BaseProof bool `json:"base_proof,omitempty"`
}

// Review is one pull-request review.
type Review struct {
	Reviewer string `json:"reviewer"`
	// State is GitHub's review state in lower case: "approved",
	// "changes_requested", "commented" or "dismissed".
	State string `json:"state"`
	// Commit is the commit the review was submitted on.
	Commit string `json:"commit"`
}

// Terminal is the predicate of a terminal statement, signed at the end of
// every run, successful or not.
type Terminal struct {
	RunmillVersion string `json:"runmill_version"`
	IssuedAt       string `json:"issued_at"`
	RunID          string `json:"run_id"`
	// Candidate names what the run was about; a run may end before a tree
	// or merge base was measured, so this is the smaller set of facts.
	Candidate TerminalCandidate `json:"candidate"`
	// Outcome is how the run ended: "merge-ready", "not-merge-ready" or
	// "no-verdict".
	Outcome string `json:"outcome"`
	// DeliveryDigest is the canonical digest of the delivery statement this
	// run signed, absent when it signed none.
	DeliveryDigest string `json:"delivery_digest,omitempty"`
	// Events is the run's hash-chained event log.
	Events []Event `json:"events"`
	// ChainHead is the digest of the last event.
	ChainHead   string        `json:"chain_head"`
	Cleanup     Cleanup       `json:"cleanup"`
	Budget      []BudgetEntry `json:"budget"`
	SideEffects []SideEffect  `json:"side_effects"`
}

// TerminalCandidate is the subset of Candidate a terminal statement binds.
type TerminalCandidate struct {
	Repository  Repository `json:"repository"`
	PullRequest int64      `json:"pull_request"`
	Head        string     `json:"head"`
	Base        string     `json:"base"`
}

// Event is one entry of the event log. Its digest (EventDigest) is the
// SHA-256 of its canonical JSON, and the next event carries it in Prev.
type Event struct {
	// Seq numbers the events from 0 without gaps.
	Seq int64 `json:"seq"`
	// At is when the event happened, RFC 3339 in UTC.
	At string `json:"at"`
	// Kind names the event ("run.started", "check.finished" …).
	Kind string `json:"kind"`
	// Detail is any JSON object the event carries.
	Detail json.RawMessage `json:"detail,omitempty"`
	// Prev is the digest of the previous event; "" for the first.
	Prev string `json:"prev"`
}

// Cleanup is what the orchestrator observed after tearing the run down:
// every resource it created, looked for again.
type Cleanup struct {
	// Complete is true exactly when every resource was observed gone.
	Complete  bool              `json:"complete"`
	Resources []CleanupResource `json:"resources"`
}

// CleanupResource is one resource the run created.
type CleanupResource struct {
	// Kind is "container", "task", "snapshot", "checkout", "mount",
	// "tempdir", "daemon" or "cgroup" (the run's parent cgroup).
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Gone is true when a fresh look found the resource absent (observed,
	// not assumed from a successful delete call).
	Gone   bool   `json:"gone"`
	Detail string `json:"detail,omitempty"`
}

// BudgetEntry is one budget of one check run against what it consumed.
type BudgetEntry struct {
	CheckID string       `json:"check_id"`
	Phase   record.Phase `json:"phase"`
	// Resource is "wall-time-ms", "cpu-ms", "memory-bytes", "stdout-bytes"
	// or "stderr-bytes"; the name carries the unit.
	Resource string `json:"resource"`
	Limit    int64  `json:"limit"`
	Consumed int64  `json:"consumed"`
	// Exceeded is true exactly when Consumed > Limit.
	Exceeded bool `json:"exceeded"`
}

// SideEffect is one effect of the run outside its own run directory.
type SideEffect struct {
	// Kind is "file" (written outside the run dir), "artifact" (stored in
	// the content-addressed store) or "api-call".
	Kind string `json:"kind"`
	// Target is the path, the artifact address or the method and URL.
	Target string `json:"target"`
	// Digest is the content digest ("sha256:<hex>") where one exists.
	Digest string `json:"digest,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// DeliveryStatement and TerminalStatement are the two statements runmill signs.
type (
	DeliveryStatement = Statement[Delivery]
	TerminalStatement = Statement[Terminal]
)

// NewDeliveryStatement wraps p in a statement whose subject is the candidate
// head, filling empty lists so that the encoding has one form ([] rather than
// null).
func NewDeliveryStatement(p Delivery) *DeliveryStatement {
	fillNilSlices(&p)
	return &DeliveryStatement{
		Type:          StatementType,
		Subject:       []Subject{{Name: SubjectName(p.Candidate.Repository.Name, p.Candidate.Head), Digest: SubjectDigest{GitCommit: p.Candidate.Head}}},
		PredicateType: DeliveryPredicateType,
		Predicate:     p,
	}
}

// NewTerminalStatement is NewDeliveryStatement for a terminal predicate.
func NewTerminalStatement(p Terminal) *TerminalStatement {
	fillNilSlices(&p)
	return &TerminalStatement{
		Type:          StatementType,
		Subject:       []Subject{{Name: SubjectName(p.Candidate.Repository.Name, p.Candidate.Head), Digest: SubjectDigest{GitCommit: p.Candidate.Head}}},
		PredicateType: TerminalPredicateType,
		Predicate:     p,
	}
}
