package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// verifyOptions are verify's flags.
type verifyOptions struct {
	change            engine.DiscoverOptions // --repo --base --candidate --policy --agent-proposals
	output            outputFlags
	containerdAddress string
	parallel          int
	github            githubFlags
	shard             shardFlags
	reuse             reuseFlags
	retention         retentionFlags
	prove             proveFlags
	// noJobSummary: with --github-actions, leave the job summary to
	// `runmill summary` in a later step (the action's, after the upload).
	noJobSummary bool
}

// retentionFlags bound the runs each verify keeps in its state dir
// (engine.Retention; README § Retention): the operator's to choose, never
// the repository's — the policy comes from the pull request's base.
type retentionFlags struct{ runs, days int }

func (f *retentionFlags) register(fs *flag.FlagSet) {
	d := engine.DefaultRetention
	fs.IntVar(&f.runs, "keep-runs", d.MaxRuns, "keep at most `N` runs in the state dir (the newest)")
	fs.IntVar(&f.days, "keep-days", int(d.MaxAge/(24*time.Hour)), "keep no run older than `D` days in the state dir")
}

// retention is what the flags keep; a bound under 1 is refused (keeping
// nothing would prune the runs other runmills are about to reuse, and the
// current run is always kept anyway).
func (f retentionFlags) retention() (engine.Retention, error) {
	if f.runs < 1 || f.days < 1 {
		return engine.Retention{}, rmerr.New(rmerr.Usage, "--keep-runs %d --keep-days %d: each must be at least 1", f.runs, f.days).
			WithHint("pass --keep-runs N and --keep-days D of 1 or more (defaults %d and %d)", engine.DefaultRetention.MaxRuns, int(engine.DefaultRetention.MaxAge/(24*time.Hour)))
	}
	return engine.Retention{MaxRuns: f.runs, MaxAge: time.Duration(f.days) * 24 * time.Hour}, nil
}

func newVerifyCmd(runF func(context.Context, IO, *verifyOptions) error) *command {
	if runF == nil {
		runF = runVerify
	}
	c := &command{
		name:    "verify",
		exit:    exitVerify,
		usage:   "--repo DIR (--base REV --candidate REV | --prove-base REV) [--policy FILE] [--out DIR] [--signing-key FILE] [--agent-proposals FILE] [--containerd-address ADDR] [--parallel N] [--shard K/N [--verification-id ID] [--shard-durations FILE]] [--reuse DIR]... [--trust FILE] [--no-reuse] [--keep-runs N] [--keep-days D] [--github-repo OWNER/NAME] [--pr N] [--github-job NAME] [--check-run [--check-run-name NAME]] [--no-github] [--json] [--github-actions [--no-job-summary]]",
		summary: "run the whole pipeline and write the run's evidence",
		long:    verifyLong,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &verifyOptions{github: githubFlags{verify: true}}
		fs := newFlags(c, s)
		registerChange(fs, &o.change, true)
		o.output.register(fs, outputHelp{
			out:           "state `DIR` (runs, checkouts, sandbox state)",
			signingKey:    "Ed25519 PKCS#8 PEM `FILE` (or RUNMILL_SIGNING_KEY); unsigned without",
			json:          "print the run's record as JSON on stdout",
			githubActions: "also write the step outputs, job summary and annotations of a GitHub Actions step (action.yml sets it)",
		})
		o.github.register(fs.FlagSet)
		o.shard.register(fs.FlagSet)
		o.reuse.register(fs.FlagSet)
		o.retention.register(fs.FlagSet)
		o.prove.register(fs.FlagSet)
		fs.StringVar(&o.containerdAddress, "containerd-address", "", "containerd socket `ADDR` (default: the system socket, else a private daemon)")
		fs.IntVar(&o.parallel, "parallel", 0, "concurrent check runs (0: number of CPUs)")
		fs.BoolVar(&o.noJobSummary, "no-job-summary", false, "with --github-actions: write no job summary; 'runmill summary' writes it in a later step (the action's, once the evidence is uploaded)")
		if err := fs.parse(args); err != nil {
			return err
		}
		if err := fs.noPositional(); err != nil {
			return err
		}
		if err := o.prove.required(fs); err != nil {
			return err
		}
		if _, err := o.retention.retention(); err != nil {
			return err
		}
		o.github.given = fs.given()
		o.prove.apply(o)
		return runF(ctx, s, o)
	}
	return c
}

const verifyLong = `Resolves the required checks (Discovery), runs each in a fresh detached checkout
inside a containerd task (network off, checkout read-only) — first at the baseline
when it declares a report: the merge base of --base and --candidate, where the change
started (--base itself when the candidate contains it; the policy is always read
from --base) — applies the Outcome and Coverage rules and writes the run's evidence
under --out (default $RUNMILL_STATE_DIR, else /var/lib/runmill as root).

With a GitHub token (GITHUB_TOKEN) and a repository (GITHUB_REPOSITORY) it also
reads the pull request (GITHUB_EVENT_PATH's pull_request, or --pr), the contexts the
base branch requires (branch protection and rulesets; a refusal is recorded as
unknown), and after the local checks reconciles the remote checks on the candidate
(runmill's own job --github-job excluded; a required context never scheduled fails
after 10 minutes with RM-CI-002, one still running is waited for up to --github-wait).
Without a token no
GitHub call is made and the evidence says the GitHub sources were not consulted.
The token never enters a sandbox and is never printed.

With --prove-base REV it verifies no change: it runs the baseline of every report
check of REV's policy and the operator's (every path rule taken as matched) at REV,
signs them as a base proof, and exits 0 when every one passed with proven coverage
(1 when some did not: verifications against REV run those themselves). Later
verifications against REV reuse the proof's runs by input key (in the state dir, or
under --reuse DIR). It needs --signing-key and consults no GitHub.

Exit: 0 merge-ready · 1 not merge-ready (any reason) · 2 usage or operator-config error ·
3 no verdict could be produced (sandbox, git, disk).`

