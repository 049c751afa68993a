package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// shardFlags are verify's --shard, --verification-id and --shard-durations
// (docs/scale.md).
type shardFlags struct {
	spec, verification, durations string
}

func (f *shardFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.spec, "shard", "", "run only shard `K/N` of the runnable checks and sign a shard statement (merge with 'evidence merge')")
	fs.StringVar(&f.verification, "verification-id", "", "with --shard, the `ID` every shard of this one verification shares (default on GitHub Actions: REPOSITORY/actions/runs/RUN_ID)")
	fs.StringVar(&f.durations, "shard-durations", "", "an earlier run's statement or bundle `FILE`: balance the shards by its recorded durations")
}

// verificationID is --verification-id, else on GitHub Actions the workflow
// run's: every job of one workflow run — a matrix of shards, a shard job
// re-run on its own ("Re-run failed jobs") — shares it, and no other run
// does. The attempt is not part of it, so a re-run shard still merges with
// the shards of the attempt it completes, as GitHub's own needs do.
func (f *shardFlags) verificationID(getenv func(string) string) string {
	if f.verification != "" {
		return f.verification
	}
	if getenv("GITHUB_ACTIONS") == "true" && getenv("GITHUB_REPOSITORY") != "" && getenv("GITHUB_RUN_ID") != "" {
		return getenv("GITHUB_REPOSITORY") + "/actions/runs/" + getenv("GITHUB_RUN_ID")
	}
	return ""
}

