package record

import "github.com/runmill/verify/pkg/report"

// Renames are git's rename detection between the two commits a
// verification compares — the baseline runs' and the candidate runs' —
// as the orchestrator recorded it and `evidence expect` computes it again
// (issue 24: moves are facts from git, not guesses). pkg/outcome maps a
// test id's location through them: a test found under its mapped id is
// preserved and recorded as moved.
type Renames struct {
	// From and To are the commits compared (the baseline's, the
	// candidate's).
	From string `json:"from"`
	To   string `json:"to"`
	// Files are the renames `git diff -M` reports, sorted by From then To.
	Files []FileRename `json:"files"`
	// GoPackages are the Go packages whose directory the renames moved,
	// by import path at each commit (go.mod's module path at From for the
	// old directory, at To for the new), sorted.
	GoPackages []PackageMove `json:"go_packages"`
	// Truncated: git reported more renames than budget.Renames (or
	// budget.RenameBytes of paths); the first are kept, and a test whose
	// move lies past them is missing.
	Truncated bool `json:"truncated"`
}

// FileRename is one rename git detected, with its similarity index (50 to
// 100, git's -M threshold being 50).
type FileRename struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Similarity int    `json:"similarity"`
}

// PackageMove is one Go package that moved: its import path at each commit.
type PackageMove struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MoveKind says how a test's new id was derived.
type MoveKind string

const (
	// MovedFile: its location (a file path, or the dotted module path
	// JUnit derives from one) is a file git renamed.
	MovedFile MoveKind = "file"
	// MovedPackage: its location is a Go package whose directory moved.
	MovedPackage MoveKind = "package"
	// MovedParameters: a parametrized case whose function and case count
	// stayed while its ids changed (pytest's test_x[1-2] → test_x[1-3]).
	MovedParameters MoveKind = "parameters"
)

// TestMove is one test that passed at the baseline under From and was
// found at the candidate under To: preserved, and recorded as moved.
type TestMove struct {
	From report.TestID `json:"from"`
	To   report.TestID `json:"to"`
	By   MoveKind      `json:"by"`
}
