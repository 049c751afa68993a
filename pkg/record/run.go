package record

import (
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/report"
)

// Phase is which commit a check run measured (spec § 3: report-producing
// checks run at the base, then at the candidate).
type Phase string

const (
	Baseline  Phase = "baseline"
	Candidate Phase = "candidate"
	// CandidateHarness is the landing commit run with its own harness, no
	// base version laid over it (issue 25): recorded only when the
	// candidate run's harness differs from the commit. It can only add
	// failures; preservation comes from the candidate run alone.
	CandidateHarness Phase = "candidate-harness"
)

// Status is what the orchestrator recorded for one run.
type Status string

const (
	Passed Status = "passed"
	Failed Status = "failed"
)

// Coverage is whether a run proved what it executed (spec § 4 "proven vs
// unproven coverage").
type Coverage string

const (
	Proven   Coverage = "proven"
	Unproven Coverage = "unproven"
)

// Orchestrator is the only executor whose results count (spec § 2 "Who ran
// it counts"); the agent's own runs are advisory telemetry.
const Orchestrator = "orchestrator"

// CheckRun is one recorded execution of one check (spec § "Reading the
// evidence": command, commit, tree hash before and after, executor, exit
// code, duration, output hashes).
type CheckRun struct {
	CheckID string `json:"check_id"`
	Phase   Phase  `json:"phase"`
	// Command is the exact command string that ran.
	Command string `json:"command"`
	// Commit is the commit checked out for the run: the landing commit
	// for the candidate phase (Head itself when it contains Base; Head
	// when the landing merge conflicts and nothing ran), Base for the
	// baseline phase.
	Commit string `json:"commit"`
	// TreeBefore and TreeAfter are pkg/treehash digests of the checkout
	// before and after the command ("sha256:<hex>").
	TreeBefore string `json:"tree_before"`
	TreeAfter  string `json:"tree_after"`
	// Executor is who ran the command; only "orchestrator" counts.
	Executor string `json:"executor"`
	// Started: the command was started in the sandbox; false when runmill
	// refused to run it (an observation says why), and then ExitCode and
	// DurationMS are 0.
	Started    bool   `json:"started"`
	ExitCode   int    `json:"exit_code"`
	TimedOut   bool   `json:"timed_out"`
	OOMKilled  bool   `json:"oom_killed"`
	DurationMS int64  `json:"duration_ms"`
	Stdout     Output `json:"stdout"`
	Stderr     Output `json:"stderr"`
	// Report is the declared report the command wrote, when it wrote one.
	Report *ReportRecord `json:"report,omitempty"`
	// Dependencies is the prepared install the run saw, when its check
	// declares a strategy and one was attached.
	Dependencies *DependencyUse `json:"dependencies,omitempty"`
	// LandingConflicts are the paths git's merge of the base tip and the
	// head could not merge (issue 24): there is no landing tree, so the
	// run did not start. Empty whenever the change merges.
	LandingConflicts []string `json:"landing_conflicts,omitempty"`
	// Harness is the check's harness as the run saw it (issue 19): which
	// files ran in the base's version, which in the commit's, and the tree
	// of the commit alone (TreeBefore is the tree as run).
	Harness *harness.Record `json:"harness,omitempty"`
	// Notes are observations that did not decide anything by themselves.
	Notes []string `json:"notes"`
	// Observations are facts the orchestrator recorded beyond the fields
	// above (report and dependency refusals, output phrases, preservation
	// findings), as pkg/verdict.Judge consumes them.
	Observations []Finding `json:"observations"`

	// Tamper are the constructs of the change's test code that can decide
	// from inside the test process what a candidate run reports (issue 25:
	// pkg/outcome's tamper scan over the files the change adds or edits).
	// Absent when none were found, and on baseline runs.
	Tamper []Tamper `json:"tamper,omitempty"`

	// Moved are the tests of a candidate run that passed at the baseline
	// and were found under the id git's renames (or a parametrized case's
	// renamed ids) map them to (pkg/outcome.Compare, issue 24): preserved,
	// not missing. Sorted; absent when none moved.
	Moved []TestMove `json:"moved,omitempty"`

	// Status, Coverage and Findings are what verdict.Judge decided from the
	// facts above (Judge); a verifier recomputes them and requires
	// equality, so a recorded status can never disagree with its facts.
	Status   Status    `json:"status"`
	Coverage Coverage  `json:"coverage"`
	Findings []Finding `json:"findings"`
	// InputKey is the SHA-256 (lower-case hex) of everything the run's
	// result depends on as the engine saw it (internal/engine/reuse.go):
	// equal keys are the same computation, so a later verification may
	// reuse the run instead of executing it. Absent in older evidence.
	InputKey string `json:"input_key,omitempty"`
	// ReusedFrom is set when this run was not executed but copied, facts
	// and all, from a run of an earlier signed delivery bundle.
	ReusedFrom *ReuseRef `json:"reused_from,omitempty"`
}

