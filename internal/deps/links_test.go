package deps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/rmerr"
)

// TestResolvesOutside holds the link check to the kernel: each tree is
// made for real, the check's answer is compared with where the kernel
// resolves the link (filepath.EvalSymlinks) whenever the target exists.
func TestResolvesOutside(t *testing.T) {
	// 8 links to "." then 8 "..": lexically root/etc, for the kernel 8
	// directories above root (the file system's root, at this depth).
	escape := strings.Repeat("b/", 8) + strings.Repeat("../", 8) + "etc"
	for _, tc := range []struct {
		name  string
		links map[string]string // path → target, made after the files
		link  string            // the link checked
		why   string            // "" when it stays inside
	}{
		{"the issue's example: b -> . and a -> b/b/…/../../etc", map[string]string{"b": ".", "a": escape}, "a", "climbs above"},
		{"a benign chain through links to directories", map[string]string{"alias": "pkg", "lib": "alias/lib", ".bin/tool": "../lib/index.js"}, ".bin/tool", ""},
		{".. inside the tree", map[string]string{"pkg/lib/up": "../../pkg/./lib//index.js"}, "pkg/lib/up", ""},
		{"a link to the root itself", map[string]string{"deep/er/root": "../.."}, "deep/er/root", ""},
		{"one level above the root", map[string]string{"deep/er/out": "../../.."}, "deep/er/out", "climbs above"},
		{"a dangling link outside", map[string]string{"gone": "../nonexistent"}, "gone", "climbs above"},
		{"a lookup that fails inside on a missing name", map[string]string{"stuck": "missing/../../../etc"}, "stuck", ""},
		{"a lookup that fails inside on a file", map[string]string{"stuck": "pkg/lib/index.js/../../../../etc"}, "stuck", ""},
		{"an absolute target", map[string]string{"abs": "/etc"}, "abs", "is absolute"},
		{"a loop", map[string]string{"x": "y", "y": "x"}, "x", "more than 40 links"},
		// Lexically root/d/../../pkg… is above the root; the kernel climbs
		// from deep/er, where d leads, and stays inside.
		{"a benign link a lexical check refuses", map[string]string{"d": "deep/er", "via": "d/../../pkg/lib/index.js"}, "via", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "node_modules")
			for _, d := range []string{"pkg/lib", "deep/er", ".bin"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "pkg/lib/index.js"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			for p, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
					t.Fatal(err)
				}
			}
			got := resolvesOutside(root, tc.link)
			if (got == "") != (tc.why == "") || !strings.Contains(got, tc.why) {
				t.Fatalf("resolvesOutside(%s) = %q, want %q", tc.link, got, tc.why)
			}
			if real, err := filepath.EvalSymlinks(filepath.Join(root, tc.link)); err == nil {
				inside := real == root || strings.HasPrefix(real, root+"/")
				if inside != (got == "") {
					t.Fatalf("the kernel resolves %s to %s (inside %v); the check says %q", tc.link, real, inside, got)
				}
			}
			err := checkLinks(NPM, root, root)
			if (err == nil) != (tc.why == "") {
				t.Fatalf("checkLinks = %v, want a refusal %v", err, tc.why != "")
			}
			if err != nil && (rmerr.CodeOf(err) != rmerr.VerifyDependencies || !strings.Contains(err.Error(), filepath.Join(root, tc.link))) {
				t.Fatalf("checkLinks = %v: want RM-VERIFY-005 naming %s", err, tc.link)
			}
		})
	}
}
