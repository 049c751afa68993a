package deps

import (
	"os"
	"strings"
	"testing"
)

func TestParseCargoLock(t *testing.T) {
	semver := "[[package]]\nname = \"semver\"\nversion = \"1.0.14\"\nsource = \"" + cratesIO + "\"\nchecksum = \"e25dfac463d778e353db5be2449d1cce89bd6fd23c9f1ea21310ce6e5a1b29c4\"\n"
	for _, tc := range []struct {
		name, in string
		want     string // the error's substring; "" accepts
	}{
		{name: "v4 with a path package", in: "version = 4\n\n[[package]]\nname = \"p\"\nversion = \"0.1.0\"\ndependencies = [\n \"semver\",\n]\n\n" + semver},
		{name: "v3", in: "# comment\nversion = 3\n" + semver},
		{name: "empty dependencies", in: "version = 3\n[[package]]\nname = \"p\"\nversion = \"0.1.0\"\ndependencies = []\n"},
		{name: "no version line", in: semver, want: "format 1 or 2"},
		{name: "v1 metadata", in: "[[package]]\nname = \"p\"\nversion = \"0.1.0\"\n[metadata]\n", want: "format 1 or 2"},
		{name: "version 5", in: "version = 5\n", want: "not 3 or 4"},
		{name: "unknown table", in: "version = 4\n[[patch.unused]]\nname = \"x\"\n", want: "not understood"},
		{name: "unknown key", in: "version = 4\n" + semver + "replace = \"x\"\n", want: "not understood"},
		{name: "repeated key", in: "version = 4\n" + semver + "name = \"other\"\n", want: "twice"},
		{name: "registry package without checksum", in: "version = 4\n[[package]]\nname = \"semver\"\nversion = \"1.0.14\"\nsource = \"" + cratesIO + "\"\n", want: "not a SHA-256"},
		{name: "Debian's placeholder checksum", in: "version = 4\n[[package]]\nname = \"cfg-if\"\nversion = \"1.0.0\"\nsource = \"" + cratesIO + "\"\nchecksum = \"Could not get crate checksum\"\n", want: "not a SHA-256"},
		{name: "checksum on a path package", in: "version = 4\n[[package]]\nname = \"p\"\nversion = \"0.1.0\"\nchecksum = \"e25dfac463d778e353db5be2449d1cce89bd6fd23c9f1ea21310ce6e5a1b29c4\"\n", want: "not from a registry"},
		{name: "listed twice", in: "version = 4\n" + semver + semver, want: "listed twice"},
		{name: "escape in a string", in: "version = 4\n[[package]]\nname = \"a\\u0041\"\nversion = \"1.0.0\"\n", want: "escape"},
		{name: "name that is a path", in: "version = 4\n[[package]]\nname = \"../x\"\nversion = \"1.0.0\"\n", want: "not a crate name"},
		{name: "version that climbs", in: "version = 4\n[[package]]\nname = \"x\"\nversion = \"1/../../y\"\n", want: "not a version"},
		{name: "inline dependencies", in: "version = 4\n[[package]]\nname = \"x\"\nversion = \"1.0.0\"\ndependencies = [\"a\"]\n", want: "one entry a line"},
		{name: "unclosed dependencies", in: "version = 4\n[[package]]\nname = \"x\"\nversion = \"1.0.0\"\ndependencies = [\n \"a\",\n", want: "not closed"},
		{name: "not UTF-8", in: "version = 4\n\xff", want: "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCargoLock([]byte(tc.in))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestParseCargoLockReal reads lockfiles cargo wrote against Debian's
// crate directories.
func TestParseCargoLockReal(t *testing.T) {
	b, err := os.ReadFile("testdata/cargo/semver-0.9/Cargo.lock")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseCargoLock(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range l.Packages {
		got = append(got, p.dir()+" "+p.Source+" "+p.Checksum+" "+strings.Join(p.Dependencies, ","))
	}
	want := []string{
		"p-0.1.0   semver",
		"semver-0.9.0 " + cratesIO + " 1d7eb9ef2c18661902cc47e535f9bc51b78acd254da71d375c2f6720d9a40403 semver-parser",
		"semver-parser-0.7.0 " + cratesIO + " 388a1df253eca08550bef6c72392cfe7c30914bf41df5269b68cbd6ff8f570a3 ",
	}
	if l.Version != 4 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("version %d, packages:\n%s\nwant:\n%s", l.Version, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Debian's cfg-if directories declare no package checksum, and cargo
	// writes its placeholder into the lockfile: no checksum to verify.
	b, err = os.ReadFile("testdata/cargo/debian-cfg-if.Cargo.lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCargoLock(b); err == nil || !strings.Contains(err.Error(), "not a SHA-256") {
		t.Fatalf("a placeholder checksum: %v", err)
	}
}

// FuzzParseCargoLock: any input is refused or parses into packages whose
// directory is one path element and whose registry entries carry a
// checksum.
func FuzzParseCargoLock(f *testing.F) {
	for _, n := range []string{"semver-0.9/Cargo.lock", "semver-1/Cargo.lock", "debian-cfg-if.Cargo.lock"} {
		if b, err := os.ReadFile("testdata/cargo/" + n); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("version = 3\n[[package]]\nname = \"a\"\nversion = \"1.0.0\"\ndependencies = []\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseCargoLock(b)
		if err != nil {
			return
		}
		if l.Version != 3 && l.Version != 4 {
			t.Fatalf("accepted version %d", l.Version)
		}
		for _, p := range l.Packages {
			d := p.dir()
			if d == "." || d == ".." || strings.ContainsAny(d, "/\\\x00") {
				t.Fatalf("directory %q is not one path element", d)
			}
			if (strings.HasPrefix(p.Source, "registry+") || strings.HasPrefix(p.Source, "sparse+")) && len(p.Checksum) != 64 {
				t.Fatalf("registry package %s without a checksum", d)
			}
		}
	})
}
