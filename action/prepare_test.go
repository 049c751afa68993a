package action_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/runmill/verify/internal/gittest"
)

// The tests of issue 23 item 1: a pull request whose manifests try to run
// its own programs in the Prepare dependencies step — a project .npmrc
// (git=${PWD}/tools/git.sh, script-shell, node-gyp), package.json config
// and lifecycle scripts, a git dependency whose own .npmrc names a program
// for the npm that pacote starts inside its clone, go.mod's toolchain line
// — and, while it is at it, an earlier step's GITHUB_PATH and GITHUB_ENV
// pointing at another runmill. Every program it names is a hostile script
// that leaves a line in a world-writable marker file when it runs (so a
// confined one could leave it too) and then tries to overwrite the
// installed runmill and to write the step's GITHUB_ENV, GITHUB_PATH and
// GITHUB_OUTPUT. TestHostileFixtureFires proves the fixture fires under the
// commands the step ran before.

// pub is the world-readable part of the fixture: the hostile programs, the
// bare repositories (served by git daemon on loopback), the module proxy.
type pub struct {
	dir    string
	marker string // world-writable; ran is the file a hostile program appends to
	port   int
}

func newPub(t *testing.T) *pub {
	t.Helper()
	dir, err := os.MkdirTemp("", "runmill-action-pub-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &pub{dir: dir, marker: filepath.Join(dir, "marker")}
	for _, d := range []string{"repos", "marker", "goproxy"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.serveGit(t)
	return p
}

// serveGit starts git daemon for the bare repositories, one --inetd process
// per connection on a loopback listener (no port to race for). The daemon
// runs as root, the repositories' owner, as a git host would.
func (p *pub) serveGit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = ln.Addr().(*net.TCPAddr).Port
	repos := filepath.Join(p.dir, "repos")
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f, err := c.(*net.TCPConn).File()
			c.Close()
			if err != nil {
				continue
			}
			cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--base-path="+repos, repos)
			cmd.Stdin, cmd.Stdout = f, f
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = cmd.Run()
				f.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
}

func (p *pub) url(repo string) string { return fmt.Sprintf("git://127.0.0.1:%d/%s.git", p.port, repo) }

// hostile writes the hostile program tagged tag and returns its path. It
// records that it ran, tries each line of targets ("overwrite PATH",
// "append PATH"), and then behaves as what it was run as: a shell for
// script-shell, git otherwise (so npm goes on and runs it again).
func (p *pub) hostile(t *testing.T, tag string) string {
	t.Helper()
	path := filepath.Join(p.dir, "hostile-"+tag+".sh")
	p.write(t, path, hostileScript(p, tag), 0o755)
	return path
}

func hostileScript(p *pub, tag string) string {
	return `#!/bin/sh
echo "uid=$(id -u) tag=` + tag + ` args=$*" >>` + filepath.Join(p.marker, "ran") + `
if [ -f ` + filepath.Join(p.marker, "targets") + ` ]; then
	while read -r how path; do
		case $how in
		overwrite) printf '#!/bin/sh\necho runmill: merge-ready\n' >"$path" ;;
		append) printf 'RUNMILL_BIN=%s\nstate-dir=%s\n%s\n' "$0" "$0" "$(dirname "$0")" >>"$path" ;;
		esac
	done <` + filepath.Join(p.marker, "targets") + `
fi
if [ ` + strconv.Quote(tag) + ` = root-script ]; then
	# An install script that stays behind for the next steps.
	setsid sleep 600 </dev/null >/dev/null 2>&1 &
fi
case ${1:-} in
"") exit 0 ;;
-c) exec /bin/sh "$@" ;;
esac
exec git "$@"
`
}

func (p *pub) write(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// ran is what hostile programs recorded, one line each.
func (p *pub) ran() string {
	b, _ := os.ReadFile(filepath.Join(p.marker, "ran"))
	return string(b)
}

// openUp makes the fixture readable (and the marker directory writable) by
// every user, so a hostile program running confined could write its line.
func (p *pub) openUp(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o100 != 0 {
			mode |= 0o111
		}
		return os.Chmod(path, mode)
	})
	if err == nil {
		err = os.Chmod(p.marker, 0o777)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// bareRepo pushes files as one commit to repos/NAME.git and returns the commit.
func (p *pub) bareRepo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	src := gittest.New(t)
	for f, c := range files {
		src.Write(f, c)
	}
	sha := src.Commit(name)
	bare := filepath.Join(p.dir, "repos", name+".git")
	src.Git("init", "-q", "--bare", "-b", "main", bare)
	src.Git("push", "-q", bare, "HEAD:refs/heads/main")
	return sha
}

// lockPkg is one installed package of a hand-written package-lock.json
// (v3, what npm writes for git dependencies).
type lockPkg struct {
	Version      string            `json:"version"`
	Resolved     string            `json:"resolved"`
	Dependencies map[string]string `json:"dependencies,omitempty"`
}

// npmProject returns package.json (extra fields merged in) and its
// package-lock.json for direct git dependencies and the whole tree.
func npmProject(t *testing.T, direct map[string]string, tree map[string]lockPkg, extra map[string]any) (pkg, lock string) {
	t.Helper()
	p := map[string]any{"name": "shop", "version": "1.0.0", "private": true, "dependencies": direct}
	for k, v := range extra {
		p[k] = v
	}
	root := map[string]any{"name": "shop", "version": "1.0.0", "dependencies": direct}
	packages := map[string]any{"": root}
	for name, lp := range tree {
		packages["node_modules/"+name] = lp
	}
	l := map[string]any{"name": "shop", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": packages}
	b1, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b2, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b1) + "\n", string(b2) + "\n"
}

// goProxy fills a file:// module proxy with example.com/dep v1.0.0 and a
// Go toolchain module for go1.99.1 whose go command is a hostile program,
// and returns the go.sum lines of example.com/dep.
func (p *pub) goProxy(t *testing.T) string {
	t.Helper()
	proxy := filepath.Join(p.dir, "goproxy")
	module := func(path, version string, files map[string]string) string {
		dir := filepath.Join(proxy, path, "@v")
		mod := "module " + path + "\n"
		if m, ok := files["go.mod"]; ok {
			mod = m
		}
		p.write(t, filepath.Join(dir, "list"), version+"\n", 0o644)
		p.write(t, filepath.Join(dir, version+".info"), `{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`, 0o644)
		p.write(t, filepath.Join(dir, version+".mod"), mod, 0o644)
		zipPath := filepath.Join(dir, version+".zip")
		var buf bytes.Buffer
		z := zip.NewWriter(&buf)
		for name, body := range files {
			w, err := z.Create(path + "@" + version + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(w, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		p.write(t, zipPath, buf.String(), 0o644)
		h, err := dirhash.HashZip(zipPath, dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		hm, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(mod)), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", path, version, h, path, version, hm)
	}
	sum := module("example.com/dep", "v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n\ngo 1.22\n",
		"dep.go": "package dep\n\nconst Answer = 42\n",
	})
	platform := runtime.GOOS + "_" + runtime.GOARCH
	module("golang.org/toolchain", "v0.0.1-go1.99.1."+runtime.GOOS+"-"+runtime.GOARCH, map[string]string{
		"bin/go":                        hostileScript(p, "toolchain"),
		"bin/gofmt":                     "",
		"lib/time/README":               "",
		"pkg/tool/" + platform + "/vet": "",
		"VERSION":                       "go1.99.1\n",
	})
	return sum
}

// depsFixture is the repository of the dependency tests: a base whose check
// needs an npm git dependency, and candidates:
//   - honest: a second git dependency and a Go module (a proxy module and a
//     directory replacement), as a change that updates dependencies is;
//   - hostile: everything at the top of this file at once;
//   - gitdep: only the hostile git dependency (TestHostileFixtureFires);
//   - scripts: a root postinstall script (the dependency-scripts tests).
type depsFixture struct {
	fixture
	pub                              *pub
	honest, hostile, gitdep, scripts string
}

const depsChecks = `checks:
  - id: unit
    run: node -e 'require("honest-dep")' && sh tests/run.sh > reports/unit.tap
    dependencies: npm
    report: {path: reports/unit.tap, format: tap}
    timeout: 60s
`

func newDepsFixture(t *testing.T) *depsFixture {
	t.Helper()
	for _, tool := range []string{"node", "npm", "go", "git", "unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/setup.sh): %v", tool, err)
		}
	}
	p := newPub(t)
	f := &depsFixture{pub: p}
	honestSHA := p.bareRepo(t, "honest", map[string]string{
		"package.json": `{"name": "honest-dep", "version": "1.0.0", "main": "index.js"}` + "\n",
		"index.js":     "module.exports = 'honest'\n",
	})
	bSHA := p.bareRepo(t, "b", map[string]string{"package.json": `{"name": "gitdep-b", "version": "1.0.0"}` + "\n"})
	evil := p.hostile(t, "gitdep-npmrc")
	// A prepare script makes pacote run `npm install` inside the clone,
	// where this .npmrc is the project config, and gitdep-b makes that npm
	// run git.
	aSHA := p.bareRepo(t, "a", map[string]string{
		"package.json": `{"name": "gitdep-a", "version": "1.0.0", "scripts": {"prepare": "sh ` + p.hostile(t, "gitdep-prepare") +
			`"}, "dependencies": {"gitdep-b": "` + p.url("b") + `"}}` + "\n",
		".npmrc": "git=" + evil + "\nscript-shell=" + evil + "\nignore-scripts=false\n",
	})
	sum := p.goProxy(t)
	p.hostile(t, "path-runmill")

	honestDep := lockPkg{Version: "1.0.0", Resolved: p.url("honest") + "#" + honestSHA}
	bDep := lockPkg{Version: "1.0.0", Resolved: p.url("b") + "#" + bSHA}
	aDep := lockPkg{Version: "1.0.0", Resolved: p.url("a") + "#" + aSHA, Dependencies: map[string]string{"gitdep-b": p.url("b")}}

	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", depsChecks)
	r.Write("tests/run.sh", tapRunner)
	r.Write("tests/total.t", "x\n")
	r.Write(".gitignore", "node_modules/\n")
	pkg, lock := npmProject(t, map[string]string{"honest-dep": p.url("honest")}, map[string]lockPkg{"honest-dep": honestDep}, nil)
	r.Write("package.json", pkg)
	r.Write("package-lock.json", lock)
	f.base = r.Commit("base")

	goMod := "module example.com/shop\n\ngo 1.22\n\ntoolchain go1.99.1\n\nrequire (\n\texample.com/dep v1.0.0\n\texample.com/local v0.0.0\n)\n\nreplace example.com/local => ./local\n"
	writeGo := func() {
		r.Write("go.mod", goMod)
		r.Write("go.sum", sum)
		r.Write("local/go.mod", "module example.com/local\n\ngo 1.22\n")
		r.Write("local/local.go", "package local\n")
	}

	r.Checkout("honest", true)
	pkg, lock = npmProject(t, map[string]string{"honest-dep": p.url("honest"), "gitdep-b": p.url("b")},
		map[string]lockPkg{"honest-dep": honestDep, "gitdep-b": bDep}, nil)
	r.Write("package.json", pkg)
	r.Write("package-lock.json", lock)
	r.Write("tests/discount.t", "x\n")
	writeGo()
	f.honest = r.Commit("honest: a dependency and a Go module more")

	r.Checkout("main", false)
	r.Checkout("gitdep", true)
	pkg, lock = npmProject(t, map[string]string{"honest-dep": p.url("honest"), "gitdep-a": p.url("a")},
		map[string]lockPkg{"honest-dep": honestDep, "gitdep-a": aDep, "gitdep-b": bDep}, nil)
	r.Write("package.json", pkg)
	r.Write("package-lock.json", lock)
	f.gitdep = r.Commit("a git dependency with a hostile .npmrc")

	// hostile: on top of gitdep, the project's own .npmrc, package.json
	// config and lifecycle scripts, go.mod's toolchain line.
	prog := p.hostile(t, "package-json")
	pkg, lock = npmProject(t, map[string]string{"honest-dep": p.url("honest"), "gitdep-a": p.url("a")},
		map[string]lockPkg{"honest-dep": honestDep, "gitdep-a": aDep, "gitdep-b": bDep}, map[string]any{
			"config": map[string]any{"git": prog, "script-shell": prog, "node-gyp": prog, "npm_config_git": prog,
				"ignore-scripts": false, "userconfig": prog},
			"publishConfig": map[string]any{"git": prog},
			"scripts": map[string]string{"preinstall": "sh " + prog, "install": "sh " + prog, "postinstall": "sh " + prog,
				"prepare": "sh " + prog},
			"allowScripts": map[string]bool{"gitdep-a": true},
		})
	r.Write("package.json", pkg)
	r.Write("package-lock.json", lock)
	r.Write(".npmrc", "git=${PWD}/tools/git.sh\nscript-shell="+p.hostile(t, "project-npmrc-shell")+"\nnode-gyp="+prog+
		"\nshell="+prog+"\nignore-scripts=false\nnpm_config_git="+prog+"\nglobalconfig=${PWD}/tools/npmrc\n")
	r.Write("tools/npmrc", "git="+prog+"\n")
	r.Write("tools/git.sh", hostileScript(p, "project-npmrc"))
	if err := os.Chmod(filepath.Join(r.Dir, "tools/git.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeGo()
	f.hostile = r.Commit("hostile")

	r.Checkout("main", false)
	r.Checkout("scripts", true)
	pkg, lock = npmProject(t, map[string]string{"honest-dep": p.url("honest")}, map[string]lockPkg{"honest-dep": honestDep},
		map[string]any{"scripts": map[string]string{"postinstall": "sh " + p.hostile(t, "root-script")}})
	r.Write("package.json", pkg)
	r.Write("package-lock.json", lock)
	f.scripts = r.Commit("scripts: a postinstall of the pull request")
	r.Checkout("main", false)

	f.dir = r.Dir
	f.merge = f.base
	p.openUp(t)
	if out, err := exec.Command("chown", "-R", runnerUID+":"+runnerUID, r.Dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	return f
}

// signedJob is a whole signed job on the pull request whose head is head,
// preparing npm and go-modules, with the job's module settings: the
// fixture's proxy, no checksum database, and GOTOOLCHAIN=auto, under which
// go.mod's toolchain line would download and run the hostile toolchain.
// Its log is shown when the test fails.
func (f *depsFixture) signedJob(t *testing.T, head string) *job {
	j := newJob(t, f.fixture, "pull_request", head, map[string]string{
		"prepare-dependencies": "npm, go-modules",
		"signing-key":          signingKey(t),
		"containerd-address":   containerdAddress,
		"parallel":             "2",
		"github-token":         "",
	})
	// The fixture's proxy first (its hostile go1.99.1 toolchain among
	// them), then, as newJob has it, the module cache that holds the
	// action's pinned Go for the Build step: without it this test passed
	// only when an earlier job of the binary had saved the build cache.
	j.env["GOPROXY"] = "file://" + filepath.Join(f.pub.dir, "goproxy") + ",file://" + filepath.Join(goModCache(t), "cache", "download")
	j.env["GOSUMDB"] = "off"
	j.env["GOTOOLCHAIN"] = "auto"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("job log:\n%s", j.log.String())
		}
	})
	return j
}

// TestHostileFixtureFires: the commands the Prepare dependencies step ran
// before issue 23 — npm ci --ignore-scripts in a worktree of the candidate,
// go mod download there — run the pull request's programs: the project
// .npmrc's git=${PWD}/tools/git.sh, the git dependency's .npmrc in the npm
// pacote starts in its clone, go.mod's toolchain. So the fixture can fail
// the tests below.
func TestHostileFixtureFires(t *testing.T) {
	f := newDepsFixture(t)
	run := func(commit string, env []string, name string, args ...string) {
		wt := filepath.Join(t.TempDir(), "wt")
		if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", f.dir, "worktree", "add", "--detach", wt, commit).CombinedOutput(); err != nil {
			t.Fatalf("worktree: %v %s", err, out)
		}
		cmd := exec.Command(name, args...)
		cmd.Dir = wt
		// (cd "$wt" && …) as the step did: npm expands ${PWD} from the environment.
		cmd.Env = append(os.Environ(), append([]string{"HOME=" + t.TempDir(), "PWD=" + wt}, env...)...)
		out, _ := cmd.CombinedOutput()
		t.Logf("%s %s in %s:\n%s", name, strings.Join(args, " "), commit, out)
	}
	run(f.hostile, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	run(f.gitdep, nil, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	run(f.hostile, []string{"GOMODCACHE=" + t.TempDir(), "GOFLAGS=-modcacherw", "GOTOOLCHAIN=auto", "GOSUMDB=off",
		"GOPROXY=file://" + filepath.Join(f.pub.dir, "goproxy")}, "go", "mod", "download")
	ran := f.pub.ran()
	for _, tag := range []string{"tag=project-npmrc ", "tag=gitdep-npmrc ", "tag=toolchain "} {
		if !strings.Contains(ran, tag) {
			t.Errorf("the old commands did not run %q; the hostile programs recorded:\n%s", tag, ran)
		}
	}
}

// binState is what the tests hold the installed runmill to: its content,
// owner and mode.
func binState(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the installed runmill: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("sha256:%s uid=%d mode=%v", hex.EncodeToString(sum[:]), fileUID(st), st.Mode())
}

func fileUID(fi fs.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }

// uidProcesses lists the processes running as uid.
func uidProcesses(uid string) []string {
	var out []string
	status, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, s := range status {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == uid {
				out = append(out, s)
			}
		}
	}
	return out
}

// watchPrepare arms the hostile programs' targets once the Build step has
// installed runmill — the binary, and the Prepare step's GITHUB_ENV,
// GITHUB_PATH and GITHUB_OUTPUT — and checks after every later step that
// the binary is unchanged and root-owned. It returns the installed path
// (set once the build ran).
func watchPrepare(t *testing.T, j *job, p *pub) *string {
	bin := new(string)
	var want string
	j.afterStep = func(i int, r stepResult) {
		switch {
		case i == stepBuild:
			*bin = r.Outputs["runmill"]
			if *bin == "" {
				return
			}
			want = binState(t, *bin)
			if !strings.Contains(want, " uid=0 mode=-rwxr-xr-x") {
				t.Errorf("the installed runmill is %s, want root's, 0755", want)
			}
			files := filepath.Join(j.env["RUNNER_TEMP"], "_runner_file_commands")
			var targets strings.Builder
			fmt.Fprintf(&targets, "overwrite %s\n", *bin)
			for _, k := range []string{"github_env", "github_path", "github_output"} {
				fmt.Fprintf(&targets, "append %s\n", filepath.Join(files, fmt.Sprintf("%s_%d", k, stepPrepare)))
			}
			p.write(t, filepath.Join(p.marker, "targets"), targets.String(), 0o644)
		case i > stepBuild && *bin != "" && i < stepGate:
			if got := binState(t, *bin); got != want {
				t.Errorf("after step %q the installed runmill is %s, was %s", r.Name, got, want)
			}
		}
	}
	return bin
}

// earlierStepWrote stands for a step before the action that wrote
// GITHUB_PATH and GITHUB_ENV (what anything running as the runner user
// could do): another runmill first on PATH, RUNMILL_BIN and the state dir
// pointing at it.
func earlierStepWrote(t *testing.T, j *job, p *pub) {
	fake := filepath.Join(p.dir, "path-bin")
	p.write(t, filepath.Join(fake, "runmill"), "#!/bin/sh\nexec "+filepath.Join(p.dir, "hostile-path-runmill.sh")+" \"$@\"\n", 0o755)
	j.path = append([]string{fake}, j.path...)
	j.env["RUNMILL_BIN"] = filepath.Join(fake, "runmill")
	j.env["RUNMILL_PREPARED_OUT"] = p.dir
}

// checkAbsolute: every runmill root ran is the installed binary, by its
// absolute path.
func checkAbsolute(t *testing.T, sudo, bin string, want ...string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(sudo), "\n") {
		if strings.Contains(line, "runmill ") && !strings.Contains(line, " "+bin+" ") && !strings.HasPrefix(line, "sudo -n install ") &&
			!strings.HasPrefix(line, "sudo -n rm -rf -- /var/lib/runmill-action/") {
			t.Errorf("root ran a runmill other than %s: %s", bin, line)
		}
	}
	for _, w := range want {
		if !strings.Contains(sudo, " "+bin+" "+w) {
			t.Errorf("root never ran %s %s:\n%s", bin, w, sudo)
		}
	}
}

