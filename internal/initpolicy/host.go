package initpolicy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runmill/verify/internal/sandbox"
)

// Toolchain is where a tool a check needs lives, as the sandbox sees it.
type Toolchain struct {
	Tool string
	// Visible is where the task finds the tool with the default binds; ""
	// when it does not.
	Visible string
	// Host is where the host finds it (its PATH); "" when nowhere.
	Host string
	// Binds are host directories to add to sandbox.host_paths so the task
	// finds and runs the tool (the tool's installation root, and for a
	// rustup proxy the rustup home).
	Binds []string
	// Env is what the command needs in its environment (RUSTUP_HOME for a
	// rustup proxy, whose default home is $HOME/.rustup and HOME is the
	// task's /tmp).
	Env []string
	// Note is what a person must fix for the tool to work (a python3
	// without pytest).
	Note string
}

// Found reports whether the tool exists on the host at all.
func (t Toolchain) Found() bool { return t.Visible != "" || t.Host != "" }

// Host answers where tools live.
type Host interface {
	Locate(tool string) Toolchain
	// Present reports whether a path exists on the host: an explicit
	// sandbox.host_paths entry that does not exist is refused, where a
	// missing default is skipped.
	Present(path string) bool
}

// LocalHost looks tools up on this machine, the one that will run
// verification: PATH is runmill's own (it becomes the task's PATH,
// filtered by sandbox.SearchPath).
type LocalHost struct {
	PATH   string
	Getenv func(string) string
}

var _ Host = LocalHost{}

// Locate finds tool first where the task would with the default binds, then
// on the host's PATH, and says what must be bound for the task to run it.
func (h LocalHost) Locate(tool string) Toolchain {
	t := Toolchain{Tool: tool}
	for _, dir := range filepath.SplitList(sandbox.SearchPath(h.PATH, nil)) {
		p := filepath.Join(dir, tool)
		real, ok := executable(p)
		if !ok {
			continue
		}
		t.Visible = p
		if tool == "python3" && exec.Command(p, "-c", "import pytest").Run() != nil {
			t.Note = p + " cannot import pytest: install it for that interpreter (Debian: python3-pytest)"
		}
		if !underDefaults(real) {
			// A default-visible link into a directory the task cannot see
			// (/usr/local/bin/node → /opt/node/bin/node).
			t.Binds = append(t.Binds, installRoot(real))
		}
		h.rustup(&t, real)
		return t
	}
	for _, dir := range filepath.SplitList(h.PATH) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, tool)
		real, ok := executable(p)
		if !ok {
			continue
		}
		t.Host = p
		t.Binds = appendNew(t.Binds, installRoot(p))
		if !underDefaults(real) {
			t.Binds = appendNew(t.Binds, installRoot(real))
		}
		h.rustup(&t, real)
		return t
	}
	return t
}

// Present implements Host.
func (LocalHost) Present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// rustup: a rustup proxy (cargo → rustup) needs its home, which defaults to
// $HOME/.rustup, and the task's HOME is /tmp.
func (h LocalHost) rustup(t *Toolchain, real string) {
	if filepath.Base(real) != "rustup" {
		return
	}
	home := h.Getenv("RUSTUP_HOME")
	if home == "" && h.Getenv("HOME") != "" {
		home = filepath.Join(h.Getenv("HOME"), ".rustup")
	}
	if home == "" {
		return
	}
	if !underDefaults(home) {
		t.Binds = appendNew(t.Binds, home)
	}
	t.Env = append(t.Env, "RUSTUP_HOME="+home)
}

func executable(p string) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return real, true
}

func underDefaults(p string) bool {
	for _, root := range sandbox.DefaultHostPaths {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// installRoot is the directory to bind for a tool at p: the parent of its
// bin directory (/root/.cargo for /root/.cargo/bin/cargo), else its own
// directory.
func installRoot(p string) string {
	dir := filepath.Dir(p)
	if filepath.Base(dir) == "bin" && filepath.Dir(dir) != "/" {
		return filepath.Dir(dir)
	}
	return dir
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
