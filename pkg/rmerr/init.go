package rmerr

// Codes of `runmill init`, which writes starter policy files.
const (
	// InitExists: init would overwrite an existing file; it never does.
	InitExists Code = "RM-INIT-001"
	// InitNothing: init recognised no ecosystem to write checks for.
	InitNothing Code = "RM-INIT-002"
	// InitToolchain: a recognised check's toolchain does not work with the
	// interpreter the sandbox sees (python3 without pytest), so init did
	// not write that check; doctor reports the same.
	InitToolchain Code = "RM-INIT-003"
	// InitChecks: `runmill doctor --check checks` ran the base's checks in
	// the sandbox and one failed, or is unproven where the policy's gate
	// blocks on it: the first pull request would not be merge-ready.
	InitChecks Code = "RM-INIT-004"
)
