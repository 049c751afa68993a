package depstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/testreq"
)

// The yarn samples: a project depending on is-number and ms from the npm
// registry, at ms 2.1.2 (the base) or 2.1.3 (the bump), with the
// yarn.lock yarn 1.22.22 ("classic") or Berry 4.5.3 ("berry") wrote for
// it, and a node:test suite whose one test needs ms 2.1.2's output.

// YarnBin is the yarn CLI of flavour ("classic" or "berry") that
// scripts/setup.sh installs from the npm registry: $RUNMILL_YARN_CLASSIC or
// $RUNMILL_YARN_BERRY, else under the runmill tools cache.
func YarnBin(t testing.TB, flavour string) string {
	t.Helper()
	env := map[string]string{"classic": "RUNMILL_YARN_CLASSIC", "berry": "RUNMILL_YARN_BERRY"}[flavour]
	if env == "" {
		t.Fatalf("yarn flavour %q is neither classic nor berry", flavour)
	}
	p := os.Getenv(env)
	if p == "" {
		tools := os.Getenv("RUNMILL_TOOLS_DIR")
		if tools == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				t.Fatal(err)
			}
			tools = filepath.Join(cache, "runmill-tools")
		}
		p = filepath.Join(tools, "yarn-"+flavour, "node_modules", ".bin", "yarn")
	}
	_, err := os.Stat(p)
	testreq.Need(t, err == nil, "no yarn %s at %s (scripts/setup.sh installs it; or set %s): %v", flavour, p, env, err)
	return p
}

// WriteYarn writes the sample at ms version ms ("2.0.0", "2.1.2" or
// "2.1.3") with flavour's yarn.lock ("pnp" is Berry's), the test, and a
// .gitignore with node_modules/, .pnp.* and .yarn/.
func WriteYarn(t testing.TB, r *gittest.Repo, flavour, ms string) {
	t.Helper()
	if flavour == "pnp" {
		flavour = "berry"
	}
	src := filepath.Join(testdata(t), "yarn-sample")
	for dst, from := range map[string]string{
		"package.json":    "package-" + ms + ".json",
		"yarn.lock":       flavour + "-" + ms + ".lock",
		"test/ms.test.js": "ms.test.js",
		".gitignore":      "gitignore",
	} {
		b, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		r.Write(dst, string(b))
	}
}

// YarnInstall installs commit's package.json and yarn.lock (read from
// the repository at dir) into a new directory, as the operator does
// outside verification: the operator's yarn, HOME and configuration
// fixed, the repository's own yarnPath ignored, scripts off, the lockfile
// frozen. Berry ("berry", "pnp") gets the operator's .yarnrc.yml
// (nodeLinker node-modules or pnp, a project cache). It returns the directory for runmill deps import --from.
func YarnInstall(t testing.TB, repoDir, commit, flavour string) string {
	t.Helper()
	testreq.Slow(t, "yarn install fetches from the registry")
	Need(t, "node", "git")
	bin := flavour
	if bin == "pnp" {
		bin = "berry"
	}
	yarn := YarnBin(t, bin)
	dir := t.TempDir()
	for _, f := range []string{"package.json", "yarn.lock"} {
		b := Run(t, repoDir, nil, "git", "show", commit+":"+f)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "YARN_IGNORE_PATH=1", "YARN_ENABLE_SCRIPTS=0", "YARN_ENABLE_TELEMETRY=0"}
	if flavour == "classic" {
		Run(t, dir, env, yarn, "install", "--frozen-lockfile", "--ignore-scripts", "--no-default-rc", "--non-interactive")
	} else {
		linker := "node-modules"
		if flavour == "pnp" {
			linker = "pnp"
		}
		if err := os.WriteFile(filepath.Join(dir, ".yarnrc.yml"), []byte("nodeLinker: "+linker+"\nenableGlobalCache: false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		Run(t, dir, env, yarn, "install", "--immutable")
	}
	return dir
}
