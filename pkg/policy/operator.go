package policy

// Autonomy is how far runmill may act on its own verdict.
type Autonomy string

const (
	PROnly       Autonomy = "pr-only"
	GuardedMerge Autonomy = "guarded-merge"
	Continuous   Autonomy = "continuous"
)

// Operator is the operator's policy.yaml. It lives outside the repository,
// where an inbound pull request cannot reach it, and wins every conflict.
type Operator struct {
	Autonomy     Autonomy     `yaml:"autonomy" json:"autonomy"`
	Verification Verification `yaml:"verification" json:"verification"`
	Budgets      Budgets      `yaml:"budgets" json:"budgets"`
	Risk         Risk         `yaml:"risk" json:"risk"`
	Sandbox      Sandbox      `yaml:"sandbox" json:"sandbox"`
	GitHub       GitHub       `yaml:"github,omitempty" json:"github,omitempty"`
	// Dependencies configures the operator-declared preparation strategies
	// that need operator input (docs/dependencies.md).
	Dependencies Dependencies `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
}

// GitHub says whether the GitHub sources (the contexts branch protection and
// rulesets require, and remote reconciliation) must be consulted.
type GitHub struct {
	// Required makes a run that did not consult them — no token, or an
	// endpoint that refused so the required contexts are unknown — fail with
	// RM-GITHUB-003 instead of passing on local checks alone.
	Required bool `yaml:"required,omitempty" json:"required,omitempty"`
}

// Dependencies is the operator's side of prepared dependencies. npm needs
// nothing here: its input is the source checkout where the operator ran
// npm ci.
type Dependencies struct {
	GoModules GoModules `yaml:"go_modules,omitempty" json:"go_modules,omitempty"`
	Cargo     Cargo     `yaml:"cargo,omitempty" json:"cargo,omitempty"`
}

// Cargo configures dependencies: cargo.
type Cargo struct {
	// Registry is a directory source the operator prepared outside
	// verification (absolute: <name>-<version> crate directories, such
	// as Debian's /usr/share/cargo/registry): a commit with no imported
	// crates takes its Cargo.lock's crates from there.
	Registry string `yaml:"registry,omitempty" json:"registry,omitempty"`
}

// GoModules configures dependencies: go-modules.
type GoModules struct {
	// ModuleCache is the module cache the operator filled with
	// `go mod download` outside verification (absolute). Empty means the
	// host's `go env GOMODCACHE`.
	ModuleCache string `yaml:"module_cache,omitempty" json:"module_cache,omitempty"`
	// BuildCache is an optional prepared Go build cache (a GOCACHE
	// directory, absolute), offered read-only to every go-modules check so
	// a check run compiles only what it changes.
	BuildCache string `yaml:"build_cache,omitempty" json:"build_cache,omitempty"`
	// AllowAdditions lets the candidate's go.sum add lines to the base's
	// (never change or remove one); each added module must be in the
	// module cache too.
	AllowAdditions bool `yaml:"allow_additions,omitempty" json:"allow_additions,omitempty"`
}

// Sandbox configures where checks run.
type Sandbox struct {
	// HostPaths are the host toolchain directories bound read-only into
	// every check (absolute). Empty means runmill's default set
	// (/usr, /bin, /lib… and a few /etc files; docs/sandbox.md).
	HostPaths []string `yaml:"host_paths,omitempty" json:"host_paths,omitempty"`
}

// Verification is the operator's contribution to Discovery and the proof gate.
type Verification struct {
	Commands []CheckSpec `yaml:"commands" json:"commands"`
	// FailOnSkippedCheck defaults to true: an unproven required result blocks
	// merge-readiness. Only pr-only autonomy may set it false.
	FailOnSkippedCheck *bool      `yaml:"fail_on_skipped_check,omitempty" json:"fail_on_skipped_check,omitempty"`
	PathRules          []PathRule `yaml:"path_rules" json:"path_rules"`
	// ChangeDeclarations says whether a declared_skips entry the change
	// itself adds to .runmill/checks.yaml can excuse a test (issue 24):
	// with_approval (the default) when the pull request has an approving
	// review from someone other than its author, never when it must land
	// in a change of its own first.
	ChangeDeclarations ChangeDeclarations `yaml:"change_declarations,omitempty" json:"change_declarations,omitempty"`
	// RequirePinnedHarness makes a candidate run whose command runmill
	// cannot resolve to harness files (pkg/harness.Discover: an unknown
	// program, a variable, a script outside the repository) fail instead of
	// carrying a "harness not pinned" note (issue 25).
	RequirePinnedHarness bool `yaml:"require_pinned_harness,omitempty" json:"require_pinned_harness,omitempty"`
}

// ChangeDeclarations is verification.change_declarations.
type ChangeDeclarations string

const (
	ChangeDeclarationsWithApproval ChangeDeclarations = "with_approval"
	ChangeDeclarationsNever        ChangeDeclarations = "never"
)

// ChangeDeclarationsMode applies the default (with_approval).
func (v Verification) ChangeDeclarationsMode() ChangeDeclarations {
	if v.ChangeDeclarations == "" {
		return ChangeDeclarationsWithApproval
	}
	return v.ChangeDeclarations
}

// FailOnSkipped applies the default (true).
func (v Verification) FailOnSkipped() bool {
	return v.FailOnSkippedCheck == nil || *v.FailOnSkippedCheck
}

// PathRule makes checks required when a changed path matches.
type PathRule struct {
	Paths  []string `yaml:"paths" json:"paths"`
	Checks []string `yaml:"checks" json:"checks"`
}

// Budgets bound what one verification run may consume.
type Budgets struct {
	// RunTimeout bounds the whole run; CheckTimeout is the default per check
	// run for checks that declare none.
	RunTimeout   Duration `yaml:"run_timeout,omitempty" json:"run_timeout,omitempty"`
	CheckTimeout Duration `yaml:"check_timeout,omitempty" json:"check_timeout,omitempty"`
	// MaxOutputBytes caps the stdout and stderr kept per check run (all bytes
	// are still hashed).
	MaxOutputBytes int64 `yaml:"max_output_bytes,omitempty" json:"max_output_bytes,omitempty"`
	// Parallel bounds concurrent check runs (0: number of CPUs).
	Parallel int `yaml:"parallel,omitempty" json:"parallel,omitempty"`
	// CheckoutEntries and CheckoutBytes bound one commit's tree — its
	// entries (files, directories, symlinks, submodules) and its files'
	// bytes — checked from git's objects before any checkout is written
	// (issue 23; RM-LIMIT-002, RM-LIMIT-003). 0 means runmill's defaults
	// (500 000 entries, 2 GiB: internal/git), which a monorepo larger than
	// that raises here.
	CheckoutEntries int64 `yaml:"checkout_entries,omitempty" json:"checkout_entries,omitempty"`
	CheckoutBytes   int64 `yaml:"checkout_bytes,omitempty" json:"checkout_bytes,omitempty"`
}

// Upper bounds of the checkout limits an operator may set: beyond them a
// checkout is no longer something one runner writes per check run.
const (
	MaxCheckoutEntries int64 = 100_000_000
	MaxCheckoutBytes   int64 = 1 << 40
)

// Risk declares paths whose change deserves a person's eye; recorded in the
// evidence so a reviewer of the bundle sees which risky paths a change touched.
type Risk struct {
	HighRiskPaths []string `yaml:"high_risk_paths,omitempty" json:"high_risk_paths,omitempty"`
}
