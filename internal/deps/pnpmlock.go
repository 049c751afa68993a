package deps

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// pnpmPackage is one installed package of pnpm-lock.yaml: a snapshot (a
// package at a version, with the peers it was resolved against) and the
// resolution of its name and version.
type pnpmPackage struct {
	// Key is the snapshot's key, name@version with any peer suffix
	// ("react-dom@18.2.0(react@18.2.0)").
	Key           string
	Name, Version string
	// Integrity is the registry tarball's SRI hash (sha512-…).
	Integrity string
	Optional  bool
	OS, CPU   []string
	// Dependencies are the snapshot's resolved dependencies and optional
	// dependencies: name → the key's version part (with peers), or a link:.
	Dependencies map[string]string
}

// Dir is where pnpm's isolated layout installs the package, relative to
// the root node_modules: .pnpm/<dir>/node_modules/<name>.
func (p pnpmPackage) Dir() string {
	return ".pnpm/" + pnpmDirName(p.Key) + "/node_modules/" + p.Name
}

// pnpmImporter is one project of the lockfile ("." is the root; others
// are workspace packages by their relative path).
type pnpmImporter struct {
	// Dependencies maps each direct dependency name to its resolved
	// version part or "link:<path>"; node_modules/<name> links to it.
	Dependencies map[string]string
}

// pnpmLock is pnpm-lock.yaml, lockfileVersion 9.0 (pnpm 9) or 6.x (pnpm 8).
type pnpmLock struct {
	Version   string
	Importers map[string]pnpmImporter
	Packages  map[string]pnpmPackage // by snapshot key
}

// errPnpmLockVersion marks a lockfile format this reader does not take
// apart; regenerating it with pnpm 9 is the fix.
var errPnpmLockVersion = errors.New("pnpm-lock.yaml is not lockfileVersion 9.0 or 6.x; regenerate it with pnpm 9 (pnpm install --lockfile-only) and commit it")

// The YAML shapes pnpm writes. Package metadata has more fields (engines,
// hasBin, deprecated…) that decide nothing runmill checks; they are
// ignored, while every field that says what is installed is typed so a
// wrong shape fails to decode.
type pnpmYAMLDep struct {
	Specifier string `yaml:"specifier"`
	Version   string `yaml:"version"`
}

type pnpmYAMLImporter struct {
	Dependencies         map[string]pnpmYAMLDep `yaml:"dependencies"`
	DevDependencies      map[string]pnpmYAMLDep `yaml:"devDependencies"`
	OptionalDependencies map[string]pnpmYAMLDep `yaml:"optionalDependencies"`
}

type pnpmYAMLResolution struct {
	Integrity string `yaml:"integrity"`
	Tarball   string `yaml:"tarball"`
	Type      string `yaml:"type"`
	Directory string `yaml:"directory"`
	Repo      string `yaml:"repo"`
	Commit    string `yaml:"commit"`
}

type pnpmYAMLPackage struct {
	Resolution           *pnpmYAMLResolution `yaml:"resolution"`
	Name                 string              `yaml:"name"`
	Version              string              `yaml:"version"`
	OS                   []string            `yaml:"os"`
	CPU                  []string            `yaml:"cpu"`
	Optional             bool                `yaml:"optional"`
	Dependencies         map[string]string   `yaml:"dependencies"`
	OptionalDependencies map[string]string   `yaml:"optionalDependencies"`
}

type pnpmYAMLSnapshot struct {
	Optional             bool              `yaml:"optional"`
	Dependencies         map[string]string `yaml:"dependencies"`
	OptionalDependencies map[string]string `yaml:"optionalDependencies"`
}

type pnpmYAML struct {
	LockfileVersion string                      `yaml:"lockfileVersion"`
	Importers       map[string]pnpmYAMLImporter `yaml:"importers"`
	// 6.x without workspaces keeps the root importer at the top level.
	Dependencies         map[string]pnpmYAMLDep      `yaml:"dependencies"`
	DevDependencies      map[string]pnpmYAMLDep      `yaml:"devDependencies"`
	OptionalDependencies map[string]pnpmYAMLDep      `yaml:"optionalDependencies"`
	Packages             map[string]pnpmYAMLPackage  `yaml:"packages"`
	Snapshots            map[string]pnpmYAMLSnapshot `yaml:"snapshots"`
	Patched              map[string]any              `yaml:"patchedDependencies"`
	Overrides            map[string]string           `yaml:"overrides"`
	Settings             map[string]any              `yaml:"settings"`
	Catalogs             map[string]any              `yaml:"catalogs"`
	PnpmfileChecksum     string                      `yaml:"pnpmfileChecksum"`
	Time                 map[string]string           `yaml:"time"`
}

