package harness_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/harness"
)

// repoTree is a base tree over file contents, with a reader of its blobs.
func repoTree(files map[string]string) (harness.Tree, harness.Reader) {
	t := harness.Tree{}
	blobs := map[string][]byte{}
	for p, c := range files {
		h := sha1.Sum([]byte(c))
		id := hex.EncodeToString(h[:])
		t[p] = harness.Entry{Mode: "100644", Blob: id}
		blobs[id] = []byte(c)
	}
	return t, func(blob string) ([]byte, error) {
		b, ok := blobs[blob]
		if !ok {
			return nil, fmt.Errorf("no blob %s", blob)
		}
		return b, nil
	}
}

// everyFile is a tree holding every file some rule below may name, so a
// case shows which of them its command makes harness (matched in both
// trees: the candidate below holds them all).
var everyFile = []string{
	"scripts/t.sh", "scripts/lib.sh", "scripts/run_tests.py", "scripts/helper.sh", "sub/t.sh", "t.sh",
	"package.json", ".npmrc", "web/.npmrc", "node_modules/.bin/node", "node_modules/.bin/vitest", "web/package.json",
	"Makefile", "mk/common.mk", "mk/deep.mk", "sub/Makefile",
	"conftest.py", "tests/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "pytest.py", "pytest/__init__.py",
	"_pytest/x.py", "sitecustomize.py", "usercustomize.py", "site.pth", "lib/vendor.pth",
	"vitest.config.js", "vite.config.js", "vitest.config.ts", "jest.config.js", "babel.config.js", ".mocharc.yml",
	"go.mod", "go.work", "go.work.sum", "go.sum",
	"Cargo.toml", "crates/a/Cargo.toml", ".cargo/config.toml", "crates/a/.cargo/config", "rust-toolchain.toml",
	"src/main.go", "src/app.js", "README.md", "tests/test_a.py",
}

