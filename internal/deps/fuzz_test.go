package deps

import (
	"os"
	"strings"
	"testing"
)

// FuzzParseGoSum: any input either parses into lines that print back to
// themselves and name no path outside the module cache, or is refused.
func FuzzParseGoSum(f *testing.F) {
	if b, err := os.ReadFile("testdata/go-cmp/go.sum"); err == nil {
		f.Add(string(b))
	}
	f.Add("a v1 h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	f.Add("../x v1/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	f.Fuzz(func(t *testing.T, s string) {
		lines, err := parseGoSum([]byte(s))
		if err != nil {
			return
		}
		for _, l := range lines {
			again, err := parseGoSum([]byte(l.String()))
			if err != nil || len(again) != 1 || again[0] != l {
				t.Fatalf("%q does not round-trip: %v %v", l.String(), again, err)
			}
			for _, p := range []string{escapePath(l.Module), escapePath(l.Version)} {
				if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
					t.Fatalf("%q escapes the module cache", p)
				}
			}
		}
	})
}

// FuzzParseLockfile: the lockfile reader never panics, and what it accepts
// has a packages map.
func FuzzParseLockfile(f *testing.F) {
	if b, err := os.ReadFile("testdata/npm-mocha/package-lock.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"lockfileVersion":1}`))
	f.Add([]byte(`{"lockfileVersion":3,"packages":{"":{},"packages/a":{"link":true}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLockfile(b)
		if err == nil && l.Packages == nil {
			t.Fatal("accepted a lockfile without packages")
		}
		_, _ = dependencyDigest(b)
		_ = gypABI(b)
	})
}

func TestAllows(t *testing.T) {
	for _, tc := range []struct {
		list string
		v    string
		want bool
	}{
		{``, "linux", true},
		{`["linux"]`, "linux", true},
		{`["darwin"]`, "linux", false},
		{`["!win32"]`, "linux", true},
		{`["!linux"]`, "linux", false},
		{`["darwin","!linux"]`, "linux", false},
	} {
		if got := allows([]byte(tc.list), tc.v); got != tc.want {
			t.Errorf("allows(%s, %s) = %v, want %v", tc.list, tc.v, got, tc.want)
		}
	}
}

func TestHash1(t *testing.T) {
	// The go.mod line of go-cmp v0.6.0 in go.sum, from its go.mod bytes.
	dir := t.TempDir()
	mod := dir + "/v0.6.0.mod"
	os.WriteFile(mod, []byte("module github.com/google/go-cmp\n\ngo 1.13\n"), 0o644)
	got, err := hashGoMod(mod)
	if err != nil || got != "h1:17dUlkBOakJ0+DkrSSNjCkIjxS6bF9zb3elmeNGIjoY=" {
		t.Fatalf("hashGoMod = %s, %v", got, err)
	}
}
