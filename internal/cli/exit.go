package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/rmerr"
)

// Exit codes of DESIGN.md's command table.
const (
	exitOK       = 0
	exitAnswer   = 1 // a definite negative answer: not merge-ready, invalid report, invalid bundle
	exitUsage    = 2 // usage or operator-config error
	exitNoAnswer = 3 // could not produce a verdict (sandbox, git, disk)
)

// exitPolicy is what a command's errors mean beyond the codes every command
// shares. Each command is constructed with one of the policies below, so
// this file holds every exit rule.
type exitPolicy struct {
	// noVerdict: the command has exit 3, so an environment failure (an
	// uncoded error, an unreadable repository) is "no verdict" rather than
	// a usage or configuration error.
	noVerdict bool
	// answers are the codes, or code prefixes ending in "-", that for this
	// command are a negative answer about its subject (exit 1): the report
	// or bundle it was asked about, not how it was asked.
	answers []rmerr.Code
}

var (
	// verify: exit 3 when no verdict could be produced; a change over a
	// bound on repository content (RM-LIMIT-…, issue 23) cannot be
	// verified as it is, a negative answer.
	exitVerify = exitPolicy{noVerdict: true, answers: []rmerr.Code{"RM-LIMIT-"}}
	// evidence download: evidence that could not be fetched is a negative
	// answer about this run, not a usage error.
	exitDownload = exitPolicy{answers: []rmerr.Code{rmerr.GitHubAPI}}
	// evidence merge: a refused shard is a negative answer.
	exitMerge = exitPolicy{answers: []rmerr.Code{"RM-EVIDENCE-"}}
	// report inventory: an invalid report is an answer.
	exitReport = exitPolicy{answers: []rmerr.Code{"RM-REPORT-"}}
)

func (p exitPolicy) answered(code rmerr.Code) bool {
	return code != "" && slices.ContainsFunc(p.answers, func(a rmerr.Code) bool {
		return a == code || strings.HasSuffix(string(a), "-") && strings.HasPrefix(string(code), string(a))
	})
}

// errAnswered marks a negative answer that the command already printed in
// full; Run does not print it again.
var errAnswered = errors.New("answered")

// answer returns an error that maps to exit 1 and prints nothing more.
func answer() error { return errAnswered }

// negative is a negative answer (exit 1) that Run prints like any error:
// inspect's "no such run".
type negative struct{ err error }

func (n negative) Error() string { return n.err.Error() }
func (n negative) Unwrap() error { return n.err }

// exitCode is the single place that maps an error to an exit code.
func exitCode(p exitPolicy, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errAnswered) || errors.As(err, new(negative)) {
		return exitAnswer
	}
	code := rmerr.CodeOf(err)
	if p.answered(code) {
		return exitAnswer
	}
	switch code {
	case rmerr.Usage, rmerr.PolicyInvalid, rmerr.PolicyProposals, rmerr.GitRevision,
		rmerr.InitExists, rmerr.InitNothing, rmerr.GitHubOptions:
		return exitUsage
	case rmerr.GitHubArtifact, rmerr.GitHubNotConsulted:
		return exitAnswer
	case rmerr.VerifyManifest, rmerr.VerifyNoRunnable, rmerr.VerifyTreeMoved, rmerr.VerifySkipped,
		rmerr.VerifyDependencies, rmerr.CINeverScheduled, rmerr.InitToolchain:
		return exitAnswer
	}
	// Anything else (an unreadable repository, an uncoded failure) is an
	// environment failure: "no verdict" for a command that has exit 3; the
	// others report it as a usage/config error.
	if p.noVerdict {
		return exitNoAnswer
	}
	return exitUsage
}
