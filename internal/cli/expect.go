package cli

import (
	"context"
	"os"

	"github.com/runmill/verify/internal/engine"
)

func init() {
	c := &command{
		name:    "evidence expect",
		usage:   "--repo DIR [--base REV --candidate REV] [--policy FILE] [--pr N] [--github-repo OWNER/NAME] [--github-job NAME] [--terminal] [--out DIR]",
		summary: "write an expectations document from independent observation",
		long: `Observes the candidate for itself — git for head, base and merge base, Discovery over
the BASE policy for the required checks and policy digests, a fresh checkout for the
candidate tree — and prints a runmill.asf-evidence-expectations/v1 document (with
--terminal, runmill.asf-terminal-evidence-expectations/v1). It never reads a bundle:
this is how a verifier host gets facts to hold a bundle to.

With a GitHub token (GITHUB_TOKEN) and --github-repo it asks the API itself for the
repository's numeric id, the pull request's head, base and approvals (--pr), and the
contexts the base branch requires (excluding --github-job, runmill's own check);
--base and --candidate then default to the pull request's, and must equal them when
given.

Exit: 0 · 2 usage or configuration error.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		var o engine.ExpectOptions
		var out string
		var terminal bool
		gf := githubFlags{}
		fs := newFlags(c, s)
		gf.register(fs)
		fs.StringVar(&o.Discover.RepoDir, "repo", "", "repository `DIR`")
		fs.StringVar(&o.Discover.Base, "base", "", "base revision")
		fs.StringVar(&o.Discover.Candidate, "candidate", "", "candidate revision")
		fs.StringVar(&o.Discover.PolicyFile, "policy", "", "operator policy `FILE`")
		fs.BoolVar(&terminal, "terminal", false, "write terminal-bundle expectations")
		fs.StringVar(&out, "out", "", "state `DIR` for the fresh checkout")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if err := noPositional(fs, pos); err != nil {
			return err
		}
		if o.GitHub, err = gf.options(fs, os.Getenv, s.Err); err != nil {
			return err
		}
		o.Repository, o.PullRequest = gf.repo, gf.pr
		// With a pull request observed on GitHub, its head and base are the
		// candidate and base unless given.
		need := []string{"repo", "base", "candidate"}
		if o.GitHub != nil && o.GitHub.PullRequest > 0 {
			need = need[:1]
		}
		if err := required(fs, need...); err != nil {
			return err
		}
		o.StateDir = engine.StateDir(out, os.Getenv)
		var doc []byte
		if terminal {
			e, err := engine.ExpectTerminal(ctx, o)
			if err != nil {
				return err
			}
			doc, err = e.Encode()
			if err != nil {
				return err
			}
		} else {
			e, err := engine.Expect(ctx, o)
			if err != nil {
				return err
			}
			if doc, err = e.Encode(); err != nil {
				return err
			}
		}
		_, err = s.Out.Write(append(doc, '\n'))
		return err
	}
	register(c)
}
