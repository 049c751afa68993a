package deps_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/gittest"
)

// cargoRepo is the Cargo sample at semver 0.9 (the base) and a candidate
// at the given semver line.
func cargoRepo(t *testing.T, candidate string) (r *gittest.Repo, repo *git.Repo, base, cand string) {
	t.Helper()
	depstest.Need(t, "git")
	r = gittest.New(t)
	depstest.WriteCargo(t, r, "0.9")
	base = r.Commit("base")
	depstest.WriteCargo(t, r, candidate)
	cand = r.Commit("bump semver to " + candidate)
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, repo, base, cand
}

func cargoImport(t *testing.T, repo *git.Repo, state, commit, from string) (deps.Imported, error) {
	t.Helper()
	return deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Cargo, Commit: commit, From: from, StateDir: state})
}

// Both sides imported from real Debian crate directories: each checkout
// gets a CARGO_HOME whose source is exactly its own Cargo.lock's crates,
// and the second import copies only the crate the first did not store.
func TestCargoBothSides(t *testing.T) {
	r, repo, base, cand := cargoRepo(t, "both")
	state := t.TempDir()
	b, err := cargoImport(t, repo, state, base, depstest.CargoCrates(t, "semver-0.9.0", "semver-parser-0.7.0"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cargoImport(t, repo, state, cand, depstest.CargoCrates(t, "semver-0.9.0", "semver-parser-0.7.0", "semver-1.0.14"))
	if err != nil {
		t.Fatal(err)
	}
	// Equal files within one side (the crates' licence texts) are stored
	// once too.
	if b.Copy.CopiedBytes == 0 || b.Copy.CopiedBytes+b.Copy.LinkedBytes != b.Receipt.Bytes {
		t.Fatalf("the base's import: %+v of %d bytes", b.Copy, b.Receipt.Bytes)
	}
	// semver 0.9.0 and semver-parser 0.7.0 are the base's bytes: linked;
	// only semver 1.0.14 is new.
	if c.Copy.LinkedBytes < b.Receipt.Bytes || c.Copy.CopiedBytes+c.Copy.LinkedBytes != c.Receipt.Bytes || c.Copy.CopiedBytes >= c.Receipt.Bytes-b.Receipt.Bytes {
		t.Fatalf("candidate copied %d and linked %d of %d bytes; the base's tree is %d", c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes, b.Receipt.Bytes)
	}
	t.Logf("base: copied %d bytes; candidate: copied %d, linked %d of %d", b.Copy.CopiedBytes, c.Copy.CopiedBytes, c.Copy.LinkedBytes, c.Receipt.Bytes)

	ctx := context.Background()
	p, err := deps.Prepare(ctx, repo, deps.Options{StateDir: state, Base: base, Candidate: cand}, []string{deps.Cargo})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, side := range []struct {
		commit, key string
		crates      []string
	}{
		{base, b.Receipt.Key, []string{"semver-0.9.0", "semver-parser-0.7.0"}},
		{cand, c.Receipt.Key, []string{"semver-0.9.0", "semver-1.0.14", "semver-parser-0.7.0"}},
	} {
		v, err := p.Attach(ctx, deps.Cargo, checkout(t, r, side.commit))
		if err != nil {
			t.Fatal(err)
		}
		if v.Use == nil || v.Use.Key != side.key || v.Use.PreparedFor != side.commit || v.Use.Strategy != deps.Cargo {
			t.Fatalf("use %+v, want key %s for %s", v.Use, side.key, side.commit)
		}
		env := strings.Join(v.Env, "\n")
		home := envValue(v.Env, "CARGO_HOME")
		if home == "" || !strings.Contains(env, "CARGO_NET_OFFLINE=true") || !strings.Contains(env, "CARGO_TARGET_DIR=/tmp/") {
			t.Fatalf("env %q", v.Env)
		}
		cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		source := ""
		for _, line := range strings.Split(string(cfg), "\n") {
			if s, ok := strings.CutPrefix(line, "directory = '"); ok {
				source = strings.TrimSuffix(s, "'")
			}
		}
		if !strings.Contains(string(cfg), `replace-with = "runmill"`) || !slices.Contains(v.ReadOnly, source) || !slices.Contains(v.ReadOnly, home) {
			t.Fatalf("config %s, read-only %q", cfg, v.ReadOnly)
		}
		ents, err := os.ReadDir(source)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if !slices.Equal(got, side.crates) {
			t.Fatalf("%s's source holds %q, want exactly %q", side.commit, got, side.crates)
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Fatalf("the view's CARGO_HOME outlived Close: %v", err)
		}
	}
	// The dependency diff, from the committed lockfiles.
	d, err := deps.Diff(ctx, repo, deps.Cargo, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || d.Changes[0].Name != "semver" || d.Changes[0].From != "0.9.0" || d.Changes[0].To != "0.9.0, 1.0.14" {
		t.Fatalf("diff %+v", d.Changes)
	}
}

func envValue(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// Debian's registry itself as the declared directory source serves both
// sides of a bump it holds both versions of.
func TestCargoDeclaredRegistry(t *testing.T) {
	r, repo, base, cand := cargoRepo(t, "1")
	depstest.CargoCrates(t, "semver-0.9.0", "semver-parser-0.7.0", "semver-1.0.14") // skips (fails under CI) when not installed
	ctx := context.Background()
	p, err := deps.Prepare(ctx, repo, deps.Options{StateDir: t.TempDir(), Base: base, Candidate: cand, Cargo: deps.CargoOptions{Registry: depstest.DebianRegistry}}, []string{deps.Cargo})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := len(p.Receipts()); n != 2 {
		t.Fatalf("%d receipts, want one per side", n)
	}
	v, err := p.Attach(ctx, deps.Cargo, checkout(t, r, cand))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	d, err := deps.Diff(ctx, repo, deps.Cargo, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	want := "semver changed 0.9.0 1.0.14; semver-parser removed 0.7.0 "
	var got []string
	for _, c := range d.Changes {
		got = append(got, c.Name+" "+c.Change+" "+c.From+" "+c.To)
	}
	if strings.Join(got, "; ") != want {
		t.Fatalf("diff %q, want %q", strings.Join(got, "; "), want)
	}
	if err := deps.CheckSource(ctx, repo, deps.Options{SourceDir: r.Dir, Base: cand, Cargo: deps.CargoOptions{Registry: depstest.DebianRegistry}}, []string{deps.Cargo}); err != nil {
		t.Fatalf("doctor's check of the registry: %v", err)
	}
}

func TestCargoRefusals(t *testing.T) {
	r, repo, base, cand := cargoRepo(t, "1")
	baseCrates := []string{"semver-0.9.0", "semver-parser-0.7.0"}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, from string) // the directory source before its import
		commit string
		want   string
	}{
		{name: "a crate the source lacks", commit: cand, want: "semver 1.0.14 is not in it"},
		{name: "a checksum Cargo.lock does not pin", commit: base, want: "not the crate Cargo.lock pins", edit: func(t *testing.T, from string) {
			writeSums(t, filepath.Join(from, "semver-0.9.0"), strings.Repeat("0", 64), false)
		}},
		{name: "no package checksum (Debian's cfg-if)", commit: base, want: "has no package checksum", edit: func(t *testing.T, from string) {
			write(t, filepath.Join(from, "semver-0.9.0", ".cargo-checksum.json"), `{"package":null,"files":{}}`)
		}},
		{name: "another version's Cargo.toml", commit: base, want: `its Cargo.toml is package "semver" version "0.9.1"`, edit: func(t *testing.T, from string) {
			p := filepath.Join(from, "semver-0.9.0", "Cargo.toml")
			b, _ := os.ReadFile(p)
			write(t, p, strings.Replace(string(b), `version = "0.9.0"`, `version = "0.9.1"`, 1))
		}},
		{name: "an edited file the checksums list", commit: base, want: "src/lib.rs hashes to", edit: func(t *testing.T, from string) {
			dir := filepath.Join(from, "semver-0.9.0")
			writeSums(t, dir, "1d7eb9ef2c18661902cc47e535f9bc51b78acd254da71d375c2f6720d9a40403", true)
			f, err := os.OpenFile(filepath.Join(dir, "src", "lib.rs"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("\npub fn planted() {}\n")
			f.Close()
		}},
		{name: "a file the checksums do not list", commit: base, want: "src/planted.rs is not in .cargo-checksum.json", edit: func(t *testing.T, from string) {
			dir := filepath.Join(from, "semver-0.9.0")
			writeSums(t, dir, "1d7eb9ef2c18661902cc47e535f9bc51b78acd254da71d375c2f6720d9a40403", true)
			write(t, filepath.Join(dir, "src", "planted.rs"), "pub fn planted() {}\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := depstest.CargoCrates(t, baseCrates...)
			if tc.edit != nil {
				tc.edit(t, from)
			}
			_, err := cargoImport(t, repo, t.TempDir(), tc.commit, from)
			wantRefusal(t, err, tc.want)
		})
	}

	t.Run("listed checksums that hold are accepted", func(t *testing.T) {
		from := depstest.CargoCrates(t, baseCrates...)
		writeSums(t, filepath.Join(from, "semver-0.9.0"), "1d7eb9ef2c18661902cc47e535f9bc51b78acd254da71d375c2f6720d9a40403", true)
		if _, err := cargoImport(t, repo, t.TempDir(), base, from); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("only the base prepared", func(t *testing.T) {
		state := t.TempDir()
		if _, err := cargoImport(t, repo, state, base, depstest.CargoCrates(t, baseCrates...)); err != nil {
			t.Fatal(err)
		}
		p, err := deps.Prepare(ctx, repo, deps.Options{SourceDir: r.Dir, StateDir: state, Base: base, Candidate: cand}, []string{deps.Cargo})
		wantRefusal(t, err, "the candidate "+cand+" has no prepared crates")
		defer p.Close()
		if _, err := p.Attach(ctx, deps.Cargo, checkout(t, r, base)); err != nil {
			t.Fatalf("the base: %v", err)
		}
		_, err = p.Attach(ctx, deps.Cargo, checkout(t, r, cand))
		wantRefusal(t, err, "runmill deps import --strategy cargo --repo "+r.Dir+" --commit "+cand+" --out "+state+" --from DIR")
	})

	t.Run("a mutated cache", func(t *testing.T) {
		state := t.TempDir()
		if _, err := cargoImport(t, repo, state, base, depstest.CargoCrates(t, baseCrates...)); err != nil {
			t.Fatal(err)
		}
		var lib string
		filepath.WalkDir(filepath.Join(state, "deps", deps.Cargo), func(p string, d fs.DirEntry, err error) error {
			if strings.HasSuffix(p, filepath.Join("semver-0.9.0", "src", "lib.rs")) {
				lib = p
			}
			return err
		})
		if lib == "" {
			t.Fatal("no cached semver-0.9.0/src/lib.rs")
		}
		os.Chmod(lib, 0o644)
		write(t, lib, "pub fn planted() {}\n")
		_, err := deps.Prepare(ctx, repo, deps.Options{StateDir: state, Base: base, Candidate: base}, []string{deps.Cargo})
		wantRefusal(t, err, "was mutated")
	})
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSums writes dir's .cargo-checksum.json as cargo vendor does: the
// package checksum and, with files, every other file's SHA-256.
func writeSums(t *testing.T, dir, pkg string, files bool) {
	t.Helper()
	sums := map[string]string{}
	if files {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == ".cargo-checksum.json" {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			h := sha256.Sum256(b)
			sums[filepath.ToSlash(rel)] = hex.EncodeToString(h[:])
			return nil
		})
	}
	b, err := json.Marshal(map[string]any{"package": pkg, "files": sums})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".cargo-checksum.json"), string(b))
}

// BenchmarkCargoImportSecondSide: the candidate's crates (semver 0.9.0,
// semver-parser 0.7.0 and semver 1.0.14) imported into a cache holding the
// base's (semver 0.9.0, semver-parser 0.7.0); docs/benchmarks.md §
// Prepared dependencies for both sides.
func BenchmarkCargoImportSecondSide(b *testing.B) {
	depstest.Need(b, "git")
	r := gittest.New(b)
	depstest.WriteCargo(b, r, "0.9")
	base := r.Commit("base")
	depstest.WriteCargo(b, r, "both")
	cand := r.Commit("adds semver 1")
	repo, err := git.Open(context.Background(), r.Dir)
	if err != nil {
		b.Fatal(err)
	}
	baseFrom := depstest.CargoCrates(b, "semver-0.9.0", "semver-parser-0.7.0")
	candFrom := depstest.CargoCrates(b, "semver-0.9.0", "semver-parser-0.7.0", "semver-1.0.14")
	imp := func(state, commit, from string) deps.Imported {
		i, err := deps.Import(context.Background(), repo, deps.ImportOptions{Strategy: deps.Cargo, Commit: commit, From: from, StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		return i
	}
	var copied, linked, total int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := b.TempDir()
		imp(state, base, baseFrom)
		b.StartTimer()
		c := imp(state, cand, candFrom)
		total += c.Receipt.Bytes
		copied += c.Copy.CopiedBytes
		linked += c.Copy.LinkedBytes
	}
	b.ReportMetric(float64(total)/float64(b.N), "tree-B/op")
	b.ReportMetric(float64(copied)/float64(b.N), "copied-B/op")
	b.ReportMetric(float64(linked)/float64(b.N), "linked-B/op")
}
