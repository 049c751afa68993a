package initpolicy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
	// Unusable says why the checks that need the tool cannot work with the
	// one the sandbox sees (a python3 that cannot run pytest); "" when the
	// tool works or was not proven to fail. init does not write those
	// checks: a check that can only fail proves nothing.
	Unusable string
	// Fix says how to make it work.
	Fix string
}

// Found reports whether the tool exists on the host at all.
func (t Toolchain) Found() bool { return t.Visible != "" || t.Host != "" }

// Interpreter is the path the sandbox's PATH resolves the tool to.
func (t Toolchain) Interpreter() string { return firstOf(t.Visible, t.Host) }

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

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
	// HostPaths are the binds the sandbox will have: sandbox.DefaultHostPaths
	// when empty (what init's template starts from), else the operator's
	// sandbox.host_paths, which replace the defaults.
	HostPaths []string
}

func (h LocalHost) binds() []string {
	if len(h.HostPaths) > 0 {
		return h.HostPaths
	}
	return sandbox.DefaultHostPaths
}

var _ Host = LocalHost{}

// Locate finds tool first where the task would with the default binds, then
// on the host's PATH, and says what must be bound for the task to run it.
func (h LocalHost) Locate(tool string) Toolchain {
	t := h.locate(tool)
	if tool == "python3" && t.Found() {
		// The check runs `python3 -m pytest`: prove that, with the
		// interpreter the task's PATH resolves to and the task's
		// environment, not merely that some python3 exists.
		binds := h.binds()
		if len(t.Binds) > 0 {
			binds = append(append([]string(nil), binds...), t.Binds...)
		}
		if err := ProbePytest(t.Interpreter(), sandbox.SearchPath(h.PATH, binds)); err != nil {
			t.Unusable = err.Error()
			t.Fix = PytestFix(t.Interpreter(), h.pytestElsewhere(t.Interpreter()))
		}
	}
	return t
}

func (h LocalHost) locate(tool string) Toolchain {
	t := Toolchain{Tool: tool}
	binds := h.binds()
	for _, dir := range filepath.SplitList(sandbox.SearchPath(h.PATH, h.HostPaths)) {
		if !under(dir, binds) {
			// The task's PATH lists the standard directories whether or
			// not they are bound; one that is not is empty there.
			continue
		}
		p := filepath.Join(dir, tool)
		real, ok := executable(p)
		if !ok {
			continue
		}
		t.Visible = p
		if !under(real, binds) {
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
		if !under(real, binds) {
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
	if !under(home, h.binds()) {
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

func underDefaults(p string) bool { return under(p, sandbox.DefaultHostPaths) }

func under(p string, roots []string) bool {
	for _, root := range roots {
		root = filepath.Clean(root)
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// pytestTimeout bounds one `python3 -m pytest --version`: it imports pytest
// and its plugins, well under a second; a hang must not hang init.
const pytestTimeout = time.Minute

// ProbePytest runs `INTERP -m pytest --version` the way a check's command
// would run it: PATH is the task's (sandboxPATH), HOME and TMPDIR are an
// empty private directory (the task's HOME is inside its TMPDIR, so a
// pytest installed in the operator's ~/.local does not count), and nothing
// else comes from runmill's environment (no PYTHONPATH, VIRTUAL_ENV or
// PYENV_*: the sandbox passes no host variable). nil means pytest runs;
// the error quotes what the interpreter said.
func ProbePytest(interp, sandboxPATH string) error {
	tmp, err := os.MkdirTemp("", "runmill-pytest-probe-")
	if err != nil {
		return fmt.Errorf("creating a private directory for the pytest probe: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), pytestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, interp, "-m", "pytest", "-p", "no:cacheprovider", "--version")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + sandboxPATH, "HOME=" + tmp, "TMPDIR=" + tmp, "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"TZ=UTC", "CI=true", "RUNMILL=1", "PYTHONDONTWRITEBYTECODE=1"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	said := strings.TrimSpace(string(lastLine(out)))
	if said == "" {
		said = err.Error()
	}
	return fmt.Errorf("%s -m pytest does not run with the sandbox's environment: %s", interp, said)
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// PytestFix says how to make `python3 -m pytest` work for interp. other is
// the prefix of another interpreter on this host that has pytest ("" when
// none): the sandbox reaches it only by its path, with its prefix bound.
func PytestFix(interp, other string) string {
	fix := "install pytest for " + interp
	if underDefaults(interp) {
		fix += " (Debian/Ubuntu: apt-get install python3-pytest)"
	} else {
		fix += " (" + interp + " -m pip install pytest)"
	}
	if other != "" {
		fix += fmt.Sprintf(", or use %s/bin/python3, which has pytest: add %s to sandbox.host_paths and call that interpreter by its path in an operator copy of the check", other, other)
	}
	return fix
}

// pytestElsewhere finds another python3 on the host's own PATH that can
// import pytest (a pyenv or virtualenv interpreter the sandbox does not
// see) and returns its sys.prefix. It runs with the host's environment: it
// asks where pytest is, not whether the sandbox can run it.
func (h LocalHost) pytestElsewhere(interp string) string {
	seen := map[string]bool{interp: true}
	for _, dir := range filepath.SplitList(h.PATH) {
		p := filepath.Join(dir, "python3")
		if !filepath.IsAbs(dir) || seen[p] {
			continue
		}
		seen[p] = true
		if _, ok := executable(p); !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), pytestTimeout)
		// -I and "/" keep the repository out of the import path (with -c
		// Python puts the working directory first, so a pytest.py there
		// would run on the host); the environment carries no secret.
		cmd := exec.CommandContext(ctx, p, "-I", "-c", "import sys, pytest; print(sys.prefix)")
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=" + h.PATH, "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
		out, err := cmd.Output()
		cancel()
		if prefix := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(prefix) && !underDefaults(prefix) {
			return prefix
		}
	}
	return ""
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