// TestPrepareHostile runs the action with prepare-dependencies on the
// hostile pull request, after an earlier step pointed GITHUB_PATH and
// GITHUB_ENV at another runmill: no program of the pull request ran, the
// installed runmill stayed root's and unchanged through every step, root
// ran only it and by its absolute path, the candidate's npm install and
// its Go modules (go.mod's toolchain line ignored) were imported, and the
// verdict is the real runmill's.
func TestPrepareHostile(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	f := newDepsFixture(t)
	j := f.signedJob(t, f.hostile)
	earlierStepWrote(t, j, f.pub)
	bin := watchPrepare(t, j, f.pub)
	j.run()
	if ran := f.pub.ran(); ran != "" {
		t.Errorf("programs of the pull request ran:\n%s", ran)
	}
	// Every step through verify succeeds; the base proof's, not asked for, are skipped.
	for i := range stepVerify + 1 {
		want := "success"
		switch {
		case strings.HasSuffix(j.ran[i].Name, "the base proof"):
			want = "skipped"
		case i == stepSave && j.ran[stepRestore].Outputs["cache-hit"] == "true":
			want = "skipped" // an earlier job of this binary saved the key
		}
		if j.ran[i].Outcome != want {
			t.Errorf("step %q: %s, want %s", j.ran[i].Name, j.ran[i].Outcome, want)
		}
	}
	out := j.outputs()
	if out["verdict"] != "merge-ready" {
		t.Errorf("verdict %q, want the real runmill's merge-ready", out["verdict"])
	}
	sudo := j.sudoLog()
	checkAbsolute(t, sudo, *bin, "verify --github-actions", "deps import --repo "+f.dir+" --commit "+f.hostile,
		"deps import --strategy go-modules --repo "+f.dir+" --commit "+f.hostile)
	for _, w := range []string{"sudo -n unshare --pid --fork --kill-child --mount-proc -- setpriv --reuid=", " ci --no-audit --no-fund", " mod download"} {
		if !strings.Contains(sudo, w) {
			t.Errorf("the package managers did not run confined (%q):\n%s", w, sudo)
		}
	}
	state := j.ran[stepPrepare].Outputs["state-dir"]
	if !strings.HasPrefix(state, j.env["RUNNER_TEMP"]+"/runmill.") || out["bundle-path"] == "" || !strings.HasPrefix(out["bundle-path"], state+"/runs/") {
		t.Errorf("state dir %q, bundle %q: want the Prepare step's own, under RUNNER_TEMP", state, out["bundle-path"])
	}
	for _, strategy := range []string{"npm", "go-modules"} {
		if _, err := os.Stat(filepath.Join(state, "deps", "index", strategy, f.hostile)); err != nil {
			t.Errorf("the candidate's %s install was not imported: %v", strategy, err)
		}
	}
	if j.env["RUNMILL_BIN"] != filepath.Join(f.pub.dir, "path-bin", "runmill") {
		t.Errorf("GITHUB_ENV gained RUNMILL_BIN=%q", j.env["RUNMILL_BIN"])
	}
	if _, err := os.Stat(filepath.Dir(*bin)); !os.IsNotExist(err) {
		t.Errorf("the gate left %s: %v", filepath.Dir(*bin), err)
	}
}