// parsePnpmLock reads pnpm-lock.yaml into the set of packages its isolated
// install holds. It refuses what it cannot verify rather than guess: an
// unknown lockfile version, a package that is not a registry tarball with
// an integrity (git, directory and tarball-URL resolutions), patched
// dependencies, a name or version that is not one path element, a
// snapshot without its package, and a link that leaves the repository.
func parsePnpmLock(b []byte) (*pnpmLock, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("pnpm-lock.yaml is not UTF-8")
	}
	var y pnpmYAML
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&y); err != nil {
		return nil, fmt.Errorf("pnpm-lock.yaml: %v", err)
	}
	v6 := strings.HasPrefix(y.LockfileVersion, "6.")
	if y.LockfileVersion != "9.0" && !v6 {
		return nil, fmt.Errorf("lockfileVersion %q: %w", y.LockfileVersion, errPnpmLockVersion)
	}
	if len(y.Patched) > 0 {
		return nil, errors.New("pnpm-lock.yaml has patchedDependencies: an installed package that differs from its registry tarball is not verified")
	}
	l := &pnpmLock{Version: y.LockfileVersion, Importers: map[string]pnpmImporter{}, Packages: map[string]pnpmPackage{}}
	importers := y.Importers
	if importers == nil && (y.Dependencies != nil || y.DevDependencies != nil || y.OptionalDependencies != nil) {
		importers = map[string]pnpmYAMLImporter{".": {y.Dependencies, y.DevDependencies, y.OptionalDependencies}}
	}
	for dir, imp := range importers {
		if dir != "." && !pnpmRelPath(dir) {
			return nil, fmt.Errorf("pnpm-lock.yaml: importer %q is not a path inside the repository", dir)
		}
		deps := map[string]string{}
		for _, m := range []map[string]pnpmYAMLDep{imp.Dependencies, imp.DevDependencies, imp.OptionalDependencies} {
			for name, d := range m {
				if !npmName(name) {
					return nil, fmt.Errorf("pnpm-lock.yaml: importer %s: dependency name %q is not a package name", dir, name)
				}
				if _, dup := deps[name]; dup {
					return nil, fmt.Errorf("pnpm-lock.yaml: importer %s lists %s twice", dir, name)
				}
				deps[name] = strings.TrimPrefix(d.Version, "/")
			}
		}
		l.Importers[dir] = pnpmImporter{Dependencies: deps}
	}
	if !v6 {
		for key, s := range y.Snapshots {
			p, err := pnpmEntry(key, y.Packages)
			if err != nil {
				return nil, err
			}
			p.Optional = s.Optional
			p.Dependencies = mergeDeps(s.Dependencies, s.OptionalDependencies)
			l.Packages[key] = p
		}
		for key := range y.Packages {
			if !l.hasPackage(key) {
				return nil, fmt.Errorf("pnpm-lock.yaml: package %s has no snapshot", key)
			}
		}
	} else {
		// 6.x keeps resolution and dependencies in one entry keyed /name@version.
		byKey := map[string]pnpmYAMLPackage{}
		for key, p := range y.Packages {
			k, ok := strings.CutPrefix(key, "/")
			if !ok {
				return nil, fmt.Errorf("pnpm-lock.yaml: package key %q does not start with /", key)
			}
			if _, dup := byKey[k]; dup {
				return nil, fmt.Errorf("pnpm-lock.yaml: package %s is listed twice", k)
			}
			byKey[k] = p
		}
		for key, yp := range byKey {
			p, err := pnpmEntry(key, byKey)
			if err != nil {
				return nil, err
			}
			p.Optional = yp.Optional
			p.Dependencies = mergeDeps(yp.Dependencies, yp.OptionalDependencies)
			l.Packages[key] = p
		}
	}
	for key, p := range l.Packages {
		for name, v := range p.Dependencies {
			if err := l.checkRef(name, v); err != nil {
				return nil, fmt.Errorf("pnpm-lock.yaml: %s: %v", key, err)
			}
		}
	}
	for dir, imp := range l.Importers {
		for name, v := range imp.Dependencies {
			if t, ok := strings.CutPrefix(v, "link:"); ok {
				if !pnpmLinkInside(dir, t) {
					return nil, fmt.Errorf("pnpm-lock.yaml: importer %s: %s links to %q, outside the repository", dir, name, t)
				}
				continue
			}
			if err := l.checkRef(name, v); err != nil {
				return nil, fmt.Errorf("pnpm-lock.yaml: importer %s: %v", dir, err)
			}
		}
	}
	return l, nil
}

