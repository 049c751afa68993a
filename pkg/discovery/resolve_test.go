package discovery_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
)

func required(m *discovery.Manifest) map[string]string {
	out := map[string]string{}
	for _, c := range m.Checks {
		if c.Required {
			out[c.ID] = c.Command
		}
	}
	return out
}

// picker picks up to n of from at random, in random order.
func picker(rng *rand.Rand) func(n int, from []string) []string {
	return func(n int, from []string) []string {
		var out []string
		for _, i := range rng.Perm(len(from))[:rng.IntN(n+1)] {
			out = append(out, from[i])
		}
		return out
	}
}

// TestUnionOnlyGrows: adding changed paths, symlinks, GitHub contexts, agent
// proposals or operator checks never removes a required check (spec § 1: the union is
// monotonic) — checked over random inputs.
func TestUnionOnlyGrows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"src/a.go", "migrations/1.sql", "docs/x.md", "infra/main.tf", "web/app.test.js"}
	globs := []string{"src/**", "migrations/**", "docs/", "*.tf", "**/*.js"}
	pick := picker(rng)
	mkChecks := func(prefix string) []policy.CheckSpec {
		var cs []policy.CheckSpec
		for i := 0; i < rng.IntN(6); i++ {
			c := policy.CheckSpec{ID: fmt.Sprintf("c%d", rng.IntN(8)), Run: prefix + "cmd"}
			if rng.IntN(2) == 0 {
				c.Paths = pick(2, globs)
			}
			if rng.IntN(4) == 0 {
				f := false
				c.Required = &f
			}
			dup := false
			for _, o := range cs {
				dup = dup || o.ID == c.ID
			}
			if !dup {
				cs = append(cs, c)
			}
		}
		return cs
	}
	for i := 0; i < 2000; i++ {
		small := discovery.Input{
			Repository:   &discovery.RepositoryPolicy{Doc: policy.Repository{Checks: mkChecks("repo-")}, ReadFrom: discovery.ReadFromBase},
			Operator:     &discovery.OperatorPolicy{Doc: policy.Operator{Verification: policy.Verification{Commands: mkChecks("op-")}}},
			ChangedPaths: pick(2, paths),
		}
		big := small
		big.ChangedPaths = append(append([]string{}, small.ChangedPaths...), pick(3, paths)...)
		big.GitHub.Contexts = pick(2, []string{"ci", "c1", "lint"})
		big.Proposals = pick(3, []string{"c0", "c1", "c2", "c3", "zz"})
		big.Links = []discovery.Links{tree("c", paths, pick(3, []string{"migrations -> src", "docs/x.md -> ../web/app.test.js",
			"infra -> /runmill/checkout/migrations", "web/lib -> ../..", "src/b.tf -> a.go"})...)}
		big.CheckoutRoot = checkoutRoot
		extra := big.Operator.Doc
		extra.Verification.PathRules = []policy.PathRule{{Paths: pick(2, globs), Checks: pick(2, []string{"c4", "c5", "new"})}}
		big.Operator = &discovery.OperatorPolicy{Doc: extra}

		ms, err := discovery.Resolve(small)
		if err != nil {
			t.Fatal(err)
		}
		mb, err := discovery.Resolve(big)
		if err != nil {
			t.Fatal(err)
		}
		rs, rb := required(ms), required(mb)
		for id, cmd := range rs {
			bcmd, ok := rb[id]
			if !ok {
				t.Fatalf("case %d: adding sources removed required check %q\nsmall %+v\nbig %+v", i, id, small, big)
			}
			if bcmd != cmd {
				t.Fatalf("case %d: adding sources changed the command of %q: %q -> %q", i, id, cmd, bcmd)
			}
		}
		// Operator definitions always win.
		for _, c := range mb.Checks {
			for _, oc := range big.Operator.Doc.Verification.Commands {
				if oc.ID == c.ID && c.Command != oc.Run {
					t.Fatalf("case %d: operator lost %q", i, c.ID)
				}
			}
		}
	}
}

