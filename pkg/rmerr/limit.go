package rmerr

// Codes of the bounds on what a repository's content can make runmill do
// (issue 23): each is checked before the work it bounds, from git's objects
// alone, and each refusal names the limit, the measured value and how to
// raise the limit when it is an operator setting. docs/errors.md lists each
// with cause and fix.
const (
	// LimitHarnessFiles: a check's harness (its script and harness:
	// globs, over the base's and the commit's trees) names more files than
	// pkg/harness.MaxFiles.
	LimitHarnessFiles Code = "RM-LIMIT-001"
	// LimitTreeEntries: a commit's tree holds more files, symlinks and
	// submodules than the checkout entry limit (budgets.checkout_entries),
	// or a change touches more paths than twice that.
	LimitTreeEntries Code = "RM-LIMIT-002"
	// LimitTreeBytes: a commit's files hold more bytes than the checkout
	// byte limit (budgets.checkout_bytes).
	LimitTreeBytes Code = "RM-LIMIT-003"
	// LimitTreePaths: a path in a commit's tree is longer than a Linux path
	// can be (4 096 bytes), or its paths together are longer than 512 bytes
	// on average per entry allowed.
	LimitTreePaths Code = "RM-LIMIT-004"
)
