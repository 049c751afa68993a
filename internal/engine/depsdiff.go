package engine

import (
	"context"
	"slices"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
)

// dependencyDiffs are the delivery statement's dependency diffs (issue
// 15): per strategy the manifest's runnable checks declare, what the
// change does to its lockfile between the baseline (the base tip) and the
// landing commit. A lockfile that cannot be read is left out with a log line:
// the diff informs a reader, the checks' own refusals decide.
func dependencyDiffs(ctx context.Context, repo *git.Repo, m *discovery.Manifest, cmp comparison, logf func(string, ...any)) []evidence.DependencyDiff {
	var strategies []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Dependencies != "" && !slices.Contains(strategies, c.Dependencies) {
			strategies = append(strategies, c.Dependencies)
		}
	}
	slices.Sort(strategies)
	var out []evidence.DependencyDiff
	for _, s := range strategies {
		d, err := deps.Diff(ctx, repo, s, cmp.baseline, cmp.candidate())
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

// maxLockfile bounds a dependency file read for expectations.
const maxLockfile = 64 << 20

// expectLockfiles observes, from git, the digests of each commit's
// dependency files (evidence.Expectations.Lockfiles): what evidence verify
// holds every recorded install's key to.
func expectLockfiles(ctx context.Context, repo *git.Repo, commits ...string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, c := range commits {
		if _, done := out[c]; done || c == "" {
			continue
		}
		files := map[string]string{}
		for _, name := range evidence.LockfileNames {
			e, err := repo.Stat(ctx, c, name)
			if err != nil {
				return nil, err
			}
			if e.Kind != git.Blob && e.Kind != git.Executable {
				continue
			}
			b, err := repo.ReadBlob(ctx, e, maxLockfile)
			if err != nil {
				return nil, err
			}
			files[name] = "sha256:" + digest.Hex(b)
		}
		out[c] = files
	}
	return out, nil
}
