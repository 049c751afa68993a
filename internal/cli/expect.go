package cli

import (
	"context"
	"os"

	"github.com/runmill/verify/internal/engine"
)

// expectOptions are evidence expect's flags.
type expectOptions struct {
	change   engine.DiscoverOptions // --repo --base --candidate --policy
	out      string
	terminal bool
	github   githubFlags
}

func newEvidenceExpectCmd(runF func(context.Context, IO, *expectOptions) error) *command {
	if runF == nil {
		runF = runExpect
	}
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
		o := &expectOptions{}
		fs := newFlags(c, s)
		o.github.register(fs.FlagSet)
		registerChange(fs, &o.change, false)
		fs.BoolVar(&o.terminal, "terminal", false, "write terminal-bundle expectations")
		fs.StringVar(&o.out, "out", "", "state `DIR` for the fresh checkout")
		// Which of --repo, --base and --candidate are required depends on
		// what GitHub says (runExpect).
		if err := fs.parseStrict(args); err != nil {
			return err
		}
		o.github.given = fs.given()
		return runF(ctx, s, o)
	}
	return c
}

func runExpect(ctx context.Context, s IO, o *expectOptions) error {
	e := engine.ExpectOptions{Discover: o.change}
	var err error
	if e.GitHub, err = o.github.options(os.Getenv, s.Err); err != nil {
		return err
	}
	e.Repository, e.PullRequest = o.github.repo, o.github.pr
	// With a pull request observed on GitHub, its head and base are the
	// candidate and base unless given.
	need := []string{"repo", "base", "candidate"}
	if e.GitHub != nil && e.GitHub.PullRequest > 0 {
		need = need[:1]
	}
	if err := required("runmill evidence expect", o.github.given, need...); err != nil {
		return err
	}
	e.StateDir = engine.StateDir(o.out, os.Getenv)
	doc, err := expectations(ctx, e, o.terminal)
	if err != nil {
		return err
	}
	_, err = s.Out.Write(append(doc, '\n'))
	return err
}

// expectations observes the candidate and encodes the document.
func expectations(ctx context.Context, e engine.ExpectOptions, terminal bool) ([]byte, error) {
	if terminal {
		x, err := engine.ExpectTerminal(ctx, e)
		if err != nil {
			return nil, err
		}
		return x.Encode()
	}
	x, err := engine.Expect(ctx, e)
	if err != nil {
		return nil, err
	}
	return x.Encode()
}
