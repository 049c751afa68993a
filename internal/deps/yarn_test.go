package deps_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/testreq"
)

// yarnRepo is the yarn sample of flavour at ms 2.1.2 (the base) and a
// candidate at ms 2.1.3.
func yarnRepo(t *testing.T, flavour string) (r *gittest.Repo, repo *git.Repo, base, cand string) {
	t.Helper()
	depstest.Need(t, "git")
	r = gittest.New(t)
	depstest.WriteYarn(t, r, flavour, "2.1.2")
	base = r.Commit("base")
	depstest.WriteYarn(t, r, flavour, "2.1.3")
	cand = r.Commit("bump ms to 2.1.3")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, repo, base, cand
}

func yarnImport(repo *git.Repo, state, commit, from string) (deps.Imported, error) {
	return deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Yarn, Commit: commit, From: from, StateDir: state})
}

// Real installs by yarn 1 and by Berry's node-modules linker, from the
// npm registry: each side imported for its commit and verified against
// its yarn.lock; the second side copies only what changed (ms), each
// checkout gets the install of its own lockfile, and the diff names ms.
func TestYarnBothSides(t *testing.T) {
	for _, flavour := range []string{"classic", "berry", "pnp"} {
		t.Run(flavour, func(t *testing.T) {
			r, repo, base, cand := yarnRepo(t, flavour)
			state := t.TempDir()
			b, err := yarnImport(repo, state, base, depstest.YarnInstall(t, r.Dir, base, flavour))
			if err != nil {
				t.Fatal(err)
			}
			c, err := yarnImport(repo, state, cand, depstest.YarnInstall(t, r.Dir, cand, flavour))
			if err != nil {
				t.Fatal(err)
			}
			if b.Copy.CopiedBytes == 0 || c.Copy.LinkedBytes == 0 || c.Copy.CopiedBytes >= b.Copy.CopiedBytes {
				t.Fatalf("the candidate's import copied %+v after the base's %+v: is-number is shared", c.Copy, b.Copy)
			}
			p, err := deps.Prepare(context.Background(), repo, deps.Options{StateDir: state, Base: base, Candidate: cand}, []string{deps.Yarn})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for commit, ms := range map[string]string{base: "2.1.2", cand: "2.1.3"} {
				dir := checkout(t, r, commit)
				v, err := p.Attach(context.Background(), deps.Yarn, dir)
				if err != nil {
					t.Fatal(err)
				}
				if flavour == "pnp" {
					// The zips at .yarn/cache, and the commit's own
					// .pnp.cjs at the root, naming that ms.
					zips, _ := filepath.Glob(filepath.Join(v.Mounts[0].Source, "ms-npm-"+ms+"-*.zip"))
					pnp, err := os.ReadFile(filepath.Join(dir, ".pnp.cjs"))
					if len(zips) != 1 || v.Mounts[0].Destination != filepath.Join(dir, ".yarn", "cache") || err != nil || !strings.Contains(string(pnp), `"npm:`+ms+`"`) {
						t.Errorf("%s's view: zips %v at %s, .pnp.cjs %v", commit, zips, v.Mounts[0].Destination, err)
					}
				} else {
					got, err := os.ReadFile(filepath.Join(v.Mounts[0].Source, "ms", "package.json"))
					if err != nil || !strings.Contains(string(got), `"version": "`+ms+`"`) {
						t.Errorf("%s's view has ms %s: %v", commit, got, err)
					}
				}
				if v.Use == nil || v.Use.PreparedFor != commit || v.Use.Strategy != deps.Yarn {
					t.Errorf("use %+v", v.Use)
				}
				v.Close()
			}
			d, err := deps.Diff(context.Background(), repo, deps.Yarn, base, cand)
			if err != nil || len(d.Changes) != 1 || d.Changes[0].Name != "ms" || d.Changes[0].From != "2.1.2" || d.Changes[0].To != "2.1.3" {
				t.Fatalf("diff %+v, %v", d, err)
			}
		})
	}
}

