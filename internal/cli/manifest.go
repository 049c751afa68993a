package cli

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/runmill/verify/internal/engine"
)

func init() {
	c := &command{
		name:    "manifest",
		usage:   "--repo DIR --base REV --candidate REV [--policy FILE] [--agent-proposals FILE] [--github-contexts a,b]",
		summary: "resolve the required checks for a change (Discovery only) and print them as JSON",
		long: `The manifest is the union of: .runmill/checks.yaml read from the BASE commit
(from the candidate only when the base has none), the operator policy, changed-path
rules over 'git diff BASE...CANDIDATE', GitHub required contexts, and agent-proposed
check ids (configured ids only; unknown ids are ignored and never executed).

Exit: 0 resolved · 1 RM-VERIFY-004 (the repository manifest exists but does not parse) · 2 usage or operator-config error.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		var o engine.DiscoverOptions
		var contexts string
		fs := newFlags(c, s)
		fs.StringVar(&o.RepoDir, "repo", "", "repository `DIR`")
		fs.StringVar(&o.Base, "base", "", "base revision (the policy is read here)")
		fs.StringVar(&o.Candidate, "candidate", "", "candidate revision")
		fs.StringVar(&o.PolicyFile, "policy", "", "operator policy `FILE` (outside the repository)")
		fs.StringVar(&o.ProposalsFile, "agent-proposals", "", "agent-proposed check ids, one per line (`FILE`, or - for stdin)")
		fs.StringVar(&contexts, "github-contexts", "", "comma-separated contexts branch protection requires")
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
		o.Stdin = s.In
		o.GitHubContexts = splitList(contexts)
		o.GitHubConsulted = contexts != ""
		m, err := engine.Discover(ctx, o)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	register(c)
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
