package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/rmerr"
)

// depsImportOptions are deps import's flags.
type depsImportOptions struct {
	repo, commit, from, out string
	strategy                string
}

func newDepsImportCmd(runF func(context.Context, IO, *depsImportOptions) error) *command {
	if runF == nil {
		runF = runDepsImport
	}
	c := &command{
		name:    "deps import",
		usage:   "--repo DIR --commit REV --from DIR [--strategy npm|go-modules|cargo|pnpm] [--out DIR]",
		summary: "verify an install made for one commit against its lockfile and import it into the dependency cache",
		long: `Imports, outside verification, an install an operator prepared for one commit so that
verify can run that commit's checks on it (docs/dependencies.md):

  npm         --from is a directory holding REV's package.json and package-lock.json,
              copied from git, where npm ci ran confined: no project .npmrc, its user
              and global configs empty files, git fixed, scripts off. Never run npm in a checkout
              of a commit you do not trust: its .npmrc (git=...) runs the pull
              request's code, which --ignore-scripts does not stop. Its package.json
              and package-lock.json must equal REV's, and its installed inventory,
              platform, architecture and Node ABI must match the lockfile:

                mkdir DIR && for f in package.json package-lock.json; do
                  git -C REPO show REV:$f >DIR/$f; done
                (cd DIR && : >DIR/.user-npmrc && : >DIR/.global-npmrc && \
                  npm_config_userconfig=DIR/.user-npmrc npm_config_globalconfig=DIR/.global-npmrc \
                  npm_config_git="$(command -v git)" \
                  npm_config_ignore_scripts=true npm ci)
                runmill deps import --repo REPO --commit REV --out STATE --from DIR

              The GitHub Action does this for every commit of the run
              (prepare-dependencies; docs/action.md).
  go-modules  --from is a module cache (GOMODCACHE) holding every go.sum module of REV,
              each checked against its go.sum hash.
  cargo       --from is a directory source: <name>-<version> crate directories with
              their .cargo-checksum.json (Debian's /usr/share/cargo/registry, or
              cargo vendor --versioned-dirs run from / with a CARGO_HOME of your own,
              never in a checkout of REV). Exactly REV's Cargo.lock crates are imported,
              each checked against its lockfile entry (docs/dependencies.md § Cargo).
  pnpm        --from is a directory holding REV's package.json and pnpm-lock.yaml,
              copied from git, where pnpm 9 installed them (isolated linker, user and
              global configs empty files, scripts off), never a checkout of REV: its
              .npmrc and pnpm-workspace.yaml are pnpm settings. Every package is checked
              against the lockfile and every installed file against pnpm's store
              (docs/dependencies.md § pnpm).

The install is copied into the content-keyed cache under the state directory (--out,
as for verify: pass the --out the verify that needs it uses; the directory is printed
and is the receipt's state_dir); a file already there, from another commit's install, is linked rather
than copied again. It runs no package manager and contacts no registry.

Exit: 0 imported (the receipt as JSON on stdout) · 1 refused (RM-VERIFY-005, with the
reason) · 2 usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &depsImportOptions{}
		fs := newFlags(c, s)
		fs.StringVar(&o.repo, "repo", "", "repository `DIR`")
		fs.StringVar(&o.commit, "commit", "", "the commit `REV` the install was made for")
		fs.StringVar(&o.from, "from", "", "the install `DIR` (npm: REV's package.json and package-lock.json after a confined npm ci; go-modules: a module cache; cargo: a directory source holding REV's Cargo.lock crates; pnpm: REV's package.json and pnpm-lock.yaml after a confined pnpm install; yarn: where yarn installed REV's package.json and yarn.lock)")
		fs.StringVar(&o.strategy, "strategy", deps.NPM, "dependency `STRATEGY` (npm, go-modules, cargo, pnpm or yarn)")
		fs.StringVar(&o.out, "out", "", "state `DIR` (as for verify; default RUNMILL_STATE_DIR, else the user's state directory)")
		if err := fs.parseStrict(args, "repo", "commit", "from"); err != nil {
			return err
		}
		if !slices.Contains(deps.Strategies, o.strategy) {
			return rmerr.New(rmerr.Usage, "--strategy %q is not one of %s", o.strategy, strings.Join(deps.Strategies, ", ")).WithHint("run '%s --help'", fs.Name())
		}
		return runF(ctx, s, o)
	}
	return c
}

// runDepsImport verifies and imports the install, then prints its receipt.
func runDepsImport(ctx context.Context, s IO, o *depsImportOptions) error {
	repo, err := git.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	commit, err := repo.ResolveCommit(ctx, o.commit, "commit")
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(o.from)
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "resolving --from")
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return rmerr.New(rmerr.Usage, "--from %s is not a directory", abs).WithHint("pass the checkout where npm ci ran (npm) or the module cache (go-modules)")
	}
	state, err := filepath.Abs(engine.StateDir(o.out, os.Getenv))
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "resolving --out")
	}
	res, err := deps.Import(ctx, repo, deps.ImportOptions{Strategy: o.strategy, Commit: commit, From: abs, StateDir: state})
	if err != nil {
		return err
	}
	how := "imported"
	if res.Receipt.Reused {
		how = "already cached, every byte verified"
	}
	// Where it went: a verify with another --out (or none) does not see it.
	fmt.Fprintf(s.Err, "runmill: %s install for %s %s into the state directory %s: cache %s (%d files, %d bytes; %d bytes copied, %d linked from other installs); verify uses it with --out %s\n",
		o.strategy, commit, how, state, res.Receipt.Key, res.Receipt.Files, res.Receipt.Bytes, res.Copy.CopiedBytes, res.Copy.LinkedBytes, state)
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Commit   string         `json:"commit"`
		StateDir string         `json:"state_dir"`
		Receipt  deps.Receipt   `json:"receipt"`
		Copy     deps.CopyStats `json:"copy"`
	}{commit, state, res.Receipt, res.Copy})
}
