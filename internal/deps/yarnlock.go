package deps

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/pkg/digest"
)

// yarnPackage is one resolved package of a yarn.lock, classic or Berry.
type yarnPackage struct {
	// Name is the package's directory under node_modules: the name before
	// the specifier's range, which for an alias ("a@npm:b@1") is the alias.
	Name    string
	Version string
	// Specs are the specifiers ("ms@^2.1.0") the entry resolves.
	Specs []string
	// Classic: the tarball URL and the registry's Subresource Integrity
	// ("sha512-…"), when the lockfile records one.
	Resolved, Integrity string
	// Berry: the locator ("ms@npm:2.1.2"), its checksum ("10c0/<sha512
	// hex>" — the SHA-512 of the cache zip, prefixed by the cacheKey) and
	// linkType ("hard" for a fetched package, "soft" for a workspace or
	// link).
	Resolution, Checksum, LinkType string
}

// yarnLock is a parsed yarn.lock.
type yarnLock struct {
	// Berry is true for a Berry (Yarn 2+) lockfile; then Version and
	// CacheKey are its __metadata.
	Berry    bool
	Version  int
	CacheKey string
	Packages []yarnPackage
}

// yarnClassicHeader is the line yarn 1 writes into every lockfile it makes.
const yarnClassicHeader = "# yarn lockfile v1"

// parseYarnLock reads either format: Berry's is YAML with a __metadata
// entry, classic's its own indented format announced by its header.
func parseYarnLock(b []byte) (*yarnLock, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("the yarn.lock is not UTF-8")
	}
	if bytes.Contains(b, []byte("\n"+yarnClassicHeader+"\n")) || bytes.HasPrefix(b, []byte(yarnClassicHeader+"\n")) {
		return parseYarnClassic(b)
	}
	return parseYarnBerry(b)
}

// parseYarnClassic reads the yarn 1 format strictly: comments, entries of
// one or more specifiers ending in ':' at column 0, fields indented by two
// spaces ("key value"), and the dependency maps indented by four; quoted
// strings without escapes. Anything else — another key, a tab, a nested
// map yarn does not write — is refused rather than guessed at.
func parseYarnClassic(b []byte) (*yarnLock, error) {
	l := &yarnLock{}
	var cur *yarnPackage
	var fields map[string]bool
	inMap := "" // the dependency map being read
	lines := strings.Split(string(b), "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimSuffix(raw, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, "\t") {
			return nil, fmt.Errorf("line %d of yarn.lock: a tab; yarn indents with spaces", n)
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		body := line[indent:]
		switch indent {
		case 0:
			if err := l.addClassic(cur); err != nil {
				return nil, err
			}
			specs, err := yarnSpecs(body)
			if err != nil {
				return nil, fmt.Errorf("line %d of yarn.lock: %v", n, err)
			}
			l.Packages = append(l.Packages, yarnPackage{Specs: specs})
			cur, fields, inMap = &l.Packages[len(l.Packages)-1], map[string]bool{}, ""
			cur.Name, err = yarnSpecName(specs[0])
			if err != nil {
				return nil, fmt.Errorf("line %d of yarn.lock: %v", n, err)
			}
			for _, s := range specs[1:] {
				if name, err := yarnSpecName(s); err != nil || name != cur.Name {
					return nil, fmt.Errorf("line %d of yarn.lock: specifier %q does not name %s", n, s, cur.Name)
				}
			}
		case 2:
			if cur == nil {
				return nil, fmt.Errorf("line %d of yarn.lock: a field outside an entry", n)
			}
			inMap = ""
			if key, ok := strings.CutSuffix(body, ":"); ok {
				if key != "dependencies" && key != "optionalDependencies" {
					return nil, fmt.Errorf("line %d of yarn.lock: map %q is not understood", n, key)
				}
				if fields[key] {
					return nil, fmt.Errorf("line %d of yarn.lock: %s given twice", n, key)
				}
				fields[key], inMap = true, key
				continue
			}
			key, val, err := yarnField(body)
			if err != nil {
				return nil, fmt.Errorf("line %d of yarn.lock: %v", n, err)
			}
			if fields[key] {
				return nil, fmt.Errorf("line %d of yarn.lock: %s given twice", n, key)
			}
			fields[key] = true
			switch key {
			case "version":
				cur.Version = val
			case "resolved":
				cur.Resolved = val
			case "integrity":
				cur.Integrity = val
			case "uid":
			default:
				return nil, fmt.Errorf("line %d of yarn.lock: field %q is not understood", n, key)
			}
		case 4:
			if inMap == "" {
				return nil, fmt.Errorf("line %d of yarn.lock: a dependency outside a dependency map", n)
			}
			if _, _, err := yarnField(body); err != nil {
				return nil, fmt.Errorf("line %d of yarn.lock: %v", n, err)
			}
		default:
			return nil, fmt.Errorf("line %d of yarn.lock: indented by %d spaces; yarn writes 0, 2 or 4", n, indent)
		}
	}
	if err := l.addClassic(cur); err != nil {
		return nil, err
	}
	return l, nil
}