// TestChangeDeclarations (issue 24): the declared skips the candidate's
// policy adds or removes are recorded per repository-defined check of a
// policy read from the base, by test id; the candidate's policy adds no
// check and changes no command. The operator's change_declarations mode is
// recorded (default with_approval).
func TestChangeDeclarations(t *testing.T) {
	skip := func(ids ...string) []policy.DeclaredSkip {
		var out []policy.DeclaredSkip
		for _, id := range ids {
			out = append(out, policy.DeclaredSkip{TestID: id, Cause: "cause of " + id})
		}
		return out
	}
	base := &discovery.RepositoryPolicy{ReadFrom: discovery.ReadFromBase, Doc: policy.Repository{Checks: []policy.CheckSpec{
		{ID: "unit", Run: "make unit", DeclaredSkips: skip("kept", "removed")},
		{ID: "gone", Run: "make gone", DeclaredSkips: skip("x")},
		{ID: "ops", Run: "make ops"},
	}}}
	change := &discovery.RepositoryPolicy{ReadFrom: discovery.ReadFromWorkingTree, Doc: policy.Repository{Checks: []policy.CheckSpec{
		{ID: "unit", Run: "true", DeclaredSkips: append(skip("kept", "b-added"), skip("a-added")...)},
		{ID: "ops", Run: "make ops", DeclaredSkips: skip("by-operator")},
		{ID: "new", Run: "make new", DeclaredSkips: skip("n")},
	}}}
	op := &discovery.OperatorPolicy{Doc: policy.Operator{Verification: policy.Verification{
		Commands: []policy.CheckSpec{{ID: "ops", Run: "make ops"}}, ChangeDeclarations: policy.ChangeDeclarationsNever}}}
	for _, tc := range []struct {
		name   string
		in     discovery.Input
		mode   policy.ChangeDeclarations
		checks map[string][2]string // id → added, removed (comma-joined)
	}{
		{"added and removed", discovery.Input{Repository: base, Change: change}, policy.ChangeDeclarationsWithApproval,
			map[string][2]string{"unit": {"a-added,b-added", "removed"}, "gone": {"", "x"}, "ops": {"by-operator", ""}}},
		{"the operator's definition wins, and its mode", discovery.Input{Repository: base, Change: change, Operator: op}, policy.ChangeDeclarationsNever,
			map[string][2]string{"unit": {"a-added,b-added", "removed"}, "ops": {"", ""}}},
		{"no candidate policy", discovery.Input{Repository: base}, policy.ChangeDeclarationsWithApproval,
			map[string][2]string{"unit": {"", ""}, "gone": {"", ""}}},
		{"a policy new in the change has no base to compare", discovery.Input{Repository: &discovery.RepositoryPolicy{ReadFrom: discovery.ReadFromWorkingTree, Doc: change.Doc}, Change: change},
			policy.ChangeDeclarationsWithApproval, map[string][2]string{"unit": {"", ""}, "new": {"", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := discovery.Resolve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if m.ChangeDeclarations != tc.mode {
				t.Errorf("change_declarations %q, want %q", m.ChangeDeclarations, tc.mode)
			}
			if _, ok := m.Check("new"); ok && tc.in.Repository.ReadFrom == discovery.ReadFromBase {
				t.Errorf("the candidate's policy added a check: %+v", m.Checks)
			}
			for id, want := range tc.checks {
				c, ok := m.Check(id)
				if !ok {
					t.Fatalf("no check %s", id)
				}
				var added []string
				for _, d := range c.ChangeDeclaredSkips {
					added = append(added, d.TestID)
					if d.Cause != "cause of "+d.TestID {
						t.Errorf("%s: cause %q", id, d.Cause)
					}
				}
				if got := [2]string{strings.Join(added, ","), strings.Join(c.ChangeRemovedSkips, ",")}; got != want {
					t.Errorf("%s: added, removed = %q, want %q", id, got, want)
				}
				if id == "unit" && tc.in.Repository == base && c.Command != "make unit" {
					t.Errorf("the candidate's policy changed the command: %q", c.Command)
				}
			}
		})
	}
}

// TestEveryCoversAnyChange: a base proof's manifest (Input.Every, no
// changed path) requires every configured check any change could trigger —
// by a path rule of either policy, through a symlink, by an agent's
// proposal — with the same definition, so its baselines serve every later
// change against that base; unconfigured ids (a path rule's or a
// proposal's) are not among them: they have no command to prove.
func TestEveryCoversAnyChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	paths := []string{"src/a.go", "migrations/1.sql", "docs/x.md", "infra/main.tf"}
	globs := []string{"src/**", "migrations/**", "docs/", "*.tf"}
	pick := picker(rng)
	checks := func(prefix string) []policy.CheckSpec {
		var cs []policy.CheckSpec
		for i, id := range rng.Perm(6)[:rng.IntN(5)] {
			c := policy.CheckSpec{ID: fmt.Sprintf("c%d", id), Run: fmt.Sprintf("%scmd %d", prefix, i)}
			if rng.IntN(2) == 0 {
				c.Paths = pick(2, globs)
			}
			if rng.IntN(4) == 0 {
				f := false
				c.Required = &f
			}
			cs = append(cs, c)
		}
		return cs
	}
	for i := 0; i < 2000; i++ {
		op := policy.Operator{Verification: policy.Verification{Commands: checks("op-"),
			PathRules: []policy.PathRule{{Paths: pick(2, globs), Checks: pick(2, []string{"c1", "c4", "unconfigured"})}}}}
		base := discovery.Input{
			Repository: &discovery.RepositoryPolicy{Doc: policy.Repository{Checks: checks("repo-")}, ReadFrom: discovery.ReadFromBase},
			Operator:   &discovery.OperatorPolicy{Doc: op},
		}
		proof := base
		proof.Every = true
		change := base
		change.ChangedPaths = pick(3, paths)
		change.Links = []discovery.Links{tree("c", paths, pick(2, []string{"migrations -> src", "infra -> /runmill/checkout/migrations"})...)}
		change.CheckoutRoot = checkoutRoot
		change.Proposals = pick(2, []string{"c0", "c2", "zz"})
		mp, err := discovery.Resolve(proof)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := discovery.Resolve(change)
		if err != nil {
			t.Fatal(err)
		}
		rp := required(mp)
		for _, c := range mc.Checks {
			if !c.Runnable() {
				if _, ok := rp[c.ID]; ok {
					t.Fatalf("case %d: the proof requires %q, which has no command", i, c.ID)
				}
				continue
			}
			if cmd, ok := rp[c.ID]; !ok || cmd != c.Command {
				t.Fatalf("case %d: a change requires %q (%q); the proof %q (present %v)\nproof %+v", i, c.ID, c.Command, cmd, ok, mp.Checks)
			}
		}
		if len(mp.NotTriggered) > 0 {
			t.Fatalf("case %d: a proof leaves %v untriggered", i, mp.NotTriggered)
		}
	}
}
