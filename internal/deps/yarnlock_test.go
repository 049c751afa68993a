package deps

import (
	"crypto/sha512"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// The lockfiles in testdata/yarn are yarn 1.22.22's and Berry 4.5.3's own,
// written by `yarn install` of is-number, ms and debug from the npm
// registry (scripts/setup.sh installs both CLIs).
func TestParseYarnLockReal(t *testing.T) {
	for _, tc := range []struct {
		file  string
		berry bool
		want  map[string]string // spec → name@version
	}{
		{"classic-ms-2.1.2.lock", false, map[string]string{"is-number@7.0.0": "is-number@7.0.0", "ms@2.1.2": "ms@2.1.2"}},
		{"classic-debug.lock", false, map[string]string{"debug@4.3.4": "debug@4.3.4", "ms@2.1.2": "ms@2.1.2", "ms@^2.1.3": "ms@2.1.3", "is-number@7.0.0": "is-number@7.0.0"}},
		{"berry-ms-2.1.2.lock", true, map[string]string{"ms@npm:2.1.2": "ms@2.1.2", "is-number@npm:7.0.0": "is-number@7.0.0", "t@workspace:.": "t@0.0.0-use.local"}},
		{"berry-debug.lock", true, map[string]string{"debug@npm:4.3.4": "debug@4.3.4", "ms@npm:2.1.2": "ms@2.1.2", "ms@npm:^2.1.3": "ms@2.1.3", "is-number@npm:7.0.0": "is-number@7.0.0", "t@workspace:.": "t@0.0.0-use.local"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/yarn/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			l, err := parseYarnLock(b)
			if err != nil {
				t.Fatal(err)
			}
			if l.Berry != tc.berry {
				t.Fatalf("berry = %v", l.Berry)
			}
			got := map[string]string{}
			for _, p := range l.Packages {
				for _, s := range p.Specs {
					got[s] = p.Name + "@" + p.Version
				}
				switch {
				case !tc.berry && !sriValid(p.Integrity, false):
					t.Errorf("%s: integrity %q", p.Name, p.Integrity)
				case tc.berry && p.LinkType == "hard" && !strings.HasPrefix(p.Checksum, "10c0/"):
					t.Errorf("%s: checksum %q", p.Name, p.Checksum)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for s, v := range tc.want {
				if got[s] != v {
					t.Errorf("%s resolves to %q, want %q", s, got[s], v)
				}
			}
		})
	}
}

// Berry's checksum is the SHA-512 of the cache zip itself, behind the
// cacheKey: the zip in testdata is Berry 4.5.3's own for ms 2.1.2.
func TestBerryChecksumIsTheZipHash(t *testing.T) {
	b, err := os.ReadFile("testdata/yarn/berry-ms-2.1.2.lock")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseYarnLock(b)
	if err != nil {
		t.Fatal(err)
	}
	zip, err := os.ReadFile("testdata/yarn/ms-npm-2.1.2-ec0c1512ff-a437714e2f.zip")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(zip)
	for _, p := range l.Packages {
		if p.Name == "ms" {
			if berryHash(p.Checksum) != hex.EncodeToString(sum[:]) || l.CacheKey+"/"+berryHash(p.Checksum) != p.Checksum {
				t.Fatalf("checksum %s is not the zip's SHA-512 %x", p.Checksum, sum)
			}
			return
		}
	}
	t.Fatal("no ms in the lockfile")
}

func TestParseYarnLockRefuses(t *testing.T) {
	const head = "# yarn lockfile v1\n\n"
	const sri = "sha512-sGkPx+VjMtmA6MX27oA4FBFELFCZZ4S4XqeGOXCv68tT+jb3vk/RyaKWP0PTKyWtmLSM0b+adUTEvbs1PEaH2w=="
	ok := head + "ms@2.1.2:\n  version \"2.1.2\"\n  integrity " + sri + "\n"
	if _, err := parseYarnLock([]byte(ok)); err != nil {
		t.Fatalf("the well-formed sample: %v", err)
	}
	berry := "__metadata:\n  version: 8\n  cacheKey: 10c0\n\n\"ms@npm:2.1.2\":\n  version: 2.1.2\n  resolution: \"ms@npm:2.1.2\"\n  checksum: 10c0/" + strings.Repeat("a", 128) + "\n  languageName: node\n  linkType: hard\n"
	if _, err := parseYarnLock([]byte(berry)); err != nil {
		t.Fatalf("the well-formed Berry sample: %v", err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not utf-8", head + "\xff", "UTF-8"},
		{"neither format", "ms@2.1.2:\n  version \"2.1.2\"\n", "no __metadata"},
		{"not yaml", "a: [\n", "neither"},
		{"tab", head + "ms@2.1.2:\n\tversion \"2.1.2\"\n", "tab"},
		{"unknown field", strings.Replace(ok, "integrity", "prepare", 1), "not understood"},
		{"unknown map", ok + "  scripts:\n    x \"y\"\n", "not understood"},
		{"field twice", ok + "  version \"2.1.2\"\n", "twice"},
		{"escape", head + "ms@2.1.2:\n  version \"2.1\\\".2\"\n", "escape"},
		{"bad integrity", strings.Replace(ok, sri, "sha512-short", 1), "integrity"},
		{"no version", head + "ms@2.1.2:\n  resolved \"x\"\n", "version"},
		{"path name", head + "../x@1:\n  version \"1.0.0\"\n", "package name"},
		{"mixed names", head + "ms@1, is-number@1:\n  version \"1.0.0\"\n", "does not name"},
		{"spec twice", ok + "\nms@2.1.2:\n  version \"2.1.3\"\n", "resolved twice"},
		{"odd indent", ok + "   x \"y\"\n", "indented"},
		{"dependency outside map", ok + "    x \"y\"\n", "outside"},
		{"old berry", strings.Replace(berry, "version: 8", "version: 3", 1), "older"},
		{"no cacheKey", strings.Replace(berry, "  cacheKey: 10c0\n", "", 1), "cacheKey"},
		{"berry unknown key", berry + "  postinstall: x\n", "not found"},
		{"berry bad checksum", strings.Replace(berry, strings.Repeat("a", 128), "abc", 1), "checksum"},
		{"berry no checksum", strings.Replace(berry, "  checksum: 10c0/"+strings.Repeat("a", 128)+"\n", "", 1), "without a checksum"},
		{"berry link type", strings.Replace(berry, "linkType: hard", "linkType: weird", 1), "linkType"},
		{"berry path name", strings.ReplaceAll(berry, "ms@npm", "../ms@npm"), "package name"},
		{"berry duplicate key", berry + "  version: 2.1.3\n", "already defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseYarnLock([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// FuzzParseYarnLock: either format's reader never panics, and every name
// it accepts stays one package directory under node_modules.
func FuzzParseYarnLock(f *testing.F) {
	for _, n := range []string{"classic-ms-2.1.2.lock", "classic-debug.lock", "berry-ms-2.1.2.lock", "berry-debug.lock"} {
		if b, err := os.ReadFile("testdata/yarn/" + n); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("# yarn lockfile v1\n\"@s/x@^1\", \"@s/x@~1\":\n  version \"1.0.0\"\n  dependencies:\n    a \"1\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseYarnLock(b)
		if err != nil {
			return
		}
		for _, p := range l.Packages {
			if !npmName(p.Name) || strings.HasPrefix(p.Name, "/") || strings.Contains("/"+p.Name+"/", "/../") {
				t.Fatalf("accepted package name %q", p.Name)
			}
			if !npmVersion(p.Version) || len(p.Specs) == 0 {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

// FuzzPnPState: the .pnp.cjs state reader never panics, and what it
// accepts leaves a runtime shorter than the input.
func FuzzPnPState(f *testing.F) {
	f.Add([]byte("x\nconst RAW_RUNTIME_STATE =\n'{\\\n  \"packageRegistryData\": [[null, [[null, {\"packageLocation\": \"./\", \"linkType\": \"SOFT\"}]]]]\\\n}';\ny\n"))
	f.Add([]byte("const RAW_RUNTIME_STATE =\n'{}\\q';\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, runtime, err := pnpState(b)
		if err == nil && len(runtime) >= len(b) {
			t.Fatalf("accepted %q leaving the runtime %q", b, runtime)
		}
	})
}
