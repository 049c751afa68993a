package rmerr

// Codes of the GitHub client (internal/github; issue 6 item 3). A required
// context that never gets scheduled is the spec code CINeverScheduled
// (RM-CI-002), not one of these; docs/errors.md lists each with cause and fix.
const (
	// GitHubOptions: the GitHub client was given impossible options (no
	// token, a base URL that is not an absolute http(s) URL, a non-positive
	// window). Without a token runmill makes no GitHub call at all, so the
	// caller must decide to skip the GitHub sources instead.
	GitHubOptions Code = "RM-GITHUB-001"
	// GitHubAPI: a GitHub API request failed after retries (rate limit or
	// 5xx past the retry window, transport error, malformed answer, or a
	// refusal on an endpoint reconciliation cannot do without).
	GitHubAPI Code = "RM-GITHUB-002"
)

// Codes of the GitHub sources in a verification and of evidence download.
const (
	// GitHubNotConsulted: the operator policy requires the GitHub sources
	// (github: {required: true}) but the run did not consult them (no
	// token) or an endpoint refused, so the required contexts are unknown.
	GitHubNotConsulted Code = "RM-GITHUB-003"
	// GitHubArtifact: a workflow run's evidence artifact cannot be used:
	// absent, expired, over the size cap, or an archive that is unsafe to
	// unpack (path traversal, links, too many or too large members).
	GitHubArtifact Code = "RM-GITHUB-004"
)
