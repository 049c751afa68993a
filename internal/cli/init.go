package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/internal/initpolicy"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

func init() {
	c := &command{
		name:    "init",
		usage:   "[--repo DIR] [--operator-policy-out FILE]",
		summary: "write a starter .runmill/checks.yaml and an operator policy template",
		long: `Detects the ecosystems at the repository root (go.mod; package.json with jest,
vitest, mocha or node --test; pyproject.toml/pytest; Cargo.toml) and writes
.runmill/checks.yaml with one check per ecosystem whose command writes a report
runmill parses (coverage proven), and an operator policy template (pr-only) that
binds the toolchains this host's sandbox needs: to --operator-policy-out, which
must lie outside the repository, else to stdout. It never overwrites a file.

Exit: 0 written · 2 a file exists (RM-INIT-001), nothing recognised (RM-INIT-002), usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		repo, out := ".", ""
		fl := newFlags(c, s)
		fl.StringVar(&repo, "repo", ".", "repository `DIR`")
		fl.StringVar(&out, "operator-policy-out", "", "write the operator policy template to `FILE` (outside the repository; default stdout)")
		pos, err := parse(fl, args)
		if err != nil {
			return err
		}
		if err := noPositional(fl, pos); err != nil {
			return err
		}
		root, err := filepath.Abs(repo)
		if err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "resolving --repo").At(repo, 0)
		}
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return rmerr.New(rmerr.Usage, "--repo is not a directory").At(repo, 0).WithHint("pass the repository's root directory")
		}
		plan, err := initpolicy.Detect(os.DirFS(root))
		if err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "reading the repository root").At(root, 0)
		}
		if len(plan.Checks) == 0 {
			e := rmerr.New(rmerr.InitNothing, "no ecosystem recognised at the repository root").At(root, 0).
				WithHint("write %s by hand: docs/policy.md, reporter flags in docs/reports.md", policy.RepoPolicyPath)
			if len(plan.Notes) > 0 {
				e.Msg += " (" + strings.Join(plan.Notes, "; ") + ")"
			}
			return e
		}
		files := initpolicy.Render(plan, initpolicy.LocalHost{PATH: os.Getenv("PATH"), Getenv: os.Getenv})

		// Every refusal comes before the first write: init writes both
		// files or neither.
		dir := filepath.Join(root, ".runmill")
		checksFile := filepath.Join(dir, "checks.yaml")
		if st, err := os.Lstat(dir); err == nil && !st.IsDir() {
			return rmerr.New(rmerr.InitExists, ".runmill exists and is not a directory").At(dir, 0).
				WithHint("remove or rename it; init never follows a link out of the repository")
		}
		if err := refuseExisting(checksFile); err != nil {
			return err
		}
		if out != "" {
			abs, err := filepath.Abs(out)
			if err != nil {
				return rmerr.Wrap(rmerr.Usage, err, "resolving --operator-policy-out").At(out, 0)
			}
			parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
			if err != nil {
				return rmerr.Wrap(rmerr.Usage, err, "--operator-policy-out's directory").At(out, 0).
					WithHint("create the directory first")
			}
			if rel, err := filepath.Rel(root, parent); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return rmerr.New(rmerr.Usage, "--operator-policy-out lies inside the repository %s", root).At(out, 0).
					WithHint("write the operator policy outside the repository, where a pull request cannot edit it")
			}
			out = filepath.Join(parent, filepath.Base(abs))
			if err := refuseExisting(out); err != nil {
				return err
			}
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return rmerr.Wrap(rmerr.Usage, err, "creating .runmill").At(dir, 0)
		}
		if err := writeNew(checksFile, files.Checks, 0o644); err != nil {
			return err
		}
		if out != "" {
			if err := writeNew(out, files.Operator, 0o644); err != nil {
				return err
			}
		} else if _, err := s.Out.Write(files.Operator); err != nil {
			return err
		}

		fmt.Fprintf(s.Err, "runmill init: wrote %s with checks: %s\n", checksFile, strings.Join(plan.Ecosystems(), ", "))
		for _, t := range files.Toolchains {
			switch {
			case !t.Found():
				fmt.Fprintf(s.Err, "  %s: NOT FOUND on this host; its check fails until it is installed where the sandbox sees it\n", t.Tool)
			case len(t.Binds) > 0:
				fmt.Fprintf(s.Err, "  %s: %s, outside the default binds; the operator policy binds %s\n", t.Tool, firstOf(t.Host, t.Visible), strings.Join(t.Binds, ", "))
			default:
				fmt.Fprintf(s.Err, "  %s: %s (visible in the sandbox)\n", t.Tool, t.Visible)
			}
			if t.Note != "" {
				fmt.Fprintf(s.Err, "  %s: %s\n", t.Tool, t.Note)
			}
		}
		for _, n := range plan.Notes {
			fmt.Fprintf(s.Err, "  note: %s\n", n)
		}
		where := "stdout"
		if out != "" {
			where = out
		}
		fmt.Fprintf(s.Err, "runmill init: operator policy template on %s; keep it outside the repository.\n", where)
		fmt.Fprintf(s.Err, "next: review and commit %s, then run 'runmill verify --policy FILE' on a change\n", policy.RepoPolicyPath)
		return nil
	}
	register(c)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func refuseExisting(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return rmerr.New(rmerr.InitExists, "file exists; init never overwrites").At(path, 0).
			WithHint("move it away or edit it by hand (docs/policy.md), then run init again")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rmerr.Wrap(rmerr.Usage, err, "checking for an existing file").At(path, 0)
	}
	return nil
}
