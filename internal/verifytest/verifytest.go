// Package verifytest holds the fixtures the end-to-end verification tests
// share — internal/engine's, and internal/cli's that drive the same pipeline
// through the real command: a small repository whose one check is a TAP
// runner, TAP scripts and policies, and the recorded GitHub exchanges of
// pull request 42.
package verifytest

import (
	"testing"

	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/internal/gittest"
)

// TAPRunner prints one TAP point per tests/*.t file; a file containing
// SKIP is skipped.
const TAPRunner = `#!/bin/sh
# Prints one TAP point per tests/*.t file; a file containing SKIP is skipped.
set -e
n=$(ls tests/*.t 2>/dev/null | wc -l)
echo "1..$n"
i=0
for f in tests/*.t; do
  [ -e "$f" ] || continue
  i=$((i+1)); name=$(basename "$f" .t)
  if grep -q SKIP "$f"; then echo "ok $i $name # SKIP"; else echo "ok $i $name"; fi
done
`

// TAPPolicy runs TAPRunner, its report a TAP file.
const TAPPolicy = `checks:
  - id: unit
    run: sh tests/run.sh > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
`

// ShopRepo is a repository at its first commit, whose policy is policy,
// with the TAP runner and three tests; it returns the commit.
func ShopRepo(t testing.TB, policy string) (*gittest.Repo, string) {
	t.Helper()
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", policy)
	r.Write("tests/run.sh", TAPRunner)
	r.Write("tests/total.t", "x\n")
	r.Write("tests/zero_qty.t", "x\n")
	r.Write("tests/fixture.t", "x\n")
	r.Write("fixtures/prices.txt", "a 250\n")
	return r, r.Commit("base")
}

// The fixtures' fixed head SHA; Replace swaps in the test's real commit.
const FixtureHead = "6dcb09b5b57875f334f61aebed695e2e4193db5e"

// ObservePR registers what Verify and Expect each read first: the pull
// request, its reviews, and the base branch's required contexts (build and
// runmill from protection; rulesets: none).
func ObservePR(f *githubtest.Server) {
	f.Expect("/repos/acme/widget/pulls/42", "", 200, "pull_request.json")
	f.Expect("/repos/acme/widget/pulls/42/reviews", "per_page=100", 200, "pull_reviews_page1.json",
		"Link", `<{base}/repos/acme/widget/pulls/42/reviews?per_page=100&page=2>; rel="next"`)
	f.Expect("/repos/acme/widget/pulls/42/reviews", "per_page=100&page=2", 200, "pull_reviews_page2.json")
	f.Expect("/repos/acme/widget/branches/main", "", 200, "branch_protected_runmill.json")
	f.Expect("/repos/acme/widget/rules/branches/main", "per_page=100&page=1", 200, "rules_empty.json")
}

// Files is one commit's edits: files to write (content "" removes the path).
type Files map[string]string

// Apply writes c into r's work tree (commit it with r.Commit).
func Apply(r *gittest.Repo, c Files) {
	for path, content := range c {
		if content == "" {
			r.Remove(path)
		} else {
			r.Write(path, content)
		}
	}
}

// TAPScript prints a TAP point per line of tests/list ("name" passes,
// "name FAIL" fails, "name SKIP" skips, "BAIL" bails out) and exits with
// tests/exit's content (0 when absent): the report and the exit code are
// independent, as a masked runner makes them.
const TAPScript = `#!/bin/sh
i=0
echo "TAP version 13"
while read -r name how; do
  [ -n "$name" ] || continue
  if [ "$name" = BAIL ]; then echo "Bail out! $how"; break; fi
  i=$((i+1))
  case "$how" in
    FAIL) echo "not ok $i $name" ;;
    SKIP) echo "ok $i $name # SKIP" ;;
    *) echo "ok $i $name" ;;
  esac
done < tests/list
[ "$1" = plan ] && echo "1..$i"
echo "$(cat tests/say 2>/dev/null)" >&2
exit "$(cat tests/exit 2>/dev/null || echo 0)"
`

// TAPListPolicy runs TAPScript with a plan, its report a TAP file.
const TAPListPolicy = `checks:
  - id: unit
    run: sh tests/tap.sh plan > reports/unit.tap
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
`
