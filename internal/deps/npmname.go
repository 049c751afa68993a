package deps

import "strings"

// The npm registry's vocabulary, shared by the readers of npm, pnpm and
// yarn lockfiles: a name or version from a lockfile becomes a path in the
// install, so each is held to what the registry accepts before it is used.

// npmName is a package name npm's registry accepts: lower-case URL-safe
// characters, optionally scoped ("@scope/name"), neither part "." or "..".
// The characters !*'() are refused for new packages but live in old ones
// that lockfiles still name, so they are accepted (none is special in a path).
func npmName(s string) bool {
	if s == "" || len(s) > 214 {
		return false
	}
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2 && strings.HasPrefix(parts[0], "@"):
		parts[0] = parts[0][1:]
	case len(parts) != 1:
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || p[0] == '.' || p[0] == '_' {
			return false
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~!*'()", r)) {
				return false
			}
		}
	}
	return true
}

// npmVersion is a semver version's characters, starting with a digit.
func npmVersion(s string) bool { return cargoVersion(s) }

// sriValid is a Subresource Integrity string of one or more hashes the npm
// registry writes, each algorithm-base64 of the right length. strong refuses
// sha1, which yarn 1 still records for old packages but pnpm never writes.
func sriValid(s string, strong bool) bool {
	for _, h := range strings.Fields(s) {
		alg, b64, ok := strings.Cut(h, "-")
		n := map[string]int{"sha1": 28, "sha256": 44, "sha384": 64, "sha512": 88}[alg]
		if !ok || n == 0 || len(b64) != n || strong && alg == "sha1" ||
			strings.Trim(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != "" {
			return false
		}
	}
	return s != ""
}
