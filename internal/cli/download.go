package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/unzip"
	"github.com/runmill/verify/pkg/rmerr"
)

// DefaultArtifactName is the name the action uploads the evidence under
// (its artifact-name input).
const DefaultArtifactName = "runmill-evidence"

func init() {
	c := &command{
		name:    "evidence download",
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
		return evidenceDownload(ctx, c, s, args, os.Getenv)
	}
	register(c)
}

func evidenceDownload(ctx context.Context, c *command, s IO, args []string, getenv func(string) string) error {
	fs := newFlags(c, s)
	repoFlag := fs.String("repo", "", "repository `OWNER/NAME`")
	runID := fs.Int64("run-id", 0, "workflow run `ID` (github.run_id)")
	name := fs.String("name", DefaultArtifactName, "artifact `NAME` (the action's artifact-name)")
	out := fs.String("out", "", "directory to unpack into; must not exist (default ./runmill-evidence-<run-id>)")
	maxBytes := fs.Int64("max-bytes", 1<<30, "largest archive accepted, in `BYTES`")
	token := fs.String("github-token", "", "GitHub token (default $GITHUB_TOKEN)")
	doVerify := fs.Bool("verify", false, "verify the downloaded bundle (needs --trust and --expectations)")
	trust := fs.String("trust", "", "trust document for --verify")
	expect := fs.String("expectations", "", "expectations document for --verify")
	withArtifacts := fs.Bool("artifacts", false, "with --verify, also re-hash the unpacked artifacts/ store")
	now := fs.String("now", "", "with --verify, verify as of this RFC 3339 time")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional(fs, pos); err != nil {
		return err
	}
	if err := required(fs, "repo", "run-id"); err != nil {
		return err
	}
	if *doVerify {
		if err := required(fs, "trust", "expectations"); err != nil {
			return err
		}
	} else if *trust != "" || *expect != "" || *withArtifacts || *now != "" {
		return rmerr.New(rmerr.Usage, "--trust, --expectations, --artifacts and --now belong to --verify").WithHint("add --verify")
	}
	if *runID <= 0 || *maxBytes <= 0 {
		return rmerr.New(rmerr.Usage, "--run-id and --max-bytes must be positive").WithHint("run '%s --help'", fs.Name())
	}
	owner, repo, err := github.SplitRepository(*repoFlag)
	if err != nil {
		return rmerr.New(rmerr.Usage, "--repo %q is not OWNER/NAME", *repoFlag).InField("--repo")
	}
	tok := *token
	if tok == "" {
		tok = getenv("GITHUB_TOKEN")
	}
	if tok == "" {
		return rmerr.New(rmerr.Usage, "downloading an artifact needs a GitHub token").
			WithHint("set GITHUB_TOKEN (actions: read on the repository); GitHub serves artifacts to authenticated requests only")
	}
	dir := *out
	if dir == "" {
		dir = "runmill-evidence-" + strconv.FormatInt(*runID, 10)
	}
	if _, err := os.Lstat(dir); err == nil {
		return rmerr.New(rmerr.Usage, "%s already exists", dir).WithHint("choose a new --out; a download never mixes with older files")
	}
	client, err := github.New(github.Options{Token: tok, BaseURL: getenv("GITHUB_API_URL")})
	if err != nil {
		return err
	}
	as, err := client.RunArtifacts(ctx, owner, repo, *runID)
	if err != nil {
		return err
	}
	a, err := github.PickArtifact(as, *name)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "--out")
	}
	// The archive goes to a temporary file beside the target, so it is on
	// the same file system and never in the directory being created.
	tmp, err := os.CreateTemp(filepath.Dir(abs), ".runmill-download-*.zip")
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "creating a temporary file beside %s", dir)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := client.DownloadArtifact(ctx, owner, repo, a.ID, tmp, *maxBytes)
	if err != nil {
		return err
	}
	if _, err := unzip.Extract(tmp, n, abs, unzip.DefaultLimits); err != nil {
		return rmerr.Wrap(rmerr.GitHubArtifact, err, "unpacking artifact %q (id %d)", a.Name, a.ID).
			WithHint("the archive is not one runmill wrote; do not trust it")
	}
	if !*doVerify {
		_, err := fmt.Fprintln(s.Out, abs)
		return err
	}
	fmt.Fprintln(s.Err, abs)
	bundle, err := findOne(abs, "evidence.json")
	if err != nil {
		return err
	}
	vargs := []string{bundle, "--trust", *trust, "--expectations", *expect}
	if *withArtifacts {
		vargs = append(vargs, "--artifacts-dir", filepath.Join(filepath.Dir(bundle), "artifacts"))
	}
	if *now != "" {
		vargs = append(vargs, "--now", *now)
	}
	v, _ := lookup([]string{"evidence", "verify"})
	return v.run(ctx, s, vargs)
}

// findOne finds the one file called name under dir. None, or more than one
// (which would be a choice the archive makes for the verifier), is an error.
func findOne(dir, name string) (string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() == name {
			found = append(found, p)
		}
		return err
	})
	if err != nil {
		return "", rmerr.Wrap(rmerr.GitHubArtifact, err, "searching %s", dir)
	}
	if len(found) != 1 {
		return "", rmerr.New(rmerr.GitHubArtifact, "the artifact holds %d files named %s; want exactly one", len(found), name).
			WithHint("an unsigned run uploads no %s: sign runs with --signing-key to verify them", name)
	}
	return found[0], nil
}