// What the import refuses: the base's install offered as the candidate's,
// an installed version edited, a package yarn.lock does not name, and a
// lockfile yarn rewrote.
func TestYarnImportRefuses(t *testing.T) {
	for _, flavour := range []string{"classic", "berry"} {
		t.Run(flavour, func(t *testing.T) {
			r, repo, base, cand := yarnRepo(t, flavour)
			install := depstest.YarnInstall(t, r.Dir, base, flavour)
			r.Remove("yarn.lock")
			nolock := r.Commit("no yarn.lock")
			fresh := func() string {
				t.Helper()
				dst := t.TempDir()
				depstest.Run(t, "/", nil, "cp", "-a", install+"/.", dst)
				return dst
			}
			for _, tc := range []struct {
				name   string
				commit string
				edit   func(dir string)
				want   string
			}{
				{"another commit's install", cand, func(string) {}, "differs from"},
				{"a commit without yarn.lock", nolock, func(string) {}, "dependencies: yarn needs a committed package.json and yarn.lock"},
				{"an edited version", base, func(dir string) {
					p := filepath.Join(dir, "node_modules", "ms", "package.json")
					b, _ := os.ReadFile(p)
					os.WriteFile(p, []byte(strings.Replace(string(b), `"version": "2.1.2"`, `"version": "2.1.3"`, 1)), 0o644)
				}, "node_modules/ms is installed at 2.1.3, which yarn.lock does not resolve"},
				{"an extra package", base, func(dir string) {
					os.MkdirAll(filepath.Join(dir, "node_modules", "planted"), 0o755)
					os.WriteFile(filepath.Join(dir, "node_modules", "planted", "package.json"), []byte(`{"version":"1.0.0"}`), 0o644)
				}, "node_modules/planted is installed at 1.0.0"},
				{"a missing package", base, func(dir string) {
					os.RemoveAll(filepath.Join(dir, "node_modules", "is-number"))
				}, "is-number@7.0.0 is in yarn.lock but not installed"},
				{"a link out", base, func(dir string) {
					os.Symlink("/etc", filepath.Join(dir, "node_modules", "etc"))
				}, `links to "/etc"`},
				{"a rewritten lockfile", base, func(dir string) {
					f, _ := os.OpenFile(filepath.Join(dir, "yarn.lock"), os.O_APPEND|os.O_WRONLY, 0)
					f.WriteString("\n")
					f.Close()
				}, "yarn.lock in"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					dir := fresh()
					tc.edit(dir)
					_, err := yarnImport(repo, t.TempDir(), tc.commit, dir)
					wantRefusal(t, err, tc.want)
				})
			}
		})
	}
}

// Only the base imported: the candidate's checkout is refused naming it
// and the exact command that prepares it.
func TestYarnCandidateUnprepared(t *testing.T) {
	r, repo, base, cand := yarnRepo(t, "classic")
	state := t.TempDir()
	if _, err := yarnImport(repo, state, base, depstest.YarnInstall(t, r.Dir, base, "classic")); err != nil {
		t.Fatal(err)
	}
	p, err := deps.Prepare(context.Background(), repo, deps.Options{StateDir: state, Base: base, Candidate: cand, SourceDir: r.Dir}, []string{deps.Yarn})
	wantRefusal(t, err, "the candidate "+cand)
	defer p.Close()
	_, err = p.Attach(context.Background(), deps.Yarn, checkout(t, r, cand))
	for _, want := range []string{"the candidate " + cand, "YARN_IGNORE_PATH=1", "runmill deps import --strategy yarn --repo " + r.Dir + " --commit " + cand + " --out " + state + " --from DIR"} {
		wantRefusal(t, err, want)
	}
}

// What a Plug'n'Play import refuses: a zip that is not the lockfile's, a
// zip no package is in, a .pnp.cjs that maps a package elsewhere.
func TestYarnPnPRefuses(t *testing.T) {
	r, repo, base, _ := yarnRepo(t, "pnp")
	install := depstest.YarnInstall(t, r.Dir, base, "pnp")
	zip := func(dir, name string) string {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(dir, ".yarn", "cache", name+"-npm-*.zip"))
		if len(m) != 1 {
			t.Fatalf("zips of %s: %v", name, m)
		}
		return m[0]
	}
	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"an edited zip", func(dir string) {
			f, _ := os.OpenFile(zip(dir, "ms"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("x")
			f.Close()
		}, "yarn.lock's checksum is 10c0/"},
		{"an extra zip", func(dir string) {
			b, _ := os.ReadFile(zip(dir, "ms"))
			os.WriteFile(filepath.Join(dir, ".yarn", "cache", "planted-npm-1.0.0-0-0.zip"), b, 0o644)
		}, "planted-npm-1.0.0-0-0.zip is in the cache but no package of yarn.lock is in it"},
		{"a package mapped elsewhere", func(dir string) {
			p := filepath.Join(dir, ".pnp.cjs")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `/node_modules/ms/",`, `/node_modules/is-number/",`, 1)), 0o644)
		}, "not inside its zip"},
		{"a package the lockfile lacks", func(dir string) {
			p := filepath.Join(dir, ".pnp.cjs")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `["npm:2.1.2", {`, `["npm:2.1.9", {`, 1)), 0o644)
		}, "ms@npm:2.1.9 is in .pnp.cjs but not in yarn.lock"},
		{"unplugged packages", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".yarn", "unplugged"), 0o755)
		}, "unplugged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			depstest.Run(t, "/", nil, "cp", "-a", install+"/.", dir)
			tc.edit(dir)
			_, err := yarnImport(repo, t.TempDir(), base, dir)
			wantRefusal(t, err, tc.want)
		})
	}
}

