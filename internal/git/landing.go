package git

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// Landing is what a change would land as on the base tip (issue 24): the
// commit whose tree a verification's candidate phase measures.
type Landing struct {
	// Commit is the candidate itself when it contains the base tip, else
	// a synthetic merge commit of the base tip and the candidate; empty
	// when the merge conflicts.
	Commit string
	// Tree is Commit's git tree id; empty when the merge conflicts.
	Tree string
	// Merged: Commit is the synthetic merge, not the candidate.
	Merged bool
	// Behind is how many commits of the base tip the candidate lacks
	// (git rev-list --count candidate..base).
	Behind int
	// Conflicts are the paths git's three-way merge could not merge,
	// sorted; non-empty means there is no landing tree.
	Conflicts []string
}

// landingIdentity makes the synthetic merge commit a function of its tree
// and parents only: a fixed author, committer and date, so two runs, and
// a verifier's `evidence expect`, derive the same commit id.
var landingIdentity = []string{
	"GIT_AUTHOR_NAME=runmill", "GIT_AUTHOR_EMAIL=runmill@invalid", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=runmill", "GIT_COMMITTER_EMAIL=runmill@invalid", "GIT_COMMITTER_DATE=@0 +0000",
}

// Landing computes the landing commit of candidate on base (both full
// commit ids). When base is an ancestor of candidate it is candidate;
// otherwise git's three-way merge (git merge-tree --write-tree, the merge
// `git merge` would make) and a synthetic merge commit over it with
// parents base and candidate. merge-tree and commit-tree write their
// objects into the repository's object store, where the checkout manager
// reads them like any commit's; no ref, index or work tree is touched.
func (r *Repo) Landing(ctx context.Context, base, candidate string) (Landing, error) {
	fail := func(err error, what string) (Landing, error) {
		return Landing{}, rmerr.Wrap(rmerr.GitRepository, err, "%s of %s on %s", what, objectid.Short(candidate), objectid.Short(base)).
			WithHint("base and candidate need a common history; fetch full history (fetch-depth: 0)")
	}
	out, err := r.run(ctx, nil, "rev-list", "--count", candidate+".."+base)
	if err != nil {
		return fail(err, "counting the base commits missing")
	}
	behind, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fail(err, "counting the base commits missing")
	}
	l := Landing{Behind: behind}
	if behind == 0 { // the candidate contains the base tip
		if out, err = r.run(ctx, nil, "rev-parse", "--verify", "--end-of-options", candidate+"^{tree}"); err != nil {
			return fail(err, "reading the tree")
		}
		l.Commit, l.Tree = candidate, strings.TrimSpace(string(out))
		return l, nil
	}
	// merge-tree exits 1 on a conflict and still writes the tree and the
	// conflicted paths, which Run only hands back through Stdout.
	var merged bytes.Buffer
	_, err = r.run(ctx, &merged, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base, candidate)
	out = merged.Bytes()
	var exit *exec.ExitError
	conflicted := errors.As(err, &exit) && exit.ExitCode() == 1
	if err != nil && !conflicted {
		return fail(err, "merging")
	}
	fields := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	tree := string(fields[0])
	if !objectid.Valid(tree) {
		return fail(errors.New("git merge-tree wrote no tree id"), "merging")
	}
	if conflicted {
		for _, p := range fields[1:] {
			if len(p) > 0 {
				l.Conflicts = append(l.Conflicts, string(p))
			}
		}
		slices.Sort(l.Conflicts)
		l.Conflicts = slices.Compact(l.Conflicts)
		if len(l.Conflicts) == 0 {
			return fail(errors.New("git merge-tree reported a conflict and named no path"), "merging")
		}
		return l, nil
	}
	msg := "runmill landing: " + candidate + " merged into " + base + "\n"
	out, err = Run(ctx, r.Dir, RunOptions{Env: landingIdentity, Stdin: strings.NewReader(msg)},
		"-c", "commit.gpgSign=false", "-c", "i18n.commitEncoding=UTF-8",
		"commit-tree", "--no-gpg-sign", "-p", base, "-p", candidate, tree)
	if err != nil {
		return fail(err, "writing the landing commit")
	}
	l.Commit, l.Tree, l.Merged = strings.TrimSpace(string(out)), tree, true
	if !objectid.Valid(l.Commit) {
		return fail(errors.New("git commit-tree wrote no commit id"), "writing the landing commit")
	}
	return l, nil
}
