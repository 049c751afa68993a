package fsname_test

import (
	"testing"

	"github.com/runmill/verify/internal/fsname"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/b/../b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/a/b/..", "/a/b", false},
		{"/x/..b", "/x", true}, // a name starting with dots is a child
		{"relative", "/a", false},
		{"/", "/a", false},
	} {
		if got := fsname.Within(tc.path, tc.dir); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
}

func TestRandom(t *testing.T) {
	a, b := fsname.Random(8), fsname.Random(8)
	if len(a) != 16 || a == b {
		t.Fatalf("Random(8) = %q then %q: want 16 hex digits, different each time", a, b)
	}
}