func TestDiscover(t *testing.T) {
	base := map[string]string{
		"scripts/t.sh":         "#!/bin/sh\nset -e\n. scripts/lib.sh\nsource \"$(dirname \"$0\")/helper.sh\"\nif [ -n \"$X\" ]; then pytest -q; fi\necho done\n",
		"scripts/lib.sh":       "run() { \"$@\" ; }\n",
		"scripts/helper.sh":    "true\n",
		"scripts/run_tests.py": "import sys\n",
		"sub/t.sh":             "go test ./...\n",
		"t.sh":                 "echo hi\n. \"$LIB\"\n",
		"package.json":         `{"scripts":{"pretest":"node scripts/pre.js","test":"vitest run && mocha","lint":"eslint ."}}`,
		"Makefile":             "include mk/common.mk\n-include $(EXTRA)\ntest:\n\t@$(GO) vet ./... && python3 -m pytest -q\n",
		"mk/common.mk":         "sinclude mk/deep.mk\n",
		"mk/deep.mk":           "X = 1\n",
		"web/package.json":     `{"scripts":{"test":"jest --ci"}}`,
	}
	for _, p := range everyFile {
		if _, ok := base[p]; !ok {
			base[p] = "x " + p + "\n"
		}
	}
	tree, read := repoTree(base)
	node := []string{"package.json", "node_modules/.bin/node", "node_modules/.bin/vitest"}
	npm := append(slices.Clone(node), ".npmrc", "web/.npmrc")
	vitest := []string{"vitest.config.js", "vitest.config.ts", "vite.config.js"}
	pytest := []string{"conftest.py", "tests/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini",
		"pytest.py", "pytest/__init__.py", "_pytest/x.py", "sitecustomize.py", "usercustomize.py", "site.pth", "lib/vendor.pth"}
	pystart := []string{"sitecustomize.py", "usercustomize.py", "site.pth", "lib/vendor.pth"}
	// Not go.mod, go.sum or Cargo.toml: the change's own dependencies.
	gomod := []string{"go.work", "go.work.sum"}
	cargo := []string{".cargo/config.toml", "crates/a/.cargo/config", "rust-toolchain.toml"}
	makefiles := []string{"Makefile", "mk/common.mk", "mk/deep.mk"}
	script := []string{"scripts/t.sh", "scripts/lib.sh", "scripts/helper.sh"}
	cat := func(lists ...[]string) []string { return slices.Concat(lists...) }
	for _, c := range []struct {
		command string
		want    []string
		// unpinned: a substring of each unresolved part's reason, in order.
		unpinned []string
	}{
		{"sh scripts/t.sh", cat(script, pytest), nil},
		{"bash -e scripts/t.sh", cat(script, pytest), nil},
		{"bash -eu scripts/t.sh > out.log 2>&1", cat(script, pytest), nil},
		{"bash -x -o pipefail scripts/t.sh", cat(script, pytest), nil},
		{"bash -euo pipefail -- scripts/t.sh arg", cat(script, pytest), nil},
		{"./scripts/t.sh", cat(script, pytest), nil},
		{"scripts/t.sh --fast", cat(script, pytest), nil},
		{"cd sub && sh t.sh", cat([]string{"sub/t.sh"}, gomod), nil},
		{"cd sub; sh ./t.sh | tee log", cat([]string{"sub/t.sh"}, gomod), nil},
		{"timeout 120 sh scripts/t.sh", cat(script, pytest), nil},
		{"timeout -k 5 --signal=KILL 2m env CI=1 nice -n 10 sh scripts/t.sh", cat(script, pytest), nil},
		{"FOO=1 /usr/bin/env -i BAR=2 bash scripts/t.sh", cat(script, pytest), nil},
		{`sh -c 'cd sub && sh t.sh'`, cat([]string{"sub/t.sh"}, gomod), nil},
		{`bash -ec "sh scripts/t.sh"`, cat(script, pytest), nil},
		{"python3 scripts/run_tests.py", cat([]string{"scripts/run_tests.py"}, pystart), nil},
		{"python3 -m pytest -q tests", pytest, nil},
		{"pytest", pytest, nil},
		{"node scripts/run.js", []string{"package.json"}, nil},
		{"node --test", []string{"package.json", "node_modules/.bin/node", "node_modules/.bin/vitest"}, nil},
		{"npm test", cat(npm, vitest, []string{".mocharc.yml"}), nil},
		{"npm run lint", npm, []string{"eslint"}},
		{"npx vitest run", cat(npm, vitest), nil},
		{"yarn test", cat(npm, vitest, []string{".mocharc.yml"}), nil},
		{"pnpm run test", cat(npm, vitest, []string{".mocharc.yml"}), nil},
		{"cd web && npm test", []string{"web/package.json", ".npmrc", "web/.npmrc"}, nil},
		{"./node_modules/.bin/vitest run", cat(node, vitest), nil},
		{"make test", cat(makefiles, pytest), []string{"not a literal path"}},
		{"make -C sub test", []string{"sub/Makefile"}, nil},
		{"go test ./...", gomod, nil},
		{"go test -exec ./scripts/t.sh ./...", cat(gomod, script, pytest), nil},
		{"cargo test --workspace", cargo, nil},
		{"vitest run", cat(node, vitest), nil},
		{"jest", cat(node, []string{"jest.config.js", "babel.config.js"}), nil},
		// Never guessed: what runmill cannot resolve is unpinned, with why.
		{"sh t.sh", []string{"t.sh"}, []string{"sources a path that is not literal"}},
		{"mvn test", nil, []string{"does not know which files mvn reads"}},
		{"sh $SCRIPT", nil, []string{"not a literal path"}},
		{"$RUNNER test", nil, []string{"not a literal name"}},
		{"sh /opt/ci/test.sh", nil, []string{"not a literal path in the repository"}},
		{"sh ../outside.sh", nil, []string{"not a literal path in the repository"}},
		{"/opt/bin/run", nil, []string{"outside the repository"}},
		{"cd $DIR && sh t.sh", nil, []string{"cd to a directory", "after a cd"}},
		{"python3 -c 'import x'", pystart, []string{"python -c"}},
		{"python3 -m tox", pystart, []string{"a module outside the repository"}},
		{"go test ./... && golangci-lint run", gomod, []string{"golangci-lint"}},
		{"echo ok", nil, nil},
	} {
		t.Run(c.command, func(t *testing.T) {
			d, err := harness.Discover(c.command, tree, read)
			if err != nil {
				t.Fatal(err)
			}
			// Matched in both trees: every file of everyFile is at the
			// base and at the commit, edited.
			commit := harness.Tree{}
			for p, e := range tree {
				commit[p] = harness.Entry{Mode: e.Mode, Blob: strings.Repeat("e", 40)}
			}
			rec, err := harness.Resolve(context.Background(), d, nil, tree, commit, true, strings.Repeat("f", 40))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rec.Files {
				got = append(got, f.Path)
			}
			want := slices.Clone(c.want)
			slices.Sort(want)
			want = slices.Compact(want)
			if !slices.Equal(got, want) {
				t.Errorf("harness\n got  %q\n want %q", got, want)
			}
			if len(rec.Unpinned) != len(c.unpinned) {
				t.Fatalf("unpinned %+v, want reasons %q", rec.Unpinned, c.unpinned)
			}
			for i, u := range rec.Unpinned {
				if !strings.Contains(u.Reason, c.unpinned[i]) || u.Part == "" {
					t.Errorf("unpinned[%d] = %+v, want a reason with %q", i, u, c.unpinned[i])
				}
			}
		})
	}
}

