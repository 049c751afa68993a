package deps

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/digest"
)

// cratesIO is how Cargo.lock names the crates.io registry, whichever
// protocol fetched it.
const cratesIO = "registry+https://github.com/rust-lang/crates.io-index"

// cargoPackage is one [[package]] table of Cargo.lock.
type cargoPackage struct {
	Name, Version string
	// Source is empty for a package of the workspace itself (a path
	// dependency); registry+…, sparse+… or git+… otherwise.
	Source string
	// Checksum is the SHA-256 (hex) of the registry's .crate, as the
	// directory source's .cargo-checksum.json "package" must say it.
	Checksum     string
	Dependencies []string
}

// dir is the crate's directory in a directory source (`cargo vendor
// --versioned-dirs`, Debian's /usr/share/cargo/registry).
func (p cargoPackage) dir() string { return p.Name + "-" + p.Version }

// cargoLock is Cargo.lock in the formats cargo writes since 1.53 (version
// 3) and 1.78 (version 4).
type cargoLock struct {
	Version  int
	Packages []cargoPackage
}

// errOldCargoLock marks a Cargo.lock without a version line (formats 1
// and 2): format 1 keeps its checksums in [metadata], which this reader
// does not take apart, and regenerating it is a one-line fix.
var errOldCargoLock = errors.New("the Cargo.lock has no version line (format 1 or 2); regenerate it with cargo 1.53 or later and commit it")

// parseCargoLock reads Cargo.lock strictly: only what cargo writes —
// comments, the top-level version, [[package]] tables with the keys name,
// version, source, checksum and dependencies, values as plain strings or
// an array of them — and refuses anything else rather than guess what it
// means (a [patch] table, an escape, an inline table, a repeated key).
// Every registry package must carry a checksum, and names and versions
// must be usable as one directory name.
func parseCargoLock(b []byte) (*cargoLock, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("the Cargo.lock is not UTF-8")
	}
	l := &cargoLock{}
	var cur *cargoPackage
	seen := map[string]bool{} // keys of the current table
	sawVersion := false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == "[[package]]":
			if err := l.add(cur); err != nil {
				return nil, err
			}
			l.Packages = append(l.Packages, cargoPackage{})
			cur = &l.Packages[len(l.Packages)-1]
			seen = map[string]bool{}
			continue
		case strings.HasPrefix(line, "["):
			if line == "[metadata]" {
				return nil, errOldCargoLock
			}
			return nil, fmt.Errorf("line %d of Cargo.lock: table %s is not understood", n, line)
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d of Cargo.lock: want key = value, got %q", n, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if seen[key] {
			return nil, fmt.Errorf("line %d of Cargo.lock: %s given twice", n, key)
		}
		seen[key] = true
		if cur == nil {
			if key != "version" {
				return nil, fmt.Errorf("line %d of Cargo.lock: top-level key %q is not understood", n, key)
			}
			v, err := strconv.Atoi(val)
			if err != nil || (v != 3 && v != 4) {
				return nil, fmt.Errorf("line %d of Cargo.lock: version %s is not 3 or 4", n, val)
			}
			l.Version, sawVersion = v, true
			continue
		}
		if key == "dependencies" {
			deps, next, err := cargoArray(lines, i, val)
			if err != nil {
				return nil, err
			}
			cur.Dependencies, i = deps, next
			continue
		}
		s, err := cargoString(val)
		if err != nil {
			return nil, fmt.Errorf("line %d of Cargo.lock: %s: %v", n, key, err)
		}
		switch key {
		case "name":
			cur.Name = s
		case "version":
			cur.Version = s
		case "source":
			cur.Source = s
		case "checksum":
			cur.Checksum = s
		default:
			return nil, fmt.Errorf("line %d of Cargo.lock: package key %q is not understood", n, key)
		}
	}
	if err := l.add(cur); err != nil {
		return nil, err
	}
	if !sawVersion {
		return nil, errOldCargoLock
	}
	return l, nil
}

// add checks the package just read (nil before the first) and refuses a
// second entry for the same name, version and source.
func (l *cargoLock) add(p *cargoPackage) error {
	if p == nil {
		return nil
	}
	if !cargoName(p.Name) {
		return fmt.Errorf("in Cargo.lock: package name %q is not a crate name", p.Name)
	}
	if !cargoVersion(p.Version) {
		return fmt.Errorf("in Cargo.lock: package %s: version %q is not a version", p.Name, p.Version)
	}
	registry := strings.HasPrefix(p.Source, "registry+") || strings.HasPrefix(p.Source, "sparse+")
	switch {
	case registry && !digest.LowerHex(p.Checksum, 64):
		return fmt.Errorf("in Cargo.lock: package %s %s: checksum %q is not a SHA-256", p.Name, p.Version, p.Checksum)
	case !registry && p.Checksum != "":
		return fmt.Errorf("in Cargo.lock: package %s %s: a checksum on a package that is not from a registry", p.Name, p.Version)
	}
	for _, q := range l.Packages[:len(l.Packages)-1] {
		if q.Name == p.Name && q.Version == p.Version && q.Source == p.Source {
			return fmt.Errorf("in Cargo.lock: package %s %s is listed twice", p.Name, p.Version)
		}
	}
	return nil
}

// cargoString is a TOML basic string without escapes (cargo writes none in
// the keys this reader takes).
func cargoString(v string) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", fmt.Errorf("%s is not a string", v)
	}
	s := v[1 : len(v)-1]
	if strings.ContainsAny(s, "\"\\") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("%s has an escape or control character", v)
	}
	return s, nil
}

// cargoArray reads a dependencies array that opens on line i with val:
// "[]", or "[" then one string per line, each followed by a comma, then
// "]". It returns the index of the array's last line.
func cargoArray(lines []string, i int, val string) ([]string, int, error) {
	if val == "[]" {
		return []string{}, i, nil
	}
	if val != "[" {
		return nil, 0, fmt.Errorf("line %d of Cargo.lock: dependencies must be an array, one entry a line", i+1)
	}
	out := []string{}
	for i++; i < len(lines); i++ {
		item := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
		if item == "]" {
			return out, i, nil
		}
		if item == "" {
			continue
		}
		s, ok := strings.CutSuffix(item, ",")
		if !ok {
			return nil, 0, fmt.Errorf("line %d of Cargo.lock: dependency %q lacks its comma", i+1, item)
		}
		dep, err := cargoString(s)
		if err != nil || dep == "" {
			return nil, 0, fmt.Errorf("line %d of Cargo.lock: dependency %s is not a string", i+1, s)
		}
		out = append(out, dep)
	}
	return nil, 0, errors.New("in Cargo.lock: a dependencies array is not closed")
}

// cargoName is a crate name crates.io accepts: ASCII letters, digits, '-'
// and '_' — so "<name>-<version>" is one path element.
func cargoName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// cargoVersion is a semver version's characters (pre-release and build
// metadata included), starting with a digit, never "..".
func cargoVersion(s string) bool {
	if s == "" || len(s) > 128 || s[0] < '0' || s[0] > '9' || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+') {
			return false
		}
	}
	return true
}
