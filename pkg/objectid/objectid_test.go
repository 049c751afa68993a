package objectid_test

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/objectid"
)

func TestValid(t *testing.T) {
	for name, tc := range map[string]struct {
		id   string
		want bool
	}{
		"sha1":              {strings.Repeat("a1", 20), true},
		"sha256":            {strings.Repeat("0f", 32), true},
		"empty":             {"", false},
		"abbreviated":       {"a1b2c3d", false},
		"upper case":        {strings.Repeat("A1", 20), false},
		"41 digits":         {strings.Repeat("a", 41), false},
		"63 digits":         {strings.Repeat("a", 63), false},
		"not hex":           {strings.Repeat("g", 40), false},
		"trailing newline":  {strings.Repeat("a", 40) + "\n", false},
		"an option":         {"-" + strings.Repeat("a", 39), false},
		"revision notation": {strings.Repeat("a", 38) + "^0", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := objectid.Valid(tc.id); got != tc.want {
				t.Errorf("Valid(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		strings.Repeat("ab", 20): "abababababab",
		"0123456789ab":           "0123456789ab",
		"main":                   "main",
		"":                       "",
	} {
		if got := objectid.Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add(strings.Repeat("a", 40))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if objectid.Valid(s) && len(objectid.Short(s)) != objectid.ShortLen {
			t.Fatalf("a valid id %q abbreviates to %q", s, objectid.Short(s))
		}
		if objectid.Valid(s) && strings.ToLower(s) != s {
			t.Fatalf("Valid admits %q, which is not lower case", s)
		}
	})
}
