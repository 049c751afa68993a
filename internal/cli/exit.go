package cli

import (
	"errors"

	"github.com/runmill/verify/pkg/rmerr"
)

// Exit codes of DESIGN.md's command table.
const (
	exitOK       = 0
	exitAnswer   = 1 // a definite negative answer: not merge-ready, invalid report, invalid bundle
	exitUsage    = 2 // usage or operator-config error
	exitNoAnswer = 3 // could not produce a verdict (sandbox, git, disk)
)

// errAnswered marks a negative answer that the command already printed in
// full; Run does not print it again.
var errAnswered = errors.New("answered")

// answer returns an error that maps to exit 1 and prints nothing more.
func answer() error { return errAnswered }

// exitCode is the single place that maps an error to an exit code.
func exitCode(cmd string, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errAnswered) {
		return exitAnswer
	}
	switch rmerr.CodeOf(err) {
	case rmerr.Usage, rmerr.PolicyInvalid, rmerr.PolicyProposals, rmerr.GitRevision,
		rmerr.InitExists, rmerr.InitNothing, rmerr.GitHubOptions:
		return exitUsage
	case rmerr.GitHubArtifact, rmerr.GitHubNotConsulted:
		return exitAnswer
	case rmerr.GitHubAPI:
		if cmd == "evidence download" {
			// The evidence could not be fetched: a negative answer about
			// this run, not a usage error.
			return exitAnswer
		}
	case rmerr.VerifyManifest, rmerr.VerifyNoRunnable, rmerr.VerifyTreeMoved, rmerr.VerifySkipped,
		rmerr.VerifyDependencies, rmerr.CINeverScheduled, rmerr.InitToolchain:
		return exitAnswer
	case rmerr.GitRepository:
		if cmd == "verify" {
			return exitNoAnswer
		}
		return exitUsage
	}
	// Anything uncoded is an environment failure: for verify that is "no
	// verdict"; commands without exit 3 report it as a usage/config error.
	if cmd == "verify" {
		return exitNoAnswer
	}
	return exitUsage
}
