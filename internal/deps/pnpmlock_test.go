package deps

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestParsePnpmLockReal reads a lockfile pnpm 9.15 wrote for is-number and
// ms, and finds both at their install directories.
func TestParsePnpmLockReal(t *testing.T) {
	b, err := os.ReadFile("testdata/pnpm-basic/pnpm-lock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parsePnpmLock(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.sortedKeys(), []string{"is-number@7.0.0", "ms@2.1.2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("packages %v, want %v", got, want)
	}
	p := l.Packages["ms@2.1.2"]
	if p.Dir() != ".pnpm/ms@2.1.2/node_modules/ms" || !strings.HasPrefix(p.Integrity, "sha512-sGkPx+") {
		t.Fatalf("ms: %+v", p)
	}
	if got := l.Importers["."].Dependencies; !reflect.DeepEqual(got, map[string]string{"is-number": "7.0.0", "ms": "2.1.2"}) {
		t.Fatalf("root importer %v", got)
	}
}

const sri = "sha512-sGkPx+VjMtmA6MX27oA4FBFELFCZZ4S4XqeGOXCv68tT+jb3vk/RyaKWP0PTKyWtmLSM0b+adUTEvbs1PEaH2w=="

func TestParsePnpmLock(t *testing.T) {
	v9 := func(body string) string { return "lockfileVersion: '9.0'\n" + body }
	for _, tc := range []struct {
		name, lock string
		err        string // "" accepts
		dirs       []string
	}{
		{name: "v9 scoped with peers", lock: v9(`
importers:
  .:
    dependencies:
      '@scope/a':
        specifier: ^1
        version: 1.0.0(b@2.0.0)
      b: {specifier: '2', version: 2.0.0}
packages:
  '@scope/a@1.0.0': {resolution: {integrity: ` + sri + `}}
  b@2.0.0: {resolution: {integrity: ` + sri + `}, os: [linux]}
snapshots:
  '@scope/a@1.0.0(b@2.0.0)':
    dependencies: {b: 2.0.0}
  b@2.0.0: {optional: true}
`), dirs: []string{".pnpm/@scope+a@1.0.0_b@2.0.0/node_modules/@scope/a", ".pnpm/b@2.0.0/node_modules/b"}},
		{name: "v6 top-level importer", lock: `lockfileVersion: '6.0'
dependencies:
  ms: {specifier: 2.1.2, version: 2.1.2}
packages:
  /ms@2.1.2:
    resolution: {integrity: ` + sri + `}
    dev: false
`, dirs: []string{".pnpm/ms@2.1.2/node_modules/ms"}},
		{name: "workspace link inside", lock: v9(`
importers:
  .:
    dependencies:
      w: {specifier: 'workspace:*', version: link:packages/w}
  packages/w: {}
`)},
		{name: "old version", lock: "lockfileVersion: '5.4'\n", err: "regenerate it with pnpm 9"},
		{name: "no version", lock: "importers: {}\n", err: "regenerate it with pnpm 9"},
		{name: "not yaml", lock: "lockfileVersion: [\n", err: "pnpm-lock.yaml"},
		{name: "link outside", lock: v9(`
importers:
  .:
    dependencies:
      w: {specifier: 'link:../x', version: link:../x}
`), err: "outside the repository"},
		{name: "absolute link", lock: v9(`
importers:
  .:
    dependencies:
      w: {specifier: 'link:/etc', version: link:/etc}
`), err: "outside the repository"},
		{name: "importer outside", lock: v9(`
importers:
  ../x: {}
`), err: "not a path inside"},
		{name: "git resolution", lock: v9(`
packages:
  a@1.0.0: {resolution: {type: git, repo: 'https://x/a', commit: abc}}
snapshots:
  a@1.0.0: {}
`), err: "not a registry package"},
		{name: "tarball resolution", lock: v9(`
packages:
  a@1.0.0: {resolution: {integrity: ` + sri + `, tarball: 'https://x/a.tgz'}}
snapshots:
  a@1.0.0: {}
`), err: "not a registry package"},
		{name: "no integrity", lock: v9(`
packages:
  a@1.0.0: {resolution: {}}
snapshots:
  a@1.0.0: {}
`), err: "not a sha512"},
		{name: "traversal name", lock: v9(`
packages:
  ../a@1.0.0: {resolution: {integrity: ` + sri + `}}
snapshots:
  ../a@1.0.0: {}
`), err: "not name@version"},
		{name: "traversal version", lock: v9(`
snapshots:
  a@1.0.0/../../x: {}
`), err: "not name@version"},
		{name: "peer with slash dots", lock: v9(`
packages:
  a@1.0.0: {resolution: {integrity: ` + sri + `}}
snapshots:
  a@1.0.0(../../x): {}
`), dirs: []string{".pnpm/a@1.0.0_..+..+x/node_modules/a"}},
		{name: "snapshot without package", lock: v9(`
snapshots:
  a@1.0.0: {}
`), err: "has no package"},
		{name: "package without snapshot", lock: v9(`
packages:
  a@1.0.0: {resolution: {integrity: ` + sri + `}}
`), err: "has no snapshot"},
		{name: "dangling dependency", lock: v9(`
packages:
  a@1.0.0: {resolution: {integrity: ` + sri + `}}
snapshots:
  a@1.0.0: {dependencies: {b: 1.0.0}}
`), err: "b@1.0.0 has no snapshot"},
		{name: "patched", lock: v9(`
patchedDependencies:
  a@1.0.0: {hash: x, path: patches/a.patch}
`), err: "patchedDependencies"},
		{name: "upper case name", lock: v9(`
packages:
  A@1.0.0: {resolution: {integrity: ` + sri + `}}
snapshots:
  A@1.0.0: {}
`), err: "not name@version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parsePnpmLock([]byte(tc.lock))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var dirs []string
			for _, k := range l.sortedKeys() {
				dirs = append(dirs, l.Packages[k].Dir())
			}
			if !reflect.DeepEqual(dirs, tc.dirs) {
				t.Fatalf("dirs %q, want %q", dirs, tc.dirs)
			}
		})
	}
	if _, err := parsePnpmLock([]byte("lockfileVersion: '5.4'\n")); !errors.Is(err, errPnpmLockVersion) {
		t.Fatalf("old version: %v is not errPnpmLockVersion", err)
	}
}

// FuzzParsePnpmLock: the reader never panics, and every package it accepts
// installs at a path that stays inside node_modules/.pnpm and names a
// package that resolves with an integrity.
func FuzzParsePnpmLock(f *testing.F) {
	if b, err := os.ReadFile("testdata/pnpm-basic/pnpm-lock.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("lockfileVersion: '6.0'\npackages:\n  /a@1.0.0: {resolution: {integrity: " + sri + "}}\n"))
	f.Add([]byte("lockfileVersion: '9.0'\nsnapshots:\n  a@1.0.0(b@1.0.0)(c@2.0.0): {}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parsePnpmLock(b)
		if err != nil {
			return
		}
		for key, p := range l.Packages {
			d := p.Dir()
			if !pnpmRelPath(d) || !strings.HasPrefix(d, ".pnpm/") || strings.Count(pnpmDirName(key), "/") != 0 {
				t.Fatalf("%s installs at %q", key, d)
			}
			if !sriValid(p.Integrity, true) {
				t.Fatalf("%s accepted without an integrity", key)
			}
		}
		for dir := range l.Importers {
			if dir != "." && !pnpmRelPath(dir) {
				t.Fatalf("importer %q", dir)
			}
		}
	})
}
