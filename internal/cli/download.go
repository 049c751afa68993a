package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/runmill/verify/internal/download"
	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/pkg/rmerr"
)

// downloadOptions are evidence download's flags.
type downloadOptions struct {
	run     download.Options // Owner, Repo, RunID, Name, Dir, MaxBytes
	token   string
	verify  bool
	trust   string
	expect  string
	withCAS bool   // --artifacts
	now     string // passed on to evidence verify
}

func newEvidenceDownloadCmd(runF func(context.Context, IO, *downloadOptions) error) *command {
	if runF == nil {
		runF = runDownload
	}
	c := &command{
		name:    "evidence download",
		exit:    exitDownload,
		usage:   "--repo OWNER/NAME --run-id N [--name NAME] [--out DIR] [--max-bytes N] [--verify --trust F --expectations F [--artifacts] [--now TIME]]",
		summary: "fetch the evidence artifact of a workflow run",
		long: `
Lists the artifacts of workflow run --run-id, downloads the newest one named
--name (default runmill-evidence; a re-run uploads another) and unpacks it
into --out (default ./runmill-evidence-<run-id>, which must not exist): no
member outside the directory, no links, caps on members and bytes; an
unsafe archive is refused whole. Prints the directory.

With --verify it goes on to 'runmill evidence verify' on the unpacked
evidence.json with --trust and --expectations (and, with --artifacts, the
unpacked content-addressed store as --artifacts-dir); stdout then carries
only the verifier's JSON verdict, the directory goes to stderr.

The token comes from GITHUB_TOKEN (or --github-token), the API from
GITHUB_API_URL. The download's redirect to blob storage never carries it.

Exit: 0 downloaded (and valid) · 1 no usable artifact, download failed, or
invalid bundle · 2 usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o, err := parseDownload(newFlags(c, s), args)
		if err != nil {
			return err
		}
		return runF(ctx, s, o)
	}
	return c
}

func parseDownload(fs *flags, args []string) (*downloadOptions, error) {
	o := &downloadOptions{}
	var repo string
	fs.StringVar(&repo, "repo", "", "repository `OWNER/NAME`")
	fs.Int64Var(&o.run.RunID, "run-id", 0, "workflow run `ID` (github.run_id)")
	fs.StringVar(&o.run.Name, "name", download.DefaultArtifactName, "artifact `NAME` (the action's artifact-name)")
	fs.StringVar(&o.run.Dir, "out", "", "directory to unpack into; must not exist (default ./runmill-evidence-<run-id>)")
	fs.Int64Var(&o.run.MaxBytes, "max-bytes", 1<<30, "largest archive accepted, in `BYTES`")
	fs.StringVar(&o.token, "github-token", "", "GitHub token (default $GITHUB_TOKEN)")
	fs.BoolVar(&o.verify, "verify", false, "verify the downloaded bundle (needs --trust and --expectations)")
	fs.StringVar(&o.trust, "trust", "", "trust document for --verify")
	fs.StringVar(&o.expect, "expectations", "", "expectations document for --verify")
	fs.BoolVar(&o.withCAS, "artifacts", false, "with --verify, also re-hash the unpacked artifacts/ store")
	fs.StringVar(&o.now, "now", "", "with --verify, verify as of this RFC 3339 time")
	if err := fs.parseStrict(args, "repo", "run-id"); err != nil {
		return nil, err
	}
	if o.verify {
		if err := fs.required("trust", "expectations"); err != nil {
			return nil, err
		}
	} else if o.trust != "" || o.expect != "" || o.withCAS || o.now != "" {
		return nil, rmerr.New(rmerr.Usage, "--trust, --expectations, --artifacts and --now belong to --verify").WithHint("add --verify")
	}
	if o.run.RunID <= 0 || o.run.MaxBytes <= 0 {
		return nil, rmerr.New(rmerr.Usage, "--run-id and --max-bytes must be positive").WithHint("run '%s --help'", fs.Name())
	}
	var err error
	if o.run.Owner, o.run.Repo, err = github.SplitRepository(repo); err != nil {
		return nil, rmerr.New(rmerr.Usage, "--repo %q is not OWNER/NAME", repo).InField("--repo")
	}
	if o.run.Dir == "" {
		o.run.Dir = "runmill-evidence-" + strconv.FormatInt(o.run.RunID, 10)
	}
	return o, nil
}

// runDownload downloads and unpacks the artifact, then prints its directory
// or, with --verify, verifies its bundle as 'evidence verify' does.
func runDownload(ctx context.Context, s IO, o *downloadOptions) error {
	tok := o.token
	if tok == "" {
		tok = os.Getenv("GITHUB_TOKEN")
	}
	if tok == "" {
		return rmerr.New(rmerr.Usage, "downloading an artifact needs a GitHub token").
			WithHint("set GITHUB_TOKEN (actions: read on the repository); GitHub serves artifacts to authenticated requests only")
	}
	if _, err := os.Lstat(o.run.Dir); err == nil {
		return rmerr.New(rmerr.Usage, "%s already exists", o.run.Dir).WithHint("choose a new --out; a download never mixes with older files")
	}
	client, err := github.New(github.Options{Token: tok, BaseURL: os.Getenv("GITHUB_API_URL")})
	if err != nil {
		return err
	}
	abs, err := download.Run(ctx, client, o.run)
	if err != nil {
		return err
	}
	if !o.verify {
		_, err := fmt.Fprintln(s.Out, abs)
		return err
	}
	fmt.Fprintln(s.Err, abs)
	bundle, err := download.FindOne(abs, "evidence.json")
	if err != nil {
		return err
	}
	vargs := []string{bundle, "--trust", o.trust, "--expectations", o.expect}
	if o.withCAS {
		vargs = append(vargs, "--artifacts-dir", filepath.Join(filepath.Dir(bundle), "artifacts"))
	}
	if o.now != "" {
		vargs = append(vargs, "--now", o.now)
	}
	return newEvidenceVerifyCmd(nil).run(ctx, s, vargs)
}