// hasPackage reports whether a snapshot resolves to the package key
// (name@version without peers).
func (l *pnpmLock) hasPackage(key string) bool {
	for _, p := range l.Packages {
		if p.Name+"@"+p.Version == key {
			return true
		}
	}
	return false
}

// checkRef: a dependency's version part names a snapshot of the lockfile,
// either name@<v> or, for an alias, the target's own key.
func (l *pnpmLock) checkRef(name, v string) error {
	if strings.HasPrefix(v, "link:") {
		return fmt.Errorf("dependency %s is a link (%s) from an installed package", name, v)
	}
	if _, ok := l.Packages[name+"@"+v]; ok {
		return nil
	}
	if _, ok := l.Packages[v]; ok {
		return nil
	}
	return fmt.Errorf("dependency %s@%s has no snapshot", name, v)
}

func mergeDeps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = strings.TrimPrefix(v, "/")
		}
	}
	return out
}

// pnpmEntry splits a snapshot key and joins it to its package's
// resolution, refusing what is not a registry tarball with an integrity.
func pnpmEntry(key string, packages map[string]pnpmYAMLPackage) (pnpmPackage, error) {
	name, version, ok := splitPnpmKey(key)
	if !ok {
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: %q is not name@version", key)
	}
	yp, ok := packages[name+"@"+version]
	if !ok {
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: snapshot %s has no package %s@%s", key, name, version)
	}
	r := yp.Resolution
	switch {
	case r == nil:
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: package %s@%s has no resolution", name, version)
	case r.Type != "" || r.Tarball != "" || r.Directory != "" || r.Repo != "":
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: package %s@%s is not a registry package (a git, directory or tarball resolution); only registry packages with an integrity are verified", name, version)
	case !sriValid(r.Integrity, true):
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: package %s@%s: integrity %q is not a sha512/sha384/sha256 SRI hash", name, version, r.Integrity)
	}
	if len(pnpmDirName(key)) > 120 || pnpmDirName(key) != strings.ToLower(pnpmDirName(key)) && !strings.Contains(key, "(") {
		// pnpm shortens such names with a hash of its own.
		return pnpmPackage{}, fmt.Errorf("pnpm-lock.yaml: %s: its .pnpm directory name is hashed by pnpm, which runmill does not reproduce", key)
	}
	return pnpmPackage{Key: key, Name: name, Version: version, Integrity: r.Integrity, OS: yp.OS, CPU: yp.CPU}, nil
}

// splitPnpmKey splits name@version(peers…) at the '@' that ends the name
// (a scope's leading '@' is part of it).
func splitPnpmKey(key string) (name, version string, ok bool) {
	base, _, _ := strings.Cut(key, "(")
	i := strings.LastIndex(base, "@")
	if i <= 0 {
		return "", "", false
	}
	name, version = base[:i], base[i+1:]
	if !npmName(name) || !npmVersion(version) {
		return "", "", false
	}
	if peers := key[len(base):]; peers != "" && !pnpmPeers(peers) {
		return "", "", false
	}
	return name, version, true
}

// pnpmPeers is a peer suffix: one or more balanced (…) groups of name,
// version, '@', '/' and nested groups; nothing that reaches a path
// separator once pnpmDirName has rewritten it.
func pnpmPeers(s string) bool {
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth < 0 {
				return false
			}
		case depth == 0:
			return false
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@/.-_~+", r)):
			return false
		}
	}
	return depth == 0
}

// pnpmDirName is pnpm 9's depPathToFilename for the keys runmill accepts:
// '/' becomes '+', and a peer suffix "(a@1)(b@2)" becomes "_a@1_b@2".
func pnpmDirName(key string) string {
	s := strings.ReplaceAll(key, "/", "+")
	if strings.Contains(s, "(") {
		s = strings.TrimSuffix(s, ")")
		s = strings.NewReplacer(")(", "_", "(", "_", ")", "_").Replace(s)
	}
	return s
}

// pnpmRelPath is a clean relative path inside the repository.
func pnpmRelPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// pnpmLinkInside: a workspace link written relative to its importer stays
// inside the repository.
func pnpmLinkInside(importer, target string) bool {
	if strings.HasPrefix(target, "/") {
		return false
	}
	j := path.Join(importer, target)
	return j != ".." && !strings.HasPrefix(j, "../") && j != "."
}

// sortedKeys is the lockfile's snapshot keys in order, for stable output.
func (l *pnpmLock) sortedKeys() []string {
	keys := make([]string, 0, len(l.Packages))
	for k := range l.Packages {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