// apply sets o.Shard and o.ShardDurations. The durations file is read
// without verifying its signature on purpose: it only balances the shares
// (every shard must be given the same file), and the merge verifies that
// every check ran in exactly one shard whatever the file said.
func (f *shardFlags) apply(o *engine.VerifyOptions, getenv func(string) string) error {
	if f.spec == "" {
		for _, fl := range []struct{ name, value string }{{"shard-durations", f.durations}, {"verification-id", f.verification}} {
			if fl.value != "" {
				return rmerr.New(rmerr.Usage, "--%s needs --shard", fl.name).InField("--" + fl.name)
			}
		}
		return nil
	}
	sp, err := evidence.ParseShardSpec(f.spec)
	if err != nil {
		return err
	}
	if sp.VerificationID = f.verificationID(getenv); sp.VerificationID == "" {
		return rmerr.New(rmerr.Usage, "--shard %s needs --verification-id: the id every shard of this verification shares", f.spec).
			InField("--verification-id").
			WithHint("pass the CI's id of this run to every shard (GitLab $CI_PIPELINE_ID, Buildkite $BUILDKITE_BUILD_ID, a Kubernetes Job's uid); on GitHub Actions it defaults to the workflow run")
	}
	if err := evidence.CheckVerificationID(sp.VerificationID); err != nil {
		return err
	}
	o.Shard = &sp
	if f.durations == "" {
		return nil
	}
	b, err := os.ReadFile(f.durations)
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "reading --shard-durations").At(f.durations, 0)
	}
	if p, perr := evidence.PayloadUnverifiedUnsafe(b); perr == nil {
		b = p
	}
	var st struct {
		Predicate struct {
			Checks []record.CheckRun `json:"checks"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "parsing --shard-durations").At(f.durations, 0).
			WithHint("pass the statement.json, evidence.json or shard.json of an earlier run")
	}
	o.ShardDurations = evidence.DurationsOf(st.Predicate.Checks)
	return nil
}

// finishShard prints what a shard run proved. A shard takes no verdict, so
// it exits 0 whenever it wrote its evidence: the merge decides.
func finishShard(s IO, run *engine.Run, asJSON bool) error {
	d := &run.Delivery
	if asJSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			RunID     string            `json:"run_id"`
			Dir       string            `json:"dir"`
			Statement string            `json:"statement"`
			Bundle    string            `json:"bundle,omitempty"`
			Checks    []record.CheckRun `json:"checks"`
		}{run.ID, run.Dir, run.StatementPath, run.BundlePath, d.Checks})
	}
	fmt.Fprintf(s.Out, "SHARD  %s  (candidate %s, base %s): %d check runs, no verdict of its own\n", run.ID, objectid.Short(d.Candidate.Head), objectid.Short(d.Candidate.Base), len(d.Checks))
	for _, c := range d.Checks {
		fmt.Fprintf(s.Out, "  %s\t%s\t%s\t%s\n", c.CheckID, c.Phase, c.Status, c.Coverage)
	}
	fmt.Fprintf(s.Out, "Evidence: %s\n", run.Dir)
	if run.BundlePath == "" {
		fmt.Fprintln(s.Out, "(unsigned: the merge refuses an unsigned shard; pass --signing-key)")
	}
	return nil
}

// mergeOptions are evidence merge's flags.
type mergeOptions struct {
	shards       []string // SHARD_BUNDLE…
	trust        string
	artifactDirs multiFlag
	jobs         multiFlag
	output       outputFlags
	github       githubFlags
}

func newEvidenceMergeCmd(runF func(context.Context, IO, *mergeOptions) error) *command {
	if runF == nil {
		runF = runMerge
	}
	c := &command{
		name:    "evidence merge",
		exit:    exitMerge,
		usage:   "SHARD_BUNDLE… --trust F [--signing-key F] [--out DIR] [--artifacts-dir D]… [--job-result NAME=RESULT]… [--github-repo O/N] [--pr N] [--no-github] [--json] [--github-actions]",
		summary: "verify the shard bundles of one sharded verification and sign one merged verdict",
		long:    mergeLong,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &mergeOptions{}
		fs := newFlags(c, s)
		o.github.register(fs.FlagSet)
		o.output.register(fs, outputHelp{
			out:           "state `DIR` (the merged run goes to DIR/runs/<id>)",
			signingKey:    "Ed25519 PKCS#8 PEM `FILE` (or RUNMILL_SIGNING_KEY) signing the merged bundle",
			json:          "print the merged run's record as JSON on stdout",
			githubActions: "also write the step outputs and job summary of a GitHub Actions step",
		})
		fs.StringVar(&o.trust, "trust", "", "trust document `F` the shard bundles must verify against")
		fs.Var(&o.artifactDirs, "artifacts-dir", "a shard's content-addressed store `D` (repeatable)")
		fs.Var(&o.jobs, "job-result", "`NAME=RESULT` of a shard job (repeatable)")
		if err := fs.parse(args); err != nil {
			return err
		}
		if err := fs.required("trust"); err != nil {
			return err
		}
		if len(fs.pos) == 0 {
			return rmerr.New(rmerr.Usage, "no SHARD_BUNDLE given").WithHint("pass the shard.json of every shard job")
		}
		o.shards, o.github.given = fs.pos, fs.given()
		return runF(ctx, s, o)
	}
	return c
}

const mergeLong = `
Verifies every SHARD_BUNDLE (the shard.json of 'runmill verify --shard K/N') against
--trust: signature, key window, schema. Refuses (RM-EVIDENCE-019), naming both shards
and what differs, shards of another verification id (another run, even of the same
candidate: every shard of one verification is given the same --verification-id, on
GitHub Actions the workflow run's), repository, base, candidate or manifest digest, a
shard given twice and a check in two shards. Then takes the union of their check runs,
names every missing shard and every check no shard ran (RM-VERIFY-001), reconciles the
remote GitHub checks once (with a token, as verify does), recomputes the verdict
through the same decision function as verify, and writes one signed delivery bundle
under --out: runs/<id>/evidence.json, with the shard bundles — and every artifact the
merged statement references (stdout, stderr, reports, a reused baseline's source
bundle) found in the artifacts/ directory beside each bundle or in an --artifacts-dir —
stored in runs/<id>/artifacts, so 'runmill evidence verify --artifacts-dir' re-hashes
them. An artifact no store holds is named on the log.

--job-result NAME=RESULT records what the CI said of a shard job (GitHub's
needs.<job>.result); anything but success makes the merge not merge-ready.

Exit: 0 merge-ready · 1 not merge-ready, or a shard refused · 2 usage.`

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runMerge merges the shards and prints the merged verdict. A refused shard
// (RM-EVIDENCE-…) is a negative answer (exitMerge).
func runMerge(ctx context.Context, s IO, o *mergeOptions) error {
	mo, err := o.engineOptions(s)
	if err != nil {
		return err
	}
	gh := startGitHubStep(s, o.output.githubActions)
	run, err := engine.Merge(ctx, mo)
	if err != nil {
		gh.finish(ctx, nil, err, "")
		return err
	}
	return publishRun(ctx, s, gh, run, o.output.json, "")
}

// engineOptions reads the trust document, the shard bundles and the
// signing key into the engine's options.
func (o *mergeOptions) engineOptions(s IO) (engine.MergeOptions, error) {
	var m engine.MergeOptions
	var err error
	if m.Trust, err = os.ReadFile(o.trust); err != nil {
		return m, rmerr.Wrap(rmerr.Usage, err, "reading the trust document").At(o.trust, 0)
	}
	for _, p := range o.shards {
		// VerifyShard enforces the cap on what this reads.
		b, err := readCapped(nil, p, evidence.DefaultLimits.MaxBundleBytes, "SHARD_BUNDLE")
		if err != nil {
			return m, err
		}
		m.Shards = append(m.Shards, engine.ShardBundle{Name: p, Bytes: b})
		// A shard's run directory holds its store beside its bundle.
		m.ArtifactDirs = append(m.ArtifactDirs, filepath.Join(filepath.Dir(p), "artifacts"))
	}
	m.ArtifactDirs = append(m.ArtifactDirs, o.artifactDirs...)
	m.JobResults = map[string]string{}
	for _, j := range o.jobs {
		name, result, ok := strings.Cut(j, "=")
		if !ok || name == "" {
			return m, rmerr.New(rmerr.Usage, "--job-result %q is not NAME=RESULT", j).InField("--job-result")
		}
		m.JobResults[name] = result
	}
	if m.GitHub, err = o.github.options(os.Getenv, s.Err); err != nil {
		return m, err
	}
	if m.SigningKey, err = loadSigningKey(o.output.signingKey); err != nil {
		return m, err
	}
	m.StateDir = engine.StateDir(o.output.out, os.Getenv)
	m.Progress, m.Version = s.Err, Version
	return m, nil
}