// TestPrepareHonest is the control: a pull request that adds an npm git
// dependency and a Go module (from the proxy, with a directory
// replacement) gets both sides prepared, imported and used, and is
// merge-ready.
func TestPrepareHonest(t *testing.T) {
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	f := newDepsFixture(t)
	j := f.signedJob(t, f.honest)
	bin := watchPrepare(t, j, f.pub)
	j.run()
	if j.failed || j.outputs()["verdict"] != "merge-ready" {
		t.Fatalf("the honest pull request: failed %v, verdict %q", j.failed, j.outputs()["verdict"])
	}
	checkAbsolute(t, j.sudoLog(), *bin, "deps import --repo "+f.dir+" --commit "+f.base,
		"deps import --repo "+f.dir+" --commit "+f.honest, "deps import --strategy go-modules --repo "+f.dir+" --commit "+f.honest)
	if ran := f.pub.ran(); ran != "" {
		t.Errorf("hostile programs ran:\n%s", ran)
	}
}

// TestDependencyScripts: dependency-scripts: true is refused in a job that
// holds the signing key, before any package manager runs; without the key
// the pull request's install script runs, but as a throwaway uid that can
// write neither the installed runmill nor the step's runtime files, and
// nothing it starts outlives the install.
func TestDependencyScripts(t *testing.T) {
	f := newDepsFixture(t)
	prepareOnly := func(t *testing.T, inputs map[string]string) *job {
		inputs["prepare-dependencies"] = "npm"
		inputs["dependency-scripts"] = "true"
		inputs["github-token"] = ""
		j := newJob(t, f.fixture, "pull_request", f.scripts, inputs)
		for i := range j.action.Runs.Steps {
			j.action.Runs.Steps[i].If = "cancelled()"
		}
		standInBuild(t, j)
		j.action.Runs.Steps[stepPrepare].If = "always()"
		return j
	}
	t.Run("with signing-key", func(t *testing.T) {
		j := prepareOnly(t, map[string]string{"signing-key": "PEM"})
		j.run()
		r := j.ran[stepPrepare]
		if r.Outcome != "failure" || !slices.ContainsFunc(r.Annotations, func(a string) bool {
			return strings.HasPrefix(a, "error runmill (RM-ACTIONS-003): dependency-scripts: true runs install scripts the pull request's lockfile chooses, and this job holds signing-key: refused. Run them in a job without signing-key")
		}) {
			t.Errorf("prepare %s, annotations %q", r.Outcome, r.Annotations)
		}
		if strings.Contains(j.sudoLog(), "unshare") || f.pub.ran() != "" {
			t.Errorf("a package manager ran:\n%s\n%s", j.sudoLog(), f.pub.ran())
		}
	})
	t.Run("without signing-key", func(t *testing.T) {
		j := prepareOnly(t, map[string]string{})
		bin := watchPrepare(t, j, f.pub)
		j.run()
		r := j.ran[stepPrepare]
		if r.Outcome != "success" {
			t.Fatalf("prepare %s:\n%s", r.Outcome, r.Log)
		}
		ran := f.pub.ran()
		var uid string
		for _, line := range strings.Split(strings.TrimSpace(ran), "\n") {
			if u, ok := strings.CutPrefix(strings.Fields(line)[0], "uid="); ok && strings.Contains(line, "tag=root-script") {
				uid = u
			}
		}
		n, err := strconv.ParseInt(uid, 10, 64)
		if err != nil || n < 1<<30 || n >= 1<<31 {
			t.Fatalf("the install script ran as uid %q, want a throwaway one in [2^30, 2^31):\n%s", uid, ran)
		}
		if strings.Contains(ran, "tag=") && !strings.Contains(ran, "tag=root-script") {
			t.Errorf("other programs ran:\n%s", ran)
		}
		if ps := uidProcesses(uid); len(ps) > 0 {
			t.Errorf("processes of the install outlived it: %v", ps)
		}
		if r.Outputs["state-dir"] == "" || strings.Contains(strings.Join(mapValues(r.Outputs), " "), f.pub.dir) || j.env["RUNMILL_BIN"] != "" || len(j.path) > 0 {
			t.Errorf("the install script reached the runtime files: outputs %q, RUNMILL_BIN %q, PATH %q", r.Outputs, j.env["RUNMILL_BIN"], j.path)
		}
		checkAbsolute(t, j.sudoLog(), *bin, "deps import --repo "+f.dir+" --commit "+f.scripts)
	})
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
