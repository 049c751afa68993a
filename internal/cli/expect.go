package cli

import (
	"context"
	"os"

	"github.com/runmill/verify/internal/engine"
)

func init() {
	c := &command{
		name:    "evidence expect",
		usage:   "--repo DIR --base REV --candidate REV [--policy FILE] [--pr N] [--github-repo OWNER/NAME] [--terminal] [--out DIR]",
		summary: "write an expectations document from independent observation",
		long: `Observes the candidate for itself — git for head, base and merge base, Discovery over
the BASE policy for the required checks and policy digests, a fresh checkout for the
candidate tree — and prints a runmill.asf-evidence-expectations/v1 document (with
--terminal, runmill.asf-terminal-evidence-expectations/v1). It never reads a bundle:
this is how a verifier host gets facts to hold a bundle to.

Exit: 0 · 2 usage or configuration error.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		var o engine.ExpectOptions
		var out string
		var terminal bool
		var pr int64
		fs := newFlags(c, s)
		fs.StringVar(&o.Discover.RepoDir, "repo", "", "repository `DIR`")
		fs.StringVar(&o.Discover.Base, "base", "", "base revision")
		fs.StringVar(&o.Discover.Candidate, "candidate", "", "candidate revision")
		fs.StringVar(&o.Discover.PolicyFile, "policy", "", "operator policy `FILE`")
		fs.Int64Var(&pr, "pr", 0, "pull request number (0: none)")
		fs.StringVar(&o.Repository, "github-repo", "", "repository name as the bundle records it (`OWNER/NAME`)")
		fs.BoolVar(&terminal, "terminal", false, "write terminal-bundle expectations")
		fs.StringVar(&out, "out", "", "state `DIR` for the fresh checkout")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if err := noPositional(fs, pos); err != nil {
			return err
		}
		if err := required(fs, "repo", "base", "candidate"); err != nil {
			return err
		}
		o.PullRequest = pr
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
