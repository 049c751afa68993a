package rmerr

// Codes of the GitHub Action (internal/actions and the shell steps of
// action.yml, which print them in their messages); docs/errors.md lists each
// with cause and fix.
const (
	// ActionsRuntime: runmill could not write a GitHub Actions runtime file
	// (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY) or refused an output value
	// outside its grammar.
	ActionsRuntime Code = "RM-ACTIONS-001"
	// ActionsPreflight: the runner cannot run runmill (no passwordless sudo,
	// no containerd, not Linux), or not safely (the installed runmill not
	// root's alone, the package manager not confinable); printed by
	// action/preflight.sh, lib.sh and prepare-deps.sh.
	ActionsPreflight Code = "RM-ACTIONS-002"
	// ActionsInput: an input of the action is invalid or missing (no base or
	// candidate outside a pull_request event, policy and policy-file both
	// set, parallel not a number, runmill-version not a version,
	// dependency-scripts in a job with the signing key), or empty where it
	// must not be (policy-required without a policy, an unsigned shard, a
	// merge without trust; named as a fork's on a fork pull request);
	// printed by the action's shell steps.
	ActionsInput Code = "RM-ACTIONS-003"
	// ActionsChecksum: a download the action would run (the release's
	// runmill binary, the Go toolchain of the source build) does not match
	// the checksum committed in the action, or the action's release
	// checksums are malformed or another release's; printed by
	// action/install.sh and lib.sh.
	ActionsChecksum Code = "RM-ACTIONS-004"
)
