// Package policy holds runmill's two policy documents — the repository's
// .runmill/checks.yaml and the operator's policy.yaml — with strict parsing:
// unknown keys, wrong types, duplicate or empty ids are errors that name file,
// line and field. Unreadable never quietly becomes "no checks required".
package policy

import "time"

// RepoPolicyPath is where a repository declares its checks, read from the base commit.
const RepoPolicyPath = ".runmill/checks.yaml"

// Repository is .runmill/checks.yaml.
type Repository struct {
	Checks []CheckSpec `yaml:"checks" json:"checks"`
}

// CheckSpec is one check as either document declares it.
type CheckSpec struct {
	ID string `yaml:"id" json:"id"`
	// Run is a command string run by `sh -c` inside the sandbox.
	Run           string         `yaml:"run" json:"run"`
	Report        *ReportSpec    `yaml:"report,omitempty" json:"report,omitempty"`
	DeclaredSkips []DeclaredSkip `yaml:"declared_skips,omitempty" json:"declared_skips,omitempty"`
	Timeout       Duration       `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Paths gates the check on changed paths: required only when a changed
	// path matches one of these globs. Empty means always required.
	Paths []string `yaml:"paths,omitempty" json:"paths,omitempty"`
	// Required defaults to true. A non-required check is outside the
	// coverage pass and the proof gate (no result, or an unproven one, is not
	// a failure), but a result that fails still fails the verdict: the spec's
	// anyFailed counts every result.
	Required *bool `yaml:"required,omitempty" json:"required,omitempty"`
	// Image is an OCI image tarball to run the check in (sandbox issue).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Dependencies names an operator-declared preparation strategy
	// (npm, go-modules; dependencies issue).
	Dependencies string `yaml:"dependencies,omitempty" json:"dependencies,omitempty"`
	// Harness lists repository files (paths or globs) the check's command
	// depends on — runner configs, helper scripts. Like the script its
	// command runs directly (sh FILE, bash FILE, ./FILE), they are taken
	// from the base, so a change cannot rewrite how it is tested (issue 19).
	Harness []string `yaml:"harness,omitempty" json:"harness,omitempty"`

	line int // line of the entry in its file, for later diagnostics
}

// IsRequired applies the default (true).
func (c CheckSpec) IsRequired() bool { return c.Required == nil || *c.Required }

// Line is where the check was declared in its file (0 when unknown).
func (c CheckSpec) Line() int { return c.line }

// ReportSpec declares the one report file a check writes.
type ReportSpec struct {
	Path   string `yaml:"path" json:"path"`
	Format string `yaml:"format" json:"format"` // junit | tap | go-json
	// Identity is "" (the spec's rule) or "suite-path" (declared, never guessed).
	Identity string `yaml:"identity,omitempty" json:"identity,omitempty"`
}

// DeclaredSkip authorises exactly one test id to be missing or skipped at the
// candidate although it passed at the base (spec § 4).
type DeclaredSkip struct {
	TestID string `yaml:"test_id" json:"test_id"`
	Cause  string `yaml:"cause" json:"cause"`
}

// Duration is a time.Duration written as "90s" or "10m" in YAML and JSON.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