// runVerify runs the pipeline and prints its verdict; a shard publishes no
// verdict of its own.
func runVerify(ctx context.Context, s IO, o *verifyOptions) error {
	eo, err := o.engineOptions(s)
	if err != nil {
		return err
	}
	gh := startGitHubStep(s, o.output.githubActions && eo.Shard == nil && !eo.ProveBase)
	if gh != nil {
		gh.rt.NoSummary = o.noJobSummary
	}
	run, err := engine.Verify(ctx, eo)
	if err != nil {
		gh.finish(ctx, nil, err, eo.Discover.RepoDir)
		return err
	}
	if eo.Shard != nil {
		return finishShard(s, run, o.output.json)
	}
	if eo.ProveBase {
		return finishProof(s, run, o.output.json)
	}
	return publishRun(ctx, s, gh, run, o.output.json, eo.Discover.RepoDir)
}

// engineOptions reads what the flags name (event, key, trust and durations
// files, the environment) into the engine's options, saying on stderr what
// will not be consulted or signed.
func (o *verifyOptions) engineOptions(s IO) (engine.VerifyOptions, error) {
	e := engine.VerifyOptions{Discover: o.change, ContainerdAddress: o.containerdAddress, Parallel: o.parallel, ProveBase: o.prove.rev != ""}
	var err error
	if e.GitHub, err = o.github.options(os.Getenv, s.Err); err != nil {
		return e, err
	}
	if err := o.shard.apply(&e, os.Getenv); err != nil {
		return e, err
	}
	e.Repository, e.PullRequest = o.github.repo, o.github.pr
	e.Discover.Stdin = s.In
	e.StateDir = engine.StateDir(o.output.out, os.Getenv)
	if e.Retention, err = o.retention.retention(); err != nil {
		return e, err
	}
	e.Progress = s.Err
	e.Version = Version
	if e.SigningKey, err = loadSigningKey(o.output.signingKey); err != nil {
		return e, err
	}
	if e.SigningKey == nil {
		fmt.Fprintln(s.Err, "runmill: no signing key (--signing-key or RUNMILL_SIGNING_KEY): the evidence is written UNSIGNED")
	}
	return e, o.reuse.apply(&e)
}

// outputFlags are where a verdict-producing command (verify, evidence
// merge) writes and signs its run, and how it prints it.
type outputFlags struct {
	out, signingKey     string
	json, githubActions bool
}

// outputHelp is each output flag's help text in one command.
type outputHelp struct{ out, signingKey, json, githubActions string }

func (f *outputFlags) register(fs *flags, h outputHelp) {
	fs.StringVar(&f.out, "out", "", h.out)
	fs.StringVar(&f.signingKey, "signing-key", "", h.signingKey)
	fs.BoolVar(&f.json, "json", false, h.json)
	fs.BoolVar(&f.githubActions, "github-actions", false, h.githubActions)
}

// registerChange registers the flags naming one change — --repo, --base,
// --candidate, --policy and, with proposals, --agent-proposals — shared by
// verify, manifest and evidence expect.
func registerChange(fs *flags, o *engine.DiscoverOptions, proposals bool) {
	fs.StringVar(&o.RepoDir, "repo", "", "repository `DIR`")
	fs.StringVar(&o.Base, "base", "", "base revision (the policy is read here)")
	fs.StringVar(&o.Candidate, "candidate", "", "candidate revision")
	fs.StringVar(&o.PolicyFile, "policy", "", "operator policy `FILE` (outside the repository)")
	if proposals {
		fs.StringVar(&o.ProposalsFile, "agent-proposals", "", "agent-proposed check ids, one per line (`FILE`, or - for stdin)")
	}
}

// publishRun prints a verdict-producing run (its record as JSON, or the
// console rendering), publishes it to GitHub Actions when asked, and
// answers exit 1 unless it is merge-ready.
func publishRun(ctx context.Context, s IO, gh *githubStep, run *engine.Run, asJSON bool, repoDir string) error {
	if asJSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(runSummary(run)); err != nil {
			return err
		}
	} else {
		printRun(s.Out, run)
	}
	gh.finish(ctx, run, nil, repoDir)
	if !run.MergeReady() {
		return answer()
	}
	return nil
}

// loadSigningKey reads the key from the flag's file or RUNMILL_SIGNING_KEY.
// The key stays in this process: it is never passed to a sandbox.
func loadSigningKey(file string) (*evidence.SigningKey, error) {
	var pem []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, rmerr.Wrap(rmerr.Usage, err, "reading the signing key").At(file, 0)
		}
		pem = b
	case os.Getenv("RUNMILL_SIGNING_KEY") != "":
		pem = []byte(os.Getenv("RUNMILL_SIGNING_KEY"))
		file = "RUNMILL_SIGNING_KEY"
	default:
		return nil, nil
	}
	k, err := evidence.ParseSigningKey(pem)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.Usage, err, "parsing the signing key").At(file, 0).
			WithHint("pass an Ed25519 PKCS#8 PEM key, e.g. from 'runmill evidence keygen'")
	}
	return k, nil
}