// ReuseRef points at the run a reused record was copied from. The bundle is
// an artifact of the reusing run, so `evidence verify --artifacts-dir`
// re-verifies it against the same trust document and holds the record to
// the run it names.
type ReuseRef struct {
	// Bundle is the source delivery bundle's content address
	// ("sha256/<hex>") and BundleSize its length.
	Bundle     string `json:"bundle"`
	BundleSize int64  `json:"bundle_size"`
	// RunID is the source statement's run_id; Index is the run's position
	// in its checks.
	RunID string `json:"run_id"`
	Index int    `json:"index"`
	// Proof: the source bundle is a base proof (`verify --prove-base`),
	// not a verification of a change. Absent (false) otherwise.
	Proof bool `json:"proof,omitempty"`
}

// Output is one captured output stream. The digest and size cover every
// byte the command wrote; the stored artifact may be a bounded prefix.
type Output struct {
	// SHA256 is the lower-case hex SHA-256 of the whole stream.
	SHA256 string `json:"sha256"`
	// Size is the length of the whole stream in bytes.
	Size int64 `json:"size"`
	// Artifact is the content address of the stored bytes, "sha256/<hex>".
	Artifact string `json:"artifact"`
	// ArtifactSize is the length of the stored bytes: Size when the whole
	// stream was kept (then Artifact's digest equals SHA256), less when
	// the capture cap cut it.
	ArtifactSize int64 `json:"artifact_size"`
}

// ReportRecord is a declared report as the orchestrator read it.
type ReportRecord struct {
	// Path is the declared report path inside the checkout.
	Path     string          `json:"path"`
	Format   report.Format   `json:"format"`
	Identity report.Identity `json:"identity,omitempty"`
	// SHA256 and Size describe the report bytes; Artifact stores all of
	// them ("sha256/" + SHA256).
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	Artifact string `json:"artifact"`
	// Inventory is the canonical content of the report; absent when the
	// report did not parse (the run's coverage is then unproven).
	Inventory *Inventory `json:"inventory,omitempty"`
	// FailedTests are the first verdict.MaxNamedFailures failed ids of
	// the inventory, in order, with the first line of their failure
	// message (bounded, escaped): what a finding names.
	FailedTests []FailedTest `json:"failed_tests,omitempty"`
	// Faults are failures the report records outside any test identity
	// (a package that did not build, a TAP "Bail out!"), "scope: message".
	Faults []string `json:"faults,omitempty"`
	// ClaimedFailures is what the report's own summary says failed or
	// errored (JUnit failures + errors), -1 when it says nothing; recorded
	// because a summary claiming more failures than the file shows fails
	// the check.
	ClaimedFailures int64 `json:"claimed_failures"`
	// ShownFailures are the failure elements the file shows (failure,
	// error and rerun elements; a test may carry several), which the claim
	// is held to.
	ShownFailures int64 `json:"shown_failures"`
	// Duplicates are the first report.MaxDuplicatesListed ids a baseline
	// report repeats, sorted. Every occurrence is in Inventory, where a
	// baseline's lists may repeat an id, and keeps preservation authority
	// by count (issue 24).
	Duplicates []report.TestID `json:"duplicates,omitempty"`
	// Files are the files node:test loaded that defined no test, sorted
	// (at most report.MaxFilesListed): node shows each as a passing test
	// named by its path, and it is a file, not a test whose disappearance
	// would be a deletion (docs/reports.md § node:test).
	Files []string `json:"files,omitempty"`
}

// FailedTest is one failed test id with the first line of its message.
type FailedTest struct {
	ID      report.TestID `json:"id"`
	Message string        `json:"message,omitempty"`
}

// Inventory lists a report's test ids by status. Each list is sorted by byte
// order with no repeats and no id appears in two lists, so the encoding is
// one array of strings per status: 1 M ids cost about as many bytes as the
// ids themselves, and order carries no information a signer could vary.
// A baseline's report may repeat an id (ReportRecord.Duplicates): each
// occurrence is listed under its status, so its lists may repeat an id and
// one id may appear in two of them.
type Inventory struct {
	Passed  []report.TestID `json:"passed"`
	Failed  []report.TestID `json:"failed"`
	Skipped []report.TestID `json:"skipped"`
}

// DependencyUse is the prepared install a check run saw (issue 15): the
// strategy, the commit whose lockfile it was validated against, the
// content key of its cache entry and the fingerprint of its tree.
type DependencyUse struct {
	Strategy string `json:"strategy"`
	// PreparedFor is the commit whose lockfile the install was validated
	// against; its lockfile equals the one of the run's commit.
	PreparedFor string `json:"prepared_for"`
	// Key is DependencyKey(Strategy, Inputs).
	Key string `json:"key"`
	// Fingerprint is the pkg/treehash digest of the cached tree.
	Fingerprint string `json:"fingerprint"`
	// Inputs are what decided the tree: digests of the lockfiles
	// ("package-lock.json", "package.json", "go.sum": "sha256:<hex>" of the
	// file's bytes at the commit), the platform and the Node ABI.
	Inputs map[string]string `json:"inputs"`
}
