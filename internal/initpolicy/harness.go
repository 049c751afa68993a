package initpolicy

import "io/fs"

// runnerHarness lists the configuration files a test runner reads, which a
// starter check names under harness: so they are taken from the base like
// the policy (issue 19, docs/policy.md § The harness is policy too): a
// change that edits vitest.config.ts to exclude a directory is then judged
// by the base's config. Only files dedicated to the runner are listed —
// package.json or pyproject.toml also carry dependencies and settings an
// honest change edits, and pinning them would refuse honest changes.
//
// A pattern is written only when the project has a file it matches: the
// starter names what is there, and a glob keeps matching a renamed
// extension (jest.config.js → jest.config.ts).
func runnerHarness(fsys fs.FS, runner string) []string {
	var out []string
	for _, p := range runnerConfigs(runner) {
		if m, err := fs.Glob(fsys, p); err == nil && len(m) > 0 {
			out = append(out, p)
		}
	}
	return out
}

func runnerConfigs(runner string) []string {
	switch runner {
	case "vitest":
		return []string{"vitest.config.*", "vitest.workspace.*", "vite.config.*"}
	case "jest":
		return []string{"jest.config.*"}
	case "mocha":
		return []string{".mocharc.*"}
	case "pytest":
		return []string{"pytest.ini"}
	}
	return nil
}
