package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinkHops bounds the symlinks one lookup follows: the kernel's own
// bound (Linux MAXSYMLINKS), past which it fails the lookup with ELOOP.
const maxLinkHops = 40

// checkLinks refuses a symlink under root whose target, followed the way
// the kernel follows it, leaves root. The target is resolved through the
// tree's actual links — each ".." applies to the directory the lookup has
// reached, not to the text — so `b -> .` with `a -> b/b/b/../../../etc`
// is seen to climb three levels above root, where a lexical check sees
// root/etc. A lookup that ends inside root on a missing name or a file is
// accepted: the kernel fails it there, and the cached tree holds the same
// names. A chain of more than maxLinkHops links is refused. The refusal
// names the link below named, the directory root is (or is a copy of).
func checkLinks(strategy, root, named string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if why := resolvesOutside(root, rel); why != "" {
			target, _ := os.Readlink(p)
			return refuse(strategy, "%s links to %q, which %s %s (followed through the tree's links, as the kernel follows them); every link must stay inside it (npm workspace and file: links are not supported)",
				filepath.Join(named, rel), target, why, named)
		}
		return nil
	})
}

// resolvesOutside follows the symlink at rel, a path below root whose
// directories are real (a walk that does not follow links found it), and
// says why its lookup does not stay inside root, or "" when it does.
func resolvesOutside(root, rel string) string {
	var dir []string // the directories reached, below root
	if d := filepath.Dir(rel); d != "." {
		dir = strings.Split(d, string(filepath.Separator))
	}
	todo := []string{filepath.Base(rel)} // the link itself is followed first
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(dir) == 0 {
				return "climbs above"
			}
			dir = dir[:len(dir)-1]
			continue
		}
		p := filepath.Join(append([]string{root}, append(dir, c)...)...)
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return "" // the lookup fails here, inside root
		case err != nil:
			return fmt.Sprintf("cannot be followed (%v) in", err)
		case st.Mode()&fs.ModeSymlink != 0:
			if hops++; hops > maxLinkHops {
				return fmt.Sprintf("follows more than %d links (the kernel's limit) in", maxLinkHops)
			}
			t, err := os.Readlink(p)
			if err != nil {
				return fmt.Sprintf("cannot be followed (%v) in", err)
			}
			if filepath.IsAbs(t) {
				return "is absolute, outside"
			}
			todo = append(strings.Split(t, "/"), todo...)
		case st.IsDir():
			dir = append(dir, c)
		default:
			// A file: the lookup ends here, or fails (ENOTDIR) if
			// components remain; either way inside root.
			return ""
		}
	}
	return ""
}
