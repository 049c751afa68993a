// Package download fetches the evidence artifact of a GitHub Actions
// workflow run and unpacks it safely: the work behind `runmill evidence
// download`, apart from its flags and printing.
package download

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runmill/verify/internal/github"
	"github.com/runmill/verify/internal/unzip"
	"github.com/runmill/verify/pkg/rmerr"
)

// DefaultArtifactName is the name the action uploads the evidence under
// (its artifact-name input).
const DefaultArtifactName = "runmill-evidence"

// Artifacts is what Run needs of the GitHub API (internal/github's Client).
type Artifacts interface {
	RunArtifacts(ctx context.Context, owner, repo string, runID int64) ([]github.Artifact, error)
	DownloadArtifact(ctx context.Context, owner, repo string, id int64, w io.Writer, max int64) (int64, error)
}

var _ Artifacts = (*github.Client)(nil)

// Options name one artifact of one workflow run and where it goes.
type Options struct {
	Owner, Repo string
	RunID       int64
	Name        string // the artifact's name; a re-run uploads another, the newest wins
	Dir         string // must not exist
	MaxBytes    int64  // the largest archive accepted
}

// Run downloads the newest artifact named o.Name of run o.RunID and unpacks
// it into o.Dir: no member outside the directory, no links, caps on members
// and bytes; an unsafe archive is refused whole. It returns the directory's
// absolute path.
func Run(ctx context.Context, client Artifacts, o Options) (string, error) {
	as, err := client.RunArtifacts(ctx, o.Owner, o.Repo, o.RunID)
	if err != nil {
		return "", err
	}
	a, err := github.PickArtifact(as, o.Name)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", rmerr.Wrap(rmerr.Usage, err, "--out")
	}
	// The archive goes to a temporary file beside the target, so it is on
	// the same file system and never in the directory being created.
	tmp, err := os.CreateTemp(filepath.Dir(abs), ".runmill-download-*.zip")
	if err != nil {
		return "", rmerr.Wrap(rmerr.Usage, err, "creating a temporary file beside %s", o.Dir)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := client.DownloadArtifact(ctx, o.Owner, o.Repo, a.ID, tmp, o.MaxBytes)
	if err != nil {
		return "", err
	}
	if _, err := unzip.Extract(tmp, n, abs, unzip.DefaultLimits); err != nil {
		return "", rmerr.Wrap(rmerr.GitHubArtifact, err, "unpacking artifact %q (id %d)", a.Name, a.ID).
			WithHint("the archive is not one runmill wrote; do not trust it")
	}
	return abs, nil
}

// FindOne finds the one file called name under dir. None, or more than one
// (which would be a choice the archive makes for the verifier), is an error.
func FindOne(dir, name string) (string, error) {
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
