// Package discovery answers runmill's first question (spec § 1): which checks
// does this change have to pass? Resolve builds the required set as a
// monotonic union of four sources; nothing a change or an agent does can
// remove a requirement.
package discovery

import (
	"github.com/runmill/verify/pkg/policy"
)

// Schema names the manifest's JSON shape.
const Schema = "runmill.manifest/v1"

// Source is why a check is in the manifest (spec § 1 table).
type Source string

const (
	SourceRepository  Source = "repository-policy" // checks.yaml at base, or the operator's verification.commands
	SourceChangedPath Source = "changed-path"      // a path rule matched a changed path
	SourceGitHub      Source = "github"            // a context branch protection requires
	SourceAgent       Source = "agent"             // proposed by the coding agent (advisory, additive only)
)

var sourceOrder = map[Source]int{SourceRepository: 0, SourceChangedPath: 1, SourceGitHub: 2, SourceAgent: 3}

// ReadFrom records where the repository manifest was read.
type ReadFrom string

const (
	ReadFromBase        ReadFrom = "base-ref"     // .runmill/checks.yaml at the base commit
	ReadFromWorkingTree ReadFrom = "working-tree" // new in the change: read from the candidate (can only add)
	ReadFromNone        ReadFrom = "none"         // neither base nor candidate has one
)

// Definer says which document a check's command and evidence rules came from.
type Definer string

const (
	DefinedByOperator   Definer = "operator"
	DefinedByRepository Definer = "repository"
)

// Check is one entry of the resolved manifest.
type Check struct {
	ID string `json:"id"`
	// Command is empty for github-sourced checks (satisfied by CI
	// reconciliation) and for ids a path rule requires but nothing defines
	// (RM-VERIFY-001 at the coverage pass).
	Command       string                `json:"command"`
	Report        *policy.ReportSpec    `json:"report,omitempty"`
	DeclaredSkips []policy.DeclaredSkip `json:"declared_skips,omitempty"`
	Timeout       policy.Duration       `json:"timeout,omitempty"`
	Image         string                `json:"image,omitempty"`
	Dependencies  string                `json:"dependencies,omitempty"`
	// Harness is the policy's harness: list (pkg/harness pins these files
	// and the command's own script from the base).
	Harness   []string `json:"harness,omitempty"`
	Required  bool     `json:"required"`
	Sources   []Source `json:"sources"`
	DefinedBy Definer  `json:"defined_by,omitempty"`
	// Reasons say, per source, what put the check here ("changed path
	// migrations/001.sql matches migrations/**").
	Reasons []string `json:"reasons"`
	// SymlinkMatches are the path rules that matched a changed path only
	// through symlinks, one per such reason, in the same order.
	SymlinkMatches []SymlinkMatch `json:"symlink_matches,omitempty"`

	// ChangeDeclaredSkips are the declared_skips entries the change adds
	// (issue 24): in the candidate's .runmill/checks.yaml under this
	// check, by test id absent from the base's. They excuse a test only
	// as the manifest's change_declarations allows. ChangeRemovedSkips
	// are the base's declared test ids the candidate's policy no longer
	// declares: a declaration the change removes excuses nothing and is
	// never stale. Both sorted; only for a repository-defined check of a
	// policy read from the base.
	ChangeDeclaredSkips []policy.DeclaredSkip `json:"change_declared_skips,omitempty"`
	ChangeRemovedSkips  []string              `json:"change_removed_skips,omitempty"`
}

// SymlinkMatch says how a path rule matched through symlinks: the changed
// path Changed is visible at Path, which Pattern matches, by following
// Symlinks in order in the tree of Commit.
type SymlinkMatch struct {
	Pattern  string       `json:"pattern"`
	Path     string       `json:"path"`
	Changed  string       `json:"changed"`
	Commit   string       `json:"commit"`
	Symlinks []SymlinkHop `json:"symlinks"`
}

// SymlinkHop is one symlink a match followed: its path and its target as git
// stores it.
type SymlinkHop struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Runnable reports whether runmill can execute the check itself.
func (c Check) Runnable() bool { return c.Command != "" }

// HasSource reports whether s required or added the check.
func (c Check) HasSource(s Source) bool {
	for _, x := range c.Sources {
		if x == s {
			return true
		}
	}
	return false
}

// PolicyRef identifies the exact bytes of a policy document.
type PolicyRef struct {
	Path   string `json:"path"`
	Commit string `json:"commit,omitempty"` // for the repository policy: the commit it was read at
	Digest string `json:"digest"`           // sha256:<hex> of the exact bytes read
}

// Policies are the documents Discovery read.
type Policies struct {
	Repository *PolicyRef `json:"repository,omitempty"`
	Operator   *PolicyRef `json:"operator,omitempty"`
}

// GitHub records whether branch protection was consulted. Not consulting it
// is recorded, never presented as "none required".
type GitHub struct {
	Consulted bool     `json:"consulted"`
	Contexts  []string `json:"contexts"`
	// Unknown lists the sources (branch protection, rulesets) that refused
	// to answer: the contexts they require are unknown, never none.
	Unknown []UnknownSource `json:"unknown,omitempty"`
	// Excluded are required contexts left out because they are runmill's
	// own job: its verdict is what that context reports, so it cannot be
	// one of the verdict's inputs.
	Excluded []string `json:"excluded,omitempty"`
}

// UnknownSource is a GitHub source whose required contexts are unknown.
type UnknownSource struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// NotTriggered is a configured check whose changed-path rule matched nothing.
type NotTriggered struct {
	ID    string   `json:"id"`
	Paths []string `json:"paths"`
}

// IgnoredProposal is an agent proposal that named no configured check.
type IgnoredProposal struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Conflict records an id both documents define differently; the operator's
// definition won.
type Conflict struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
	Winner Definer  `json:"winner"`
}

// Manifest is the resolved required set.
type Manifest struct {
	Schema             string            `json:"schema"`
	Base               string            `json:"base"`
	Candidate          string            `json:"candidate"`
	ReadFrom           ReadFrom          `json:"read_from"`
	Policies           Policies          `json:"policies"`
	Autonomy           policy.Autonomy   `json:"autonomy"`
	FailOnSkippedCheck bool              `json:"fail_on_skipped_check"`
	ChangedPaths       int               `json:"changed_paths"`
	GitHub             GitHub            `json:"github"`
	Checks             []Check           `json:"checks"`
	NotTriggered       []NotTriggered    `json:"not_triggered"`
	IgnoredProposals   []IgnoredProposal `json:"ignored_proposals"`
	Conflicts          []Conflict        `json:"conflicts"`

	// ChangeDeclarations is the operator's verification.change_declarations
	// (default with_approval): whether the change's own declared skips
	// count.
	ChangeDeclarations policy.ChangeDeclarations `json:"change_declarations"`

	// RequirePinnedHarness is the operator's
	// verification.require_pinned_harness: a candidate run whose harness
	// runmill could not resolve fails (issue 25).
	RequirePinnedHarness bool `json:"require_pinned_harness,omitempty"`
}

// Check returns the entry with id, if any.
func (m *Manifest) Check(id string) (Check, bool) {
	for _, c := range m.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}