// addClassic checks the entry just read (nil before the first).
func (l *yarnLock) addClassic(p *yarnPackage) error {
	if p == nil {
		return nil
	}
	if !npmVersion(p.Version) {
		return fmt.Errorf("in yarn.lock: %s: version %q is not a version", p.Specs[0], p.Version)
	}
	if p.Integrity != "" && !sriValid(p.Integrity, false) {
		return fmt.Errorf("in yarn.lock: %s: integrity %q is not a sha1/sha256/sha384/sha512 digest", p.Specs[0], p.Integrity)
	}
	return l.unique(p)
}

// unique refuses a specifier that two entries resolve.
func (l *yarnLock) unique(p *yarnPackage) error {
	for _, q := range l.Packages[:len(l.Packages)-1] {
		for _, s := range p.Specs {
			if slices.Contains(q.Specs, s) {
				return fmt.Errorf("in yarn.lock: specifier %q is resolved twice", s)
			}
		}
	}
	return nil
}

// yarnSpecs splits an entry line: `a@^1, "a@~1.2":` — each specifier bare
// or quoted, separated by ", ".
func yarnSpecs(body string) ([]string, error) {
	list, ok := strings.CutSuffix(body, ":")
	if !ok {
		return nil, fmt.Errorf("entry %q does not end in ':'", body)
	}
	var out []string
	for _, s := range strings.Split(list, ", ") {
		v, err := yarnString(s)
		if err != nil || v == "" {
			return nil, fmt.Errorf("specifier %q is not a string", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// yarnField is `key value` where each is bare or quoted.
func yarnField(body string) (key, val string, err error) {
	k, v, ok := cutUnquoted(body)
	if !ok {
		return "", "", fmt.Errorf("want key and value, got %q", body)
	}
	if key, err = yarnString(k); err != nil || key == "" {
		return "", "", fmt.Errorf("key %s is not a string", k)
	}
	if val, err = yarnString(v); err != nil {
		return "", "", fmt.Errorf("%s: %v", key, err)
	}
	return key, val, nil
}

// cutUnquoted cuts at the first space outside a quoted string.
func cutUnquoted(s string) (string, string, bool) {
	if strings.HasPrefix(s, `"`) {
		end := strings.Index(s[1:], `"`)
		if end < 0 {
			return "", "", false
		}
		k, rest := s[:end+2], s[end+2:]
		v, ok := strings.CutPrefix(rest, " ")
		return k, v, ok
	}
	return strings.Cut(s, " ")
}

// yarnString is a bare token (no space, quote, colon or comma, as yarn
// leaves only such strings unquoted) or a quoted string without escapes.
func yarnString(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		if len(s) < 2 || !strings.HasSuffix(s, `"`) {
			return "", fmt.Errorf("%s is not closed", s)
		}
		v := s[1 : len(s)-1]
		if strings.ContainsAny(v, "\"\\") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("%s has an escape or control character", s)
		}
		return v, nil
	}
	if s == "" || strings.ContainsAny(s, " \":,") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("%q must be quoted", s)
	}
	return s, nil
}

// yarnSpecName is the package name of a specifier or locator: what comes
// before the '@' that starts its range ("@scope/x@^1" → "@scope/x"). It
// must be a valid npm package name, so it is one or two path elements
// under node_modules and never climbs out.
func yarnSpecName(spec string) (string, error) {
	at := strings.Index(spec[min(1, len(spec)):], "@")
	if at < 0 {
		return "", fmt.Errorf("specifier %q has no range", spec)
	}
	name := spec[:at+1]
	if !npmName(name) {
		return "", fmt.Errorf("specifier %q: %q is not a package name", spec, name)
	}
	return name, nil
}

// berryEntry is one package of a Berry lockfile; the fields runmill does
// not check are listed so that an unknown key is refused.
type berryEntry struct {
	Version              string         `yaml:"version"`
	Resolution           string         `yaml:"resolution"`
	Checksum             string         `yaml:"checksum"`
	LanguageName         string         `yaml:"languageName"`
	LinkType             string         `yaml:"linkType"`
	Conditions           string         `yaml:"conditions"`
	Dependencies         map[string]any `yaml:"dependencies"`
	PeerDependencies     map[string]any `yaml:"peerDependencies"`
	DependenciesMeta     map[string]any `yaml:"dependenciesMeta"`
	PeerDependenciesMeta map[string]any `yaml:"peerDependenciesMeta"`
	Bin                  map[string]any `yaml:"bin"`
}

// parseYarnBerry reads a Berry lockfile: YAML whose __metadata says its
// version (4 or later: Yarn 2+) and cacheKey, and one entry per set of
// descriptors. Every key of an entry must be one Berry writes; every
// fetched package (linkType hard, npm protocol) must carry a checksum of
// the cacheKey's form.
func parseYarnBerry(b []byte) (*yarnLock, error) {
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("the yarn.lock is neither yarn 1's format (no %q line) nor YAML: %v", yarnClassicHeader, err)
	}
	meta, ok := top["__metadata"]
	if !ok {
		return nil, errors.New("the yarn.lock has no __metadata (a Berry lockfile) and no yarn 1 header")
	}
	var md struct {
		Version  int    `yaml:"version"`
		CacheKey string `yaml:"cacheKey"`
	}
	if err := strictNode(&meta, &md); err != nil {
		return nil, fmt.Errorf("in yarn.lock: __metadata: %v", err)
	}
	if md.Version < 4 {
		return nil, fmt.Errorf("in yarn.lock: __metadata version %d is older than Yarn 2's lockfiles", md.Version)
	}
	if md.CacheKey == "" || strings.ContainsAny(md.CacheKey, "/ ") {
		return nil, fmt.Errorf("in yarn.lock: __metadata cacheKey %q is missing or not one word", md.CacheKey)
	}
	l := &yarnLock{Berry: true, Version: md.Version, CacheKey: md.CacheKey}
	keys := make([]string, 0, len(top))
	for k := range top {
		if k != "__metadata" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		node := top[k]
		var e berryEntry
		if err := strictNode(&node, &e); err != nil {
			return nil, fmt.Errorf("in yarn.lock: %s: %v", k, err)
		}
		p := yarnPackage{Version: e.Version, Resolution: e.Resolution, Checksum: e.Checksum, LinkType: e.LinkType}
		for _, s := range strings.Split(k, ", ") {
			if s == "" {
				return nil, fmt.Errorf("in yarn.lock: entry %q has an empty descriptor", k)
			}
			p.Specs = append(p.Specs, s)
		}
		name, err := yarnSpecName(e.Resolution)
		if err != nil {
			return nil, fmt.Errorf("in yarn.lock: %s: resolution: %v", k, err)
		}
		p.Name = name
		for _, s := range p.Specs {
			if n, err := yarnSpecName(s); err != nil || n != name {
				return nil, fmt.Errorf("in yarn.lock: descriptor %q does not name %s", s, name)
			}
		}
		switch {
		case !npmVersion(p.Version):
			return nil, fmt.Errorf("in yarn.lock: %s: version %q is not a version", k, p.Version)
		case p.LinkType != "hard" && p.LinkType != "soft":
			return nil, fmt.Errorf("in yarn.lock: %s: linkType %q is neither hard nor soft", k, p.LinkType)
		case p.Checksum != "" && !berryChecksum(p.Checksum, md.CacheKey):
			return nil, fmt.Errorf("in yarn.lock: %s: checksum %q is not %s/<SHA-512 hex>", k, p.Checksum, md.CacheKey)
		case p.Checksum == "" && p.LinkType == "hard" && strings.Contains(p.Resolution, "@npm:"):
			return nil, fmt.Errorf("in yarn.lock: %s: a registry package without a checksum; run yarn install with checksums on and commit the lockfile", k)
		}
		l.Packages = append(l.Packages, p)
		if err := l.unique(&l.Packages[len(l.Packages)-1]); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// berryChecksum is "<cacheKey>/<128 hex>", or the bare hex of lockfiles
// older than cacheKey-prefixed checksums.
func berryChecksum(s, cacheKey string) bool {
	if hex, ok := strings.CutPrefix(s, cacheKey+"/"); ok {
		return digest.LowerHex(hex, 128)
	}
	return digest.LowerHex(s, 128)
}

// berryHash is the SHA-512 hex a checksum says the zip must have.
func berryHash(checksum string) string {
	if _, h, ok := strings.Cut(checksum, "/"); ok {
		return h
	}
	return checksum
}

// strictNode decodes a YAML node refusing unknown fields, which
// yaml.Node.Decode alone would ignore.
func strictNode(n *yaml.Node, v any) error {
	out, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	return dec.Decode(v)
}
