package engine

import (
	"context"
	"slices"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
)

// dependencyDiffs are the delivery statement's dependency diffs (issue
// 15): per strategy the manifest's runnable checks declare, what the
// change does to its lockfile between the baseline (merge base) and the
// candidate. A lockfile that cannot be read is left out with a log line:
// the diff informs a reader, the checks' own refusals decide.
func dependencyDiffs(ctx context.Context, repo *git.Repo, m *discovery.Manifest, mergeBase string, logf func(string, ...any)) []evidence.DependencyDiff {
	var strategies []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Dependencies != "" && !slices.Contains(strategies, c.Dependencies) {
			strategies = append(strategies, c.Dependencies)
		}
	}
	slices.Sort(strategies)
	var out []evidence.DependencyDiff
	for _, s := range strategies {
		d, err := deps.Diff(ctx, repo, s, mergeBase, m.Candidate)
		if err != nil {
			logf("dependency diff %s: %v", s, err)
			continue
		}
		out = append(out, d)
		for _, l := range deps.DiffLines([]evidence.DependencyDiff{d}, 20) {
			logf("dependencies: %s", l)
		}
	}
	return out
}
