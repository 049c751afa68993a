package engine_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// linkPolicy gates migration on migrations/** and schema on schema/*.sql.
const linkPolicy = `checks:
  - id: migration
    run: ./scripts/check-migrations
    paths: ["migrations/**"]
  - id: schema
    run: ./scripts/check-schema
    paths: ["schema/*.sql"]
`

// TestDiscoverSeesThroughSymlinks: Discovery reads both trees' links from
// git. migrations/001.sql links to db/001.sql and schema to db, so an edit
// of db/001.sql requires both checks, each saying through which link; an
// edit elsewhere requires neither; pointing schema out of the repository
// while editing db/001.sql still requires schema, by the base's link.
func TestDiscoverSeesThroughSymlinks(t *testing.T) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", linkPolicy)
	r.Write("db/001.sql", "create table t();\n")
	r.Write("README.md", "x\n")
	r.Symlink("../db/001.sql", "migrations/001.sql")
	r.Symlink("db", "schema")
	base := r.Commit("base")
	edit := func(branch string, f func()) string {
		r.Checkout("main", false)
		r.Checkout(branch, true)
		f()
		return r.Commit(branch)
	}
	touch := edit("touch-db", func() { r.Write("db/001.sql", "create table t(c int);\n") })
	other := edit("touch-readme", func() { r.Write("README.md", "y\n") })
	escape := edit("point-schema-away", func() {
		r.Remove("schema")
		r.Symlink("/etc", "schema")
		r.Write("db/001.sql", "drop table t;\n")
	})

	m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: touch})
	for id, want := range map[string]discovery.SymlinkMatch{
		"migration": {Pattern: "migrations/**", Path: "migrations/001.sql", Changed: "db/001.sql", Commit: touch,
			Symlinks: []discovery.SymlinkHop{{Path: "migrations/001.sql", Target: "../db/001.sql"}}},
		"schema": {Pattern: "schema/*.sql", Path: "schema/001.sql", Changed: "db/001.sql", Commit: touch,
			Symlinks: []discovery.SymlinkHop{{Path: "schema", Target: "db"}}},
	} {
		c, ok := m.Check(id)
		if !ok || !c.Required || len(c.SymlinkMatches) != 1 || !reflect.DeepEqual(c.SymlinkMatches[0], want) {
			t.Fatalf("%s: %+v, want required through %+v", id, c, want)
		}
	}
	if c, _ := m.Check("migration"); !strings.Contains(c.Reasons[0], "as migrations/001.sql through symlink migrations/001.sql → ../db/001.sql") {
		t.Fatalf("reason %q", c.Reasons[0])
	}
	if m := discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: other}); len(m.Checks) != 0 || len(m.NotTriggered) != 2 {
		t.Fatalf("an edit the links do not reach required %v (not triggered %+v)", ids(m), m.NotTriggered)
	}
	m = discover(t, engine.DiscoverOptions{RepoDir: r.Dir, Base: base, Candidate: escape})
	if c, ok := m.Check("schema"); !ok || len(c.SymlinkMatches) != 1 || c.SymlinkMatches[0].Commit != base {
		t.Fatalf("pointing schema away escaped its rule: %+v", c)
	}
}

// migrationPolicy is the shop's unit check plus a migration check, gated
// on migrations/**, that fails on a DROP in any migration it reads.
const migrationPolicy = tapPolicy + `  - id: migration
    run: sh scripts/check-migrations
    paths: ["migrations/**"]
    timeout: 60s
`

// TestVerifyMigrationThroughSymlink (issue 24, Why (d)): migrations/001.sql
// links to db/001.sql. A change that adds a DROP to db/001.sql touches no
// path under migrations/, yet the migration check is required, runs (it
// reads the DROP through the link in the sandbox) and fails: NOT
// MERGE-READY naming it, and the signed bundle is refused by `evidence
// verify` against `evidence expect` for that check's evidence, not for a
// different required set. The control, a change the link does not reach,
// does not require it and is merge-ready.
func TestVerifyMigrationThroughSymlink(t *testing.T) {
	_, key, trust := newTestKey(t)
	r, _ := shopRepo(t, migrationPolicy)
	r.Write("scripts/check-migrations", "for f in migrations/*.sql; do if grep -n DROP \"$f\"; then exit 1; fi; done\n")
	r.Write("db/001.sql", "create table t();\n")
	r.Symlink("../db/001.sql", "migrations/001.sql")
	base := r.Commit("migrations link into db")
	for _, tc := range []struct {
		name      string
		edit      func()
		ready     bool
		migration bool // required and run
	}{
		{"edits the linked file", func() { r.Write("db/001.sql", "DROP TABLE t;\n") }, false, true},
		{"edits a file no link reaches", func() { r.Write("tests/discount.t", "x\n") }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Checkout("main", false)
			r.Checkout("c-"+strings.ReplaceAll(tc.name, " ", "-"), true)
			tc.edit()
			cand := r.Commit(tc.name)
			run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
			var want []string
			if tc.migration {
				want = []string{"|migration|"}
			}
			wantReasons(t, run, tc.ready, want, nil)
			c, required := run.Delivery.Manifest.Check("migration")
			ran := slices.ContainsFunc(run.Delivery.Checks, func(c record.CheckRun) bool {
				return c.CheckID == "migration" && c.Phase == record.Candidate && c.ExitCode == 1
			})
			if required != tc.migration || ran != tc.migration {
				t.Fatalf("migration required %v, ran and failed %v; want %v", required, ran, tc.migration)
			}
			if tc.migration && (len(c.SymlinkMatches) != 1 || c.SymlinkMatches[0].Changed != "db/001.sql" || c.SymlinkMatches[0].Path != "migrations/001.sql") {
				t.Fatalf("the manifest does not say why: %+v", c)
			}
			bundle, err := os.ReadFile(run.BundlePath)
			if err != nil {
				t.Fatal(err)
			}
			res := evidence.Verify(bundle, trust, expectations(t, r, base, cand), evidence.VerifyOptions{Now: time.Now()})
			switch {
			case tc.ready && !res.Valid:
				t.Fatalf("the bundle does not verify: %s %s", res.Reason, res.Message)
			case !tc.ready && (res.Valid || res.Reason == evidence.ReasonBinding || !strings.Contains(res.Message, "migration")):
				t.Fatalf("the bundle: valid %v, %s %s; want refused for the migration check's evidence", res.Valid, res.Reason, res.Message)
			}
		})
	}
}