// BenchmarkYarnImportSecondSide: the candidate's install (ms 2.1.3 beside
// is-number 7.0.0) imported into a cache holding the base's (ms 2.1.2),
// for each linker; docs/benchmarks.md § Prepared dependencies for both
// sides. The installs are made once, outside the timer.
func BenchmarkYarnImportSecondSide(b *testing.B) {
	for _, flavour := range []string{"classic", "berry", "pnp"} {
		b.Run(flavour, func(b *testing.B) {
			depstest.Need(b, "git")
			r := gittest.New(b)
			depstest.WriteYarn(b, r, flavour, "2.1.2")
			base := r.Commit("base")
			depstest.WriteYarn(b, r, flavour, "2.1.3")
			cand := r.Commit("bump ms")
			repo, err := git.Open(context.Background(), r.Dir)
			if err != nil {
				b.Fatal(err)
			}
			baseFrom, candFrom := depstest.YarnInstall(b, r.Dir, base, flavour), depstest.YarnInstall(b, r.Dir, cand, flavour)
			var copied, linked, total int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				state := b.TempDir()
				if _, err := yarnImport(repo, state, base, baseFrom); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c, err := yarnImport(repo, state, cand, candFrom)
				if err != nil {
					b.Fatal(err)
				}
				total += c.Receipt.Bytes
				copied += c.Copy.CopiedBytes
				linked += c.Copy.LinkedBytes
			}
			b.ReportMetric(float64(total)/float64(b.N), "tree-B/op")
			b.ReportMetric(float64(copied)/float64(b.N), "copied-B/op")
			b.ReportMetric(float64(linked)/float64(b.N), "linked-B/op")
		})
	}
}

// doctor's question for yarn: the base's yarn.lock is one the strategy
// reads, and with a state directory the base's import is there and
// verifies; otherwise the command that prepares it.
func TestYarnCheckSource(t *testing.T) {
	r, repo, base, _ := yarnRepo(t, "classic")
	r.Git("checkout", "--detach", base)
	state := t.TempDir()
	o := deps.Options{SourceDir: r.Dir, Base: base}
	if err := deps.CheckSource(context.Background(), repo, o, []string{deps.Yarn}); err != nil {
		t.Fatalf("without a state directory: %v", err)
	}
	o.StateDir = state
	err := deps.CheckSource(context.Background(), repo, o, []string{deps.Yarn})
	wantRefusal(t, err, "runmill deps import --strategy yarn --repo "+r.Dir+" --commit "+base)
	if _, err := yarnImport(repo, state, base, depstest.YarnInstall(t, r.Dir, base, "classic")); err != nil {
		t.Fatal(err)
	}
	if err := deps.CheckSource(context.Background(), repo, o, []string{deps.Yarn}); err != nil {
		t.Fatalf("with the base imported: %v", err)
	}
}

// The command a refusal prints, run as printed (up to the import, which
// the test does through deps.Import): the commit's own .yarnrc.yml
// (yarnPath, which Berry would run) and .yarnrc (yarn-path, which yarn 1
// would run) never run, because only the two manifests leave git.
func TestYarnImportCommandIgnoresTheRepositorysConfig(t *testing.T) {
	for _, flavour := range []string{"classic", "berry"} {
		t.Run(flavour, func(t *testing.T) {
			depstest.Need(t, "git", "sh")
			testreq.Slow(t, "yarn install fetches from the registry")
			yarn := depstest.YarnBin(t, flavour)
			r := gittest.New(t)
			depstest.WriteYarn(t, r, flavour, "2.1.2")
			mark := filepath.Join(t.TempDir(), "ran")
			evil := "require('fs').writeFileSync(" + strconv.Quote(mark) + ", 'the repository ran')\n"
			r.Write(".yarn/releases/evil.cjs", evil)
			r.Write(".yarnrc.yml", "yarnPath: .yarn/releases/evil.cjs\n")
			r.Write(".yarnrc", "yarn-path \".yarn/releases/evil.cjs\"\n")
			commit := r.Commit("a hostile yarn config")
			repo, err := git.Open(context.Background(), r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			cmd := deps.YarnImportCommand(r.Dir, commit, state)
			prep, _, ok := strings.Cut(cmd, " && runmill deps import")
			if !ok {
				t.Fatalf("the command does not end in the import: %s", cmd)
			}
			dir := filepath.Join(t.TempDir(), "install")
			depstest.Run(t, "/", []string{"PATH=" + filepath.Dir(yarn) + ":" + os.Getenv("PATH")}, "sh", "-c", strings.ReplaceAll(prep, "DIR", dir))
			if b, err := os.ReadFile(mark); err == nil {
				t.Fatalf("the repository's yarnPath ran: %s", b)
			}
			if _, err := yarnImport(repo, state, commit, dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}
