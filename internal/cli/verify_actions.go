package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/runmill/verify/internal/actions"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
)

// githubStep is verify's GitHub Actions side (--github-actions): while the
// run prints check ids, test names and messages the runner reads no
// workflow commands; afterwards the outputs, the job summary and the
// annotations are written. It is an explicit flag rather than
// GITHUB_ACTIONS=true so that a runmill started inside some other step (a
// test suite, a script) never writes into that step's outputs.
type githubStep struct {
	s      IO
	rt     *actions.Runtime
	resume func()
}

// startGitHubStep returns nil (a no-op) unless on.
func startGitHubStep(s IO, on bool) *githubStep {
	if !on {
		return nil
	}
	// Workflow commands go to stderr with the progress they pause over
	// (the runner reads commands on both streams), so stdout stays the
	// machine-readable record --json promises.
	rt := actions.New(s.Err, s.Err, os.Getenv)
	return &githubStep{s: s, rt: rt, resume: rt.StopCommands()}
}

// finish publishes the run, or the error that left it without a verdict.
// A failure to publish is reported but changes no exit code: without the
// verdict output the action's gate step fails anyway.
func (g *githubStep) finish(ctx context.Context, run *engine.Run, verr error, repoDir string) {
	if g == nil {
		return
	}
	g.resume()
	var err error
	if verr != nil {
		err = g.rt.PublishNoVerdict(verr)
	} else {
		r := &actions.Run{Dir: run.Dir, StatementPath: run.StatementPath, BundlePath: run.BundlePath, Delivery: run.Delivery}
		// The candidate's tracked files let annotations name the file a
		// report points at; without them the annotations carry no file.
		if repo, gerr := git.Open(ctx, repoDir); gerr == nil {
			r.Tracked, gerr = repo.TrackedFiles(ctx, run.Delivery.Candidate.Head)
			if gerr != nil {
				fmt.Fprintln(g.s.Err, "runmill: listing the candidate's files for annotations:", gerr)
			}
		}
		err = g.rt.Publish(r)
	}
	if err != nil {
		fmt.Fprintln(g.s.Err, "runmill verify: publishing to GitHub Actions:", err)
	}
}