// TestDiscoverNewFiles: a file the change adds that a runner would read
// is harness (matched in the commit's tree): a new GNUmakefile over a
// pinned Makefile, a new vitest.config.js over a pinned vite.config.js, a
// new conftest.py, a new .npmrc, a new .cargo/config.toml.
func TestDiscoverNewFiles(t *testing.T) {
	for _, c := range []struct {
		command, base, added string
	}{
		{"make test", "Makefile", "GNUmakefile"},
		{"npx vitest run", "vite.config.js", "vitest.config.js"},
		{"python -m pytest", "tests/test_a.py", "tests/unit/conftest.py"},
		{"npm test", "package.json", "sub/.npmrc"},
		{"cargo test", "Cargo.toml", "crates/x/.cargo/config.toml"},
		{"go test ./...", "go.mod", "go.work"},
		{"pytest", "tests/test_a.py", "pytest.py"},
		{"npm test", "package.json", "node_modules/.bin/node"},
	} {
		t.Run(c.added, func(t *testing.T) {
			tree, read := repoTree(map[string]string{c.base: "x\n"})
			d, err := harness.Discover(c.command, tree, read)
			if err != nil {
				t.Fatal(err)
			}
			commit := harness.Tree{c.added: {Mode: "100644", Blob: strings.Repeat("9", 40)}}
			for p, e := range tree {
				commit[p] = e
			}
			rec, err := harness.Resolve(context.Background(), d, nil, tree, commit, true, strings.Repeat("f", 40))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.NewPaths(), []string{c.added}) || !rec.Changed() {
				t.Fatalf("new %q, changed %v; want %s new, kept out", rec.NewPaths(), rec.Changed(), c.added)
			}
			if o := rec.Overlay(); len(o) != 1 || !o[0].Remove || o[0].Path != c.added {
				t.Fatalf("overlay %+v, want the removal of %s", o, c.added)
			}
		})
	}
}

// TestDiscoverPolicyHarnessSilencesUnpinned: a check whose policy lists
// harness: entries has named what discovery cannot; a policy new in the
// change pins nothing, so nothing is "not pinned" beyond its reason.
func TestDiscoverPolicyHarnessSilencesUnpinned(t *testing.T) {
	tree, read := repoTree(map[string]string{"pom.xml": "<project/>"})
	d, err := harness.Discover("mvn test", tree, read)
	if err != nil || len(d.Unpinned) != 1 {
		t.Fatalf("discover: %+v, %v", d, err)
	}
	for _, c := range []struct {
		patterns []string
		pinned   bool
		want     int
	}{{nil, true, 1}, {[]string{"pom.xml"}, true, 0}, {nil, false, 0}} {
		rec, err := harness.Resolve(context.Background(), d, c.patterns, tree, tree, c.pinned, strings.Repeat("f", 40))
		if err != nil || len(rec.Unpinned) != c.want {
			t.Errorf("harness: %q, pinned %v: unpinned %+v (%v), want %d", c.patterns, c.pinned, rec.Unpinned, err, c.want)
		}
	}
}

// TestDiscoverBounded: a base whose scripts source each other in a loop,
// or nest deeper than runmill reads, ends; what is left is unpinned.
func TestDiscoverBounded(t *testing.T) {
	files := map[string]string{"a.sh": ". b.sh\n", "b.sh": ". a.sh\n"}
	for i := range 100 {
		files[fmt.Sprintf("n%d.sh", i)] = fmt.Sprintf(". n%d.sh\n", i+1)
	}
	tree, read := repoTree(files)
	d, err := harness.Discover("sh a.sh", tree, read)
	if err != nil || !slices.Equal(d.Paths, []string{"a.sh", "b.sh"}) || len(d.Unpinned) != 0 {
		t.Fatalf("a loop: %+v, %v", d, err)
	}
	d, err = harness.Discover("sh n0.sh", tree, read)
	if err != nil || len(d.Unpinned) == 0 || len(d.Paths) > 20 {
		t.Fatalf("a deep chain: %d paths, unpinned %+v, %v", len(d.Paths), d.Unpinned, err)
	}
}

// FuzzDiscover: any command line resolves without panicking to clean
// relative paths and compilable globs, and whatever it names as
// unresolved says why.
func FuzzDiscover(f *testing.F) {
	for _, s := range []string{"sh scripts/test.sh", "bash -euo pipefail ./x", "cd a && sh ../b", `sh -c 'make -C sub test'`,
		"timeout 1 env A=1 nice -n 2 npm run x", "python3 -m pytest", "a $(b \"c\") `d` 'e", "make -f $(X) -C", "2>&1 >x <y ./z &",
		"npx vitest@1 run", "go test -exec=./q", "( cd x; ./y ) || { z; }", "\\\n'\"#"} {
		f.Add(s)
	}
	tree, read := repoTree(map[string]string{"scripts/test.sh": ". ./lib.sh\nsh -c \"$(x)\"\n", "package.json": `{"scripts":{"x":"npm run x"}}`,
		"Makefile": "include Makefile\ntest:\n\tmake test\n"})
	f.Fuzz(func(t *testing.T, command string) {
		d, err := harness.Discover(command, tree, read)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Paths {
			if p == "" || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
				t.Fatalf("Discover(%q) names %q", command, p)
			}
		}
		if _, err := harness.Resolve(context.Background(), d, nil, tree, tree, true, strings.Repeat("f", 40)); err != nil {
			t.Fatalf("Discover(%q) = %+v: %v", command, d, err)
		}
		for _, u := range d.Unpinned {
			if u.Reason == "" {
				t.Fatalf("Discover(%q): %+v says no reason", command, u)
			}
		}
	})
}
