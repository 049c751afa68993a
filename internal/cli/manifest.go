package cli

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/discovery"
)

// manifestOptions are manifest's flags.
type manifestOptions struct {
	change   engine.DiscoverOptions // --repo --base --candidate --policy --agent-proposals
	contexts string                 // --github-contexts, comma-separated
}

func newManifestCmd(runF func(context.Context, IO, *manifestOptions) error) *command {
	if runF == nil {
		runF = runManifest
	}
	c := &command{
		name:    "manifest",
		usage:   "--repo DIR --base REV --candidate REV [--policy FILE] [--agent-proposals FILE] [--github-contexts a,b]",
		summary: "resolve the required checks for a change (Discovery only) and print them as JSON",
		long: `The manifest is the union of: .runmill/checks.yaml read from the BASE commit
(from the candidate only when the base has none), the operator policy, changed-path
rules over 'git diff BASE...CANDIDATE' (seen through the symlinks of both trees),
GitHub required contexts, and agent-proposed check ids (configured ids only; unknown
ids are ignored and never executed).

Exit: 0 resolved · 1 RM-VERIFY-004 (the repository manifest exists but does not parse) · 2 usage or operator-config error.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &manifestOptions{}
		fs := newFlags(c, s)
		registerChange(fs, &o.change, true)
		fs.StringVar(&o.contexts, "github-contexts", "", "comma-separated contexts branch protection requires")
		if err := fs.parseStrict(args, "repo", "base", "candidate"); err != nil {
			return err
		}
		return runF(ctx, s, o)
	}
	return c
}

func runManifest(ctx context.Context, s IO, o *manifestOptions) error {
	d := o.change
	d.Stdin = s.In
	d.GitHubContexts = splitList(o.contexts)
	d.GitHubConsulted = o.contexts != ""
	m, hs, err := engine.DiscoverHarness(ctx, d)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	// The manifest as signed, plus each check's resolved harness.
	return enc.Encode(struct {
		*discovery.Manifest
		Harness []engine.CheckHarness `json:"harness"`
	}{m, hs})
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
