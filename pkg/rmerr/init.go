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
)
