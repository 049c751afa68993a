package harness

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Discovery is what a check's command makes its harness, before it is
// matched against the trees: exact repository paths, pkg/pathglob patterns,
// and the parts of the command runmill could not resolve.
type Discovery struct {
	// Paths are repository paths the command runs or reads as a program,
	// a script or a runner's configuration, sorted and unique.
	Paths []string
	// Globs are pkg/pathglob patterns of such files (conftest.py at any
	// depth, every .npmrc), sorted and unique.
	Globs []string
	// Unpinned are the parts runmill cannot resolve to files, in command
	// order: never guessed.
	Unpinned []Unpinned
}

// Unpinned is one part of a command whose harness runmill cannot name.
type Unpinned struct {
	// Part is the command (or script line) as written.
	Part string `json:"part"`
	// Reason says why nothing could be pinned for it.
	Reason string `json:"reason"`
}

// Reader returns the content of a base blob by its id.
type Reader func(blob string) ([]byte, error)

// maxScanned bounds the scripts, makefiles and package.json files one
// discovery reads, and maxDepth how deep commands nest (a script that runs
// a script that runs make…): a harness is a handful of files, and a base
// that loops through them stops here, with the rest unpinned.
const (
	maxScanned  = 64
	maxDepth    = 8
	maxReadSize = 1 << 20
)

// Discover resolves a check's harness from its command and the base's tree
// (issue 25): every repository file the command runs or reads as a program
// or script, and per runner the files that decide how it collects, runs or
// reports tests. It reads the command literally, through
//
//   - `cd DIR` (later commands of the line run there), `env`, `timeout`,
//     `nice`, `nohup`, `exec`, `command`, `time`, `stdbuf`, variable
//     assignments, and `&&`, `||`, `;`, `|` chains;
//   - `sh`/`bash`/`dash` with options (`-e`, `-eu`, `-x`, `-o pipefail`)
//     and a script file, or `-c '…'` (read as a command line);
//   - a repository path run as a program (`./run.sh`, `scripts/t`), `node
//     FILE`, `python3 FILE`, `python3 -m MODULE` (MODULE.py and MODULE/ in
//     the repository);
//
// and resolves the programs it knows:
//
//   - a shell script it pins (one run by sh/bash, sourced with `.`/`source`,
//     or run as a program with a `#!…sh` line or a .sh name) is read from
//     the base: the files it sources with a literal path (or
//     "$(dirname "$0")/…") and the commands of its lines it knows are
//     harness too;
//   - npm test / npm run X / npm start / npx / yarn X / pnpm X: package.json,
//     every .npmrc, the tracked files under node_modules/.bin, yarn's and
//     pnpm's configuration, and the base's scripts (preX, X, postX) read as
//     commands;
//   - make / gmake: GNUmakefile, makefile and Makefile (or -f FILE, in -C
//     DIR), what the base's makefile includes, and its recipes' commands;
//   - pytest, py.test, python -m pytest: conftest.py at any depth,
//     pytest.ini, pyproject.toml, setup.cfg, tox.ini, and the root-level
//     modules that shadow the runner or run at start-up (pytest.py,
//     pytest/, _pytest/, py.py, pluggy.py, sitecustomize.py,
//     usercustomize.py, *.pth); any python: the last four;
//   - vitest, vite, jest, mocha, ava, tap, playwright, node --test: each
//     runner's documented configuration files, in its precedence order
//     (vitest.config.* before vite.config.*: both are harness, so a new
//     vitest.config.js over a pinned vite.config.js is a harness change),
//     package.json (where jest, mocha and ava also read configuration) and
//     the babel configuration jest transforms tests with;
//   - go (test, vet, build…): go.work, go.work.sum, and a repository
//     program named by -exec (not go.mod and go.sum: see goTool);
//   - cargo: .cargo/config.toml and .cargo/config at any depth (a test
//     runner), rust-toolchain(.toml), .config/nextest.toml (not Cargo.toml
//     and Cargo.lock: see cargo).
//
// Paths are relative to the repository root; a command's files relative to
// the directory it runs in. What it cannot resolve — an unknown program, a
// variable, a script or directory outside the repository, `python -c` — is
// an Unpinned part with its reason, never a guess. Inside a pinned script
// or recipe, only unknown sourced paths are reported: the script is the
// base's, so what else it runs is the base's choice, and the lines of a
// script that are not commands runmill knows (echo, an if, a tool it does
// not know) name no file. Reading errors are returned.
//
// Discover is pure: base is git's listing of the base commit, and read
// returns a base blob's content.
func Discover(command string, base Tree, read Reader) (Discovery, error) {
	d := &discoverer{base: base, read: read, paths: map[string]bool{}, globs: map[string]bool{}, scanned: map[string]bool{}}
	d.line(command, "", 0, false)
	if d.err != nil {
		return Discovery{}, d.err
	}
	out := Discovery{Unpinned: d.unpinned}
	for p := range d.paths {
		out.Paths = append(out.Paths, p)
	}
	for g := range d.globs {
		out.Globs = append(out.Globs, g)
	}
	slices.Sort(out.Paths)
	slices.Sort(out.Globs)
	return out, nil
}

type discoverer struct {
	base     Tree
	read     Reader
	paths    map[string]bool
	globs    map[string]bool
	unpinned []Unpinned
	scanned  map[string]bool
	err      error
}

// maxPart bounds how much of an unresolved part a record quotes.
const maxPart = 200

func (d *discoverer) unresolved(part, format string, args ...any) {
	part = strings.Join(strings.Fields(part), " ")
	if len(part) > maxPart {
		part = strings.ToValidUTF8(part[:maxPart], "") + "…"
	}
	u := Unpinned{Part: part, Reason: fmt.Sprintf(format, args...)}
	if !slices.Contains(d.unpinned, u) {
		d.unpinned = append(d.unpinned, u)
	}
}

func (d *discoverer) pin(p string) { d.paths[p] = true }

// glob adds a pattern; one without a "/" matches at any depth.
func (d *discoverer) glob(g string) { d.globs[g] = true }

// at joins a name to a directory relative to the repository root.
func at(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// repoPath is p (relative to dir) as a clean repository path, or false when
// it leaves the repository.
func repoPath(dir, p string) (string, bool) {
	if p == "" || path.IsAbs(p) {
		return "", false
	}
	c := path.Clean(path.Join(dir, p))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || c == ".git" || strings.HasPrefix(c, ".git/") {
		return "", false
	}
	return c, true
}

// line reads one command line run in dir. inScript: the line is part of a
// pinned script or recipe, where only what runmill knows adds files.
func (d *discoverer) line(s, dir string, depth int, inScript bool) {
	if depth > maxDepth {
		d.unresolved(s, "commands nest more than %d deep", maxDepth)
		return
	}
	cwd, cwdKnown := dir, true
	for _, cmd := range parseShell(s) {
		if d.err != nil {
			return
		}
		if !cwdKnown {
			if !inScript {
				d.unresolved(join(cmd), "it runs after a cd to a directory runmill cannot name")
			}
			continue
		}
		if nd, ok, isCd := d.cd(cmd, cwd, inScript); isCd {
			cwd, cwdKnown = nd, ok
			continue
		}
		d.command(cmd, cwd, depth, inScript)
	}
}

func join(cmd simple) string {
	ws := make([]string, len(cmd))
	for i, w := range cmd {
		ws[i] = w.text
	}
	return strings.Join(ws, " ")
}

// cd handles `cd DIR` and `pushd DIR`: the directory later commands run in.
func (d *discoverer) cd(cmd simple, cwd string, inScript bool) (string, bool, bool) {
	cmd = stripPrefix(cmd)
	if len(cmd) == 0 || (cmd[0].text != "cd" && cmd[0].text != "pushd") {
		return "", false, false
	}
	args := cmd[1:]
	if len(args) > 0 && (args[0].text == "--" || args[0].text == "-P" || args[0].text == "-L") {
		args = args[1:]
	}
	if len(args) != 1 || args[0].dynamic || args[0].text == "-" {
		if !inScript {
			d.unresolved(join(cmd), "cd to a directory that is not a literal path")
		}
		return "", false, true
	}
	if args[0].text == "." {
		return cwd, true, true
	}
	p, ok := repoPath(cwd, args[0].text)
	if !ok {
		if !inScript {
			d.unresolved(join(cmd), "cd to a directory outside the repository")
		}
		return "", false, true
	}
	return p, true, true
}

// reserved words and braces that start a simple command without naming its
// program.
var reserved = map[string]bool{"!": true, "if": true, "then": true, "else": true, "elif": true, "do": true,
	"while": true, "until": true, "{": true, "}": true, "fi": true, "done": true, "esac": true}

// stripPrefix drops reserved words and variable assignments before a
// command's program.
func stripPrefix(cmd simple) simple {
	for len(cmd) > 0 && (reserved[cmd[0].text] || isAssignment(cmd[0].text)) {
		cmd = cmd[1:]
	}
	return cmd
}

func isAssignment(s string) bool {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return false
	}
	for k := 0; k < i; k++ {
		c := s[k]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || k > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// harmless are programs and builtins that run no repository file and read
// no runner configuration.
var harmless = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true, "[[": true,
	"exit": true, "return": true, "set": true, "export": true, "unset": true, "local": true, "readonly": true,
	"declare": true, "typeset": true, "shift": true, "trap": true, "wait": true, "read": true, "umask": true,
	"ulimit": true, "mkdir": true, "rm": true, "rmdir": true, "cp": true, "mv": true, "touch": true, "cat": true,
	"tee": true, "ls": true, "grep": true, "egrep": true, "fgrep": true, "head": true, "tail": true, "wc": true,
	"sort": true, "uniq": true, "tr": true, "cut": true, "sleep": true, "date": true, "pwd": true, "chmod": true,
	"ln": true, "which": true, "basename": true, "dirname": true, "popd": true, "diff": true, "cmp": true,
	"sha256sum": true, "md5sum": true, "realpath": true, "readlink": true, "mktemp": true, "whoami": true,
	"id": true, "uname": true, "env": true, "printenv": true, "type": true, "hash": true, "break": true,
	"continue": true,
}

// wrappers run the rest of their arguments as a command; the value is the
// options that take an argument.
var wrappers = map[string][]string{
	"env":     {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
	"timeout": {"-s", "--signal", "-k", "--kill-after"},
	"nice":    {"-n", "--adjustment"},
	"nohup":   nil,
	"exec":    {"-a"},
	"command": nil,
	"time":    {"-f", "--format", "-o", "--output"},
	"stdbuf":  {"-i", "-o", "-e", "--input", "--output", "--error"},
	"xvfb-run": {"-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file",
		"-p", "--xauth-protocol"},
}

// programName is the name a program word runs: its base name when it is an
// absolute path into a system directory (/usr/bin/env, /bin/sh).
func programName(w string) (string, bool) {
	if !strings.HasPrefix(w, "/") {
		return w, !strings.Contains(w, "/")
	}
	for _, dir := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"} {
		if rest, ok := strings.CutPrefix(w, dir); ok && !strings.Contains(rest, "/") && rest != "" {
			return rest, true
		}
	}
	return "", false
}

// command resolves one simple command run in dir.
func (d *discoverer) command(cmd simple, dir string, depth int, inScript bool) {
	part := join(cmd)
	cmd = stripPrefix(cmd)
	// Wrappers first: what they run is the command.
	for len(cmd) > 0 && !cmd[0].dynamic {
		name, _ := programName(cmd[0].text)
		opts, ok := wrappers[name]
		if !ok {
			break
		}
		if name == "command" && len(cmd) > 1 && (cmd[1].text == "-v" || cmd[1].text == "-V") {
			return
		}
		rest, ok := skipOptions(cmd[1:], opts, name == "env")
		if !ok {
			if !inScript {
				d.unresolved(part, "%s with an option runmill cannot read", name)
			}
			return
		}
		if name == "timeout" {
			if len(rest) == 0 {
				return
			}
			rest = rest[1:] // the duration
		}
		if len(rest) == 0 {
			return // env alone prints the environment
		}
		cmd = rest
	}
	if len(cmd) == 0 {
		return
	}
	prog := cmd[0]
	if prog.dynamic {
		if !inScript {
			d.unresolved(part, "the program %s is not a literal name", prog.text)
		}
		return
	}
	name, bare := programName(prog.text)
	if name == "" {
		if !inScript {
			d.unresolved(part, "it runs %s, a program outside the repository", prog.text)
		}
		return
	}
	if !bare {
		// A repository path run as a program.
		p, ok := repoPath(dir, prog.text)
		if !ok {
			if !inScript {
				d.unresolved(part, "it runs %s, a program outside the repository", prog.text)
			}
			return
		}
		d.pin(p)
		if path.Base(path.Dir(p)) == ".bin" && path.Base(path.Dir(path.Dir(p))) == "node_modules" {
			d.runner(path.Base(p), cmd[1:], dir, part, depth, inScript)
			return
		}
		if d.isShell(p) {
			d.script(p, dir, depth)
		}
		return
	}
	d.runner(name, cmd[1:], dir, part, depth, inScript)
}

// skipOptions drops a wrapper's options (and, for env, assignments and -i).
func skipOptions(args simple, withArg []string, env bool) (simple, bool) {
	for len(args) > 0 {
		a := args[0]
		if a.dynamic {
			return nil, false
		}
		switch {
		case a.text == "--":
			return args[1:], true
		case env && isAssignment(a.text):
			args = args[1:]
		case strings.HasPrefix(a.text, "-") && len(a.text) > 1:
			if slices.Contains(withArg, a.text) {
				if len(args) < 2 {
					return nil, false
				}
				args = args[2:]
				continue
			}
			// -n10, --signal=KILL, -oL: the argument is attached.
			if n, ok := strings.CutPrefix(a.text, "-"); ok && isDigits(n) {
				args = args[1:] // nice -10
				continue
			}
			args = args[1:]
		default:
			return args, true
		}
	}
	return args, true
}

// isShell reports whether the base's file at p is a shell script: a
// #!…sh line, or no #! line and a .sh name.
func (d *discoverer) isShell(p string) bool {
	e, ok := d.base[p]
	if !ok || e.Mode == "120000" {
		return false
	}
	b := d.blob(p)
	if b == nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if rest, ok := strings.CutPrefix(first, "#!"); ok {
		f := strings.Fields(rest)
		if len(f) == 0 {
			return false
		}
		interp := path.Base(f[0])
		if interp == "env" && len(f) > 1 {
			interp = f[1]
		}
		return interp == "sh" || interp == "bash" || interp == "dash" || interp == "ksh"
	}
	return strings.HasSuffix(p, ".sh")
}

// blob reads the base's regular file at p, nil when there is none (or it is
// too large to be a script).
func (d *discoverer) blob(p string) []byte {
	e, ok := d.base[p]
	if !ok || e.Mode == "120000" || d.read == nil {
		return nil
	}
	b, err := d.read(e.Blob)
	if err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("reading the base's %s: %w", p, err)
		}
		return nil
	}
	if len(b) > maxReadSize {
		return nil
	}
	return b
}

// scan claims one read of a base file, false when it was read already or
// the budget is spent.
func (d *discoverer) scan(kind, p, dir string) bool {
	key := kind + "\x00" + p + "\x00" + dir
	if d.scanned[key] {
		return false
	}
	if len(d.scanned) >= maxScanned {
		d.unresolved(p, "more than %d scripts and runner files to read", maxScanned)
		return false
	}
	d.scanned[key] = true
	return true
}

// script reads a pinned shell script's base version: what it sources and
// the commands it runs that runmill knows. Its lines run in dir (the
// caller's directory: a script's relative paths are the process's).
func (d *discoverer) script(p, dir string, depth int) {
	if !d.scan("sh", p, dir) {
		return
	}
	b := d.blob(p)
	if b == nil {
		return
	}
	text := string(b)
	// The common idiom for "next to this script".
	sd := path.Dir(p)
	for _, idiom := range []string{`"$(dirname "$0")"/`, `"$(dirname "$0")/`, `$(dirname "$0")/`, `$(dirname $0)/`, `"${0%/*}"/`, `"${0%/*}/`, `${0%/*}/`} {
		// A quote the idiom opens stays open around the path.
		q := ""
		if strings.HasPrefix(idiom, `"`) && !strings.HasSuffix(idiom, `"/`) {
			q = `"`
		}
		text = strings.ReplaceAll(text, idiom, q+rel(dir, sd)+"/")
	}
	d.body(text, dir, depth+1)
}

// rel is p written relative to dir, for a path substituted into a line run
// in dir.
func rel(dir, p string) string {
	if dir == "" {
		return p
	}
	up := strings.Repeat("../", strings.Count(dir, "/")+1)
	return path.Clean(up + p)
}

// body reads a pinned script's (or recipe's) lines: sourced files always,
// other commands when runmill knows them.
func (d *discoverer) body(text, dir string, depth int) {
	if depth > maxDepth {
		d.unresolved(text, "commands nest more than %d deep", maxDepth)
		return
	}
	cwd, known := dir, true
	for _, cmd := range parseShell(text) {
		if d.err != nil {
			return
		}
		c := stripPrefix(cmd)
		if len(c) == 0 {
			continue
		}
		if nd, ok, isCd := d.cd(c, cwd, true); isCd {
			cwd, known = nd, ok
			continue
		}
		if c[0].text == "." || c[0].text == "source" {
			if len(c) < 2 || c[1].dynamic || !known {
				d.unresolved(join(cmd), "a pinned script sources a path that is not literal")
				continue
			}
			sp, ok := repoPath(cwd, c[1].text)
			if !ok {
				d.unresolved(join(cmd), "a pinned script sources %s, outside the repository", c[1].text)
				continue
			}
			d.pin(sp)
			d.script(sp, cwd, depth)
			continue
		}
		if known {
			d.command(cmd, cwd, depth, true)
		}
	}
}

// runner resolves a program run by name with args, in dir.
func (d *discoverer) runner(name string, args simple, dir, part string, depth int, inScript bool) {
	switch {
	case harmless[name]:
		return
	case name == "sh" || name == "bash" || name == "dash":
		d.shell(name, args, dir, part, depth, inScript)
	case name == "." || name == "source":
		if len(args) == 0 || args[0].dynamic {
			d.unresolved(part, "it sources a path that is not literal")
			return
		}
		p, ok := repoPath(dir, args[0].text)
		if !ok {
			d.unresolved(part, "it sources %s, outside the repository", args[0].text)
			return
		}
		d.pin(p)
		d.script(p, dir, depth)
	case name == "python" || name == "python3" || strings.HasPrefix(name, "python3."):
		d.python(args, dir, part, depth, inScript)
	case name == "pytest" || name == "py.test":
		d.pytest(dir)
	case name == "node":
		d.node(args, dir, part, inScript)
	case name == "npm" || name == "yarn" || name == "pnpm" || name == "npx":
		d.npm(name, args, dir, part, depth, inScript)
	case nodeRunners[name] != nil:
		d.nodeRunner(name, dir)
	case name == "make" || name == "gmake":
		d.make(args, dir, part, depth, inScript)
	case name == "go":
		d.goTool(args, dir, part, inScript)
	case name == "cargo":
		d.cargo(dir)
	default:
		if !inScript {
			d.unresolved(part, "runmill does not know which files %s reads", name)
		}
	}
}

func (d *discoverer) shell(name string, args simple, dir, part string, depth int, inScript bool) {
	for len(args) > 0 {
		a := args[0]
		if a.dynamic {
			if !inScript {
				d.unresolved(part, "%s runs a script that is not a literal path", name)
			}
			return
		}
		switch {
		case a.text == "-c":
			if len(args) < 2 || args[1].dynamic {
				if !inScript {
					d.unresolved(part, "%s -c with a command that is not literal", name)
				}
				return
			}
			d.line(args[1].text, dir, depth+1, inScript)
			return
		case a.text == "-o" || a.text == "+o" || a.text == "-O" || a.text == "+O" || a.text == "--rcfile" || a.text == "--init-file":
			if len(args) < 2 {
				return
			}
			args = args[2:]
		case a.text == "--":
			args = args[1:]
			if len(args) == 0 {
				return
			}
			d.shellFile(name, args[0], dir, part, depth, inScript)
			return
		case (strings.HasPrefix(a.text, "-") || strings.HasPrefix(a.text, "+")) && len(a.text) > 1:
			if strings.Contains(a.text, "c") && !strings.HasPrefix(a.text, "--") {
				// -ec, -xc: the command follows.
				if len(args) < 2 || args[1].dynamic {
					if !inScript {
						d.unresolved(part, "%s -c with a command that is not literal", name)
					}
					return
				}
				d.line(args[1].text, dir, depth+1, inScript)
				return
			}
			if strings.HasSuffix(a.text, "o") && !strings.HasPrefix(a.text, "--") {
				if len(args) < 2 {
					return
				}
				args = args[2:] // -euo pipefail
				continue
			}
			args = args[1:]
		default:
			d.shellFile(name, a, dir, part, depth, inScript)
			return
		}
	}
	if !inScript {
		d.unresolved(part, "%s reads its script from standard input", name)
	}
}

func (d *discoverer) shellFile(name string, w word, dir, part string, depth int, inScript bool) {
	p, ok := repoPath(dir, w.text)
	if w.dynamic || !ok {
		if !inScript {
			d.unresolved(part, "%s runs %s, not a literal path in the repository", name, w.text)
		}
		return
	}
	d.pin(p)
	d.script(p, dir, depth)
}

// pythonStartup are the files any python run imports at start-up from its
// directory or the repository root when they lie on its path.
func (d *discoverer) pythonStartup(dir string) {
	for _, r := range uniqueDirs(dir) {
		d.pin(at(r, "sitecustomize.py"))
		d.pin(at(r, "usercustomize.py"))
	}
	// site reads every .pth file of a directory on its path; at any depth,
	// so a vendored site-packages counts too.
	d.glob("*.pth")
}

func uniqueDirs(dir string) []string {
	if dir == "" {
		return []string{""}
	}
	return []string{"", dir}
}

func (d *discoverer) python(args simple, dir, part string, depth int, inScript bool) {
	d.pythonStartup(dir)
	for len(args) > 0 {
		a := args[0]
		if a.dynamic {
			if !inScript {
				d.unresolved(part, "python runs %s, not a literal path", a.text)
			}
			return
		}
		switch {
		case a.text == "-m" || (strings.HasPrefix(a.text, "-m") && len(a.text) > 2 && !strings.HasPrefix(a.text, "--")):
			mod := strings.TrimPrefix(a.text, "-m")
			if mod == "" {
				if len(args) < 2 || args[1].dynamic {
					return
				}
				mod = args[1].text
			}
			d.pythonModule(mod, dir, part, inScript)
			return
		case a.text == "-c":
			if !inScript {
				d.unresolved(part, "python -c: what the code imports is not named")
			}
			return
		case a.text == "-X" || a.text == "-W" || a.text == "--check-hash-based-pycs":
			if len(args) < 2 {
				return
			}
			args = args[2:]
		case strings.HasPrefix(a.text, "-") && len(a.text) > 1:
			args = args[1:]
		default:
			p, ok := repoPath(dir, a.text)
			if !ok {
				if !inScript {
					d.unresolved(part, "python runs %s, a script outside the repository", a.text)
				}
				return
			}
			d.pin(p)
			// The script's directory is first on its path.
			sd := path.Dir(p)
			if sd == "." {
				sd = ""
			}
			d.pin(at(sd, "sitecustomize.py"))
			d.pin(at(sd, "usercustomize.py"))
			return
		}
	}
	if !inScript {
		d.unresolved(part, "python reads its program from standard input")
	}
}

func (d *discoverer) pythonModule(mod, dir, part string, inScript bool) {
	top, _, _ := strings.Cut(mod, ".")
	if !isIdentifier(top) {
		if !inScript {
			d.unresolved(part, "python -m %s: not a module name", mod)
		}
		return
	}
	// The module runs from the directory python starts in when it is
	// there: a root pytest.py shadows the installed pytest.
	d.pin(at(dir, top+".py"))
	d.glob(at(dir, top) + "/**")
	switch top {
	case "pytest", "py":
		d.pytest(dir)
	case "unittest":
	default:
		if _, ok := d.base[at(dir, top+".py")]; ok {
			return
		}
		if _, ok := d.base[at(dir, top+"/__init__.py")]; ok {
			return
		}
		if _, ok := d.base[at(dir, top+"/__main__.py")]; ok {
			return
		}
		if !inScript {
			d.unresolved(part, "python -m %s: a module outside the repository, whose configuration runmill does not know", mod)
		}
	}
}

func (d *discoverer) pytest(dir string) {
	d.pythonStartup(dir)
	d.glob("conftest.py") // at any depth: pytest loads every one it collects under
	for _, r := range uniqueDirs(dir) {
		for _, f := range []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} {
			d.pin(at(r, f))
		}
		for _, m := range []string{"pytest", "_pytest", "py", "pluggy"} {
			d.pin(at(r, m+".py"))
			d.glob(at(r, m) + "/**")
		}
	}
}

func (d *discoverer) node(args simple, dir, part string, inScript bool) {
	d.pin(at(dir, "package.json"))
	for len(args) > 0 {
		a := args[0]
		if a.dynamic {
			if !inScript {
				d.unresolved(part, "node runs %s, not a literal path", a.text)
			}
			return
		}
		switch {
		case a.text == "--test":
			d.nodeRunner("node --test", dir)
			args = args[1:]
			continue
		case a.text == "-e" || a.text == "--eval" || a.text == "-p" || a.text == "--print":
			if !inScript {
				d.unresolved(part, "node --eval: what the code loads is not named")
			}
			return
		case a.text == "-r" || a.text == "--require" || a.text == "--import" || a.text == "--loader" || a.text == "--experimental-loader":
			if len(args) < 2 {
				return
			}
			if p, ok := repoPath(dir, args[1].text); ok && !args[1].dynamic && (strings.HasPrefix(args[1].text, "./") || strings.HasPrefix(args[1].text, "../")) {
				d.pin(p)
			}
			args = args[2:]
			continue
		case strings.HasPrefix(a.text, "-"):
			args = args[1:]
			continue
		}
		p, ok := repoPath(dir, a.text)
		if !ok {
			if !inScript {
				d.unresolved(part, "node runs %s, a script outside the repository", a.text)
			}
			return
		}
		d.pin(p)
		return
	}
}

// nodeRunners are the configuration files each node test runner documents,
// in the order it looks for them (the first found wins, so each later one
// is shadowed by a new earlier one: all are harness).
var nodeRunners = map[string][]string{
	"vitest": {"vitest.config.ts", "vitest.config.mts", "vitest.config.cts", "vitest.config.js", "vitest.config.mjs", "vitest.config.cjs",
		"vite.config.ts", "vite.config.mts", "vite.config.cts", "vite.config.js", "vite.config.mjs", "vite.config.cjs",
		"vitest.workspace.ts", "vitest.workspace.js", "vitest.workspace.json", "tsconfig.json"},
	"vite": {"vite.config.ts", "vite.config.mts", "vite.config.cts", "vite.config.js", "vite.config.mjs", "vite.config.cjs"},
	"jest": {"jest.config.js", "jest.config.ts", "jest.config.mjs", "jest.config.cjs", "jest.config.cts", "jest.config.json",
		"babel.config.js", "babel.config.json", "babel.config.cjs", "babel.config.mjs", ".babelrc", ".babelrc.js", ".babelrc.json", "tsconfig.json"},
	"mocha":       {".mocharc.js", ".mocharc.cjs", ".mocharc.mjs", ".mocharc.yaml", ".mocharc.yml", ".mocharc.jsonc", ".mocharc.json", "test/mocha.opts"},
	"ava":         {"ava.config.js", "ava.config.cjs", "ava.config.mjs"},
	"tap":         {".taprc"},
	"playwright":  {"playwright.config.ts", "playwright.config.js", "playwright.config.mts", "playwright.config.mjs", "playwright.config.cts", "playwright.config.cjs"},
	"node --test": {},
}

func (d *discoverer) nodeRunner(name, dir string) {
	for _, f := range nodeRunners[name] {
		d.pin(at(dir, f))
	}
	d.pin(at(dir, "package.json"))
	d.glob(at(dir, "node_modules/.bin/**"))
}

// npm resolves npm, yarn, pnpm and npx: the package manager's own
// configuration, and the base's scripts the command runs.
func (d *discoverer) npm(name string, args simple, dir, part string, depth int, inScript bool) {
	d.pin(at(dir, "package.json"))
	d.glob(".npmrc") // every .npmrc: npm reads the project's, a workspace's and the user's
	d.glob(at(dir, "node_modules/.bin/**"))
	switch name {
	case "yarn":
		for _, f := range []string{".yarnrc", ".yarnrc.yml", ".pnp.cjs", ".pnp.loader.mjs"} {
			d.pin(at(dir, f))
		}
		d.glob(at(dir, ".yarn/**"))
	case "pnpm":
		for _, f := range []string{".pnpmfile.cjs", "pnpm-workspace.yaml"} {
			d.pin(at(dir, f))
		}
	}
	var words []word
	for _, a := range args {
		if a.text == "--" {
			break
		}
		if strings.HasPrefix(a.text, "-") && !a.dynamic {
			continue
		}
		words = append(words, a)
	}
	if name == "npx" {
		d.exec(words, dir, part, depth, inScript)
		return
	}
	if len(words) == 0 {
		if name == "npm" && !inScript {
			d.unresolved(part, "npm with no command")
		}
		return // yarn and pnpm alone install
	}
	if words[0].dynamic {
		if !inScript {
			d.unresolved(part, "%s runs %s, not a literal name", name, words[0].text)
		}
		return
	}
	sub, rest := words[0].text, words[1:]
	var script string
	switch sub {
	case "test", "t", "tst", "start", "stop", "restart":
		script = map[string]string{"t": "test", "tst": "test"}[sub]
		if script == "" {
			script = sub
		}
	case "run", "run-script", "rum", "urn":
		if len(rest) == 0 || rest[0].dynamic {
			if !inScript {
				d.unresolved(part, "%s run without a literal script name", name)
			}
			return
		}
		script = rest[0].text
	case "exec", "x", "dlx":
		d.exec(rest, dir, part, depth, inScript)
		return
	case "ci", "install", "i", "add":
		script = "install" // lifecycle scripts: preinstall, install, postinstall
	default:
		if name == "npm" {
			if !inScript {
				d.unresolved(part, "runmill does not know which files npm %s reads", sub)
			}
			return
		}
		script = sub // yarn X, pnpm X run the script X
	}
	d.packageScripts(script, dir, depth, inScript)
}

// exec resolves npx X / npm exec X: a package binary, by its runner name.
func (d *discoverer) exec(words []word, dir, part string, depth int, inScript bool) {
	if len(words) == 0 || words[0].dynamic {
		if !inScript {
			d.unresolved(part, "it runs a package binary that is not a literal name")
		}
		return
	}
	bin := words[0].text
	if i := strings.LastIndexByte(bin, '@'); i > 0 {
		bin = bin[:i] // vitest@1.2.3
	}
	d.runner(path.Base(bin), words[1:], dir, part, depth, inScript)
}

// packageScripts reads the base's package.json in dir and resolves the
// script name with its pre and post scripts, as npm runs them.
func (d *discoverer) packageScripts(name, dir string, depth int, inScript bool) {
	p := at(dir, "package.json")
	if !d.scan("npm:"+name, p, dir) {
		return
	}
	b := d.blob(p)
	if b == nil {
		return
	}
	var pkg struct {
		Scripts map[string]any `json:"scripts"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		d.unresolved(p, "the base's package.json does not parse: %v", err)
		return
	}
	for _, s := range []string{"pre" + name, name, "post" + name} {
		v, ok := pkg.Scripts[s].(string)
		if !ok {
			continue
		}
		d.scriptLine(v, dir, depth, inScript)
	}
}

// scriptLine reads a package script as npm runs it: with
// node_modules/.bin first on the PATH, so a bare runner name is the
// package's binary (pinned by the node_modules/.bin glob).
func (d *discoverer) scriptLine(s, dir string, depth int, inScript bool) {
	d.line(s, dir, depth+1, inScript)
}

func (d *discoverer) make(args simple, dir, part string, depth int, inScript bool) {
	var files []word
	mdir := dir
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			continue // a target or variable: the makefile decides
		}
		switch {
		case a.text == "-C" || a.text == "--directory":
			if i+1 >= len(args) || args[i+1].dynamic {
				if !inScript {
					d.unresolved(part, "make -C a directory that is not literal")
				}
				return
			}
			p, ok := repoPath(mdir, args[i+1].text)
			if !ok {
				if !inScript {
					d.unresolved(part, "make -C a directory outside the repository")
				}
				return
			}
			mdir = p
			i++
		case strings.HasPrefix(a.text, "-C") && len(a.text) > 2:
			p, ok := repoPath(mdir, a.text[2:])
			if !ok {
				return
			}
			mdir = p
		case a.text == "-f" || a.text == "--file" || a.text == "--makefile":
			if i+1 >= len(args) {
				return
			}
			files = append(files, args[i+1])
			i++
		case a.text == "-j" || a.text == "-l" || a.text == "-o" || a.text == "-W" || a.text == "-I":
			i++
		}
	}
	var names []string
	if len(files) == 0 {
		// GNU make's order: the first it finds runs, and a new earlier one
		// shadows a pinned later one.
		names = []string{at(mdir, "GNUmakefile"), at(mdir, "makefile"), at(mdir, "Makefile")}
	}
	for _, f := range files {
		p, ok := repoPath(mdir, f.text)
		if f.dynamic || !ok {
			if !inScript {
				d.unresolved(part, "make -f %s, not a literal path in the repository", f.text)
			}
			return
		}
		names = append(names, p)
	}
	for _, n := range names {
		d.pin(n)
	}
	for _, n := range names {
		if _, ok := d.base[n]; ok {
			d.makefile(n, mdir, depth+1)
			break // make reads the first it finds
		}
	}
}

// makefile reads a base makefile: the files it includes (pinned and read in
// turn) and its recipes' commands.
func (d *discoverer) makefile(p, dir string, depth int) {
	if depth > maxDepth || !d.scan("make", p, dir) {
		return
	}
	b := d.blob(p)
	if b == nil {
		return
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, ln := range strings.Split(text, "\n") {
		if recipe, ok := strings.CutPrefix(ln, "\t"); ok {
			recipe = strings.TrimLeft(recipe, "@-+ \t")
			if strings.Contains(recipe, "$(") || strings.Contains(recipe, "${") {
				// A make variable: only the literal commands are read.
				recipe = stripMakeVars(recipe)
			}
			d.body(strings.ReplaceAll(recipe, "$$", "$"), dir, depth)
			continue
		}
		f := strings.Fields(ln)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "include", "-include", "sinclude":
			for _, inc := range f[1:] {
				if strings.ContainsAny(inc, "$*?[") {
					d.unresolved(ln, "%s includes a file that is not a literal path", p)
					continue
				}
				ip, ok := repoPath(dir, inc)
				if !ok {
					d.unresolved(ln, "%s includes %s, outside the repository", p, inc)
					continue
				}
				d.pin(ip)
				d.makefile(ip, dir, depth+1)
			}
		}
	}
}

// stripMakeVars drops the commands of a recipe line that use a make
// variable, keeping the literal ones (`$(GO) vet && go test` keeps
// `go test`).
func stripMakeVars(s string) string {
	var keep []string
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '&' || r == '|' }) {
		if !strings.Contains(part, "$(") && !strings.Contains(part, "${") {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, " ; ")
}

// goTool: go.work and go.work.sum decide which modules a build uses (a
// workspace can put a forged copy of any dependency in its place). go.mod
// and go.sum are not pinned: they are the change's dependencies, and the
// base's version with the candidate's code fails every honest dependency
// change to build.
func (d *discoverer) goTool(args simple, dir, part string, inScript bool) {
	for _, r := range uniqueDirs(dir) {
		for _, f := range []string{"go.work", "go.work.sum"} {
			d.pin(at(r, f))
		}
	}
	for i, a := range args {
		if a.text != "-exec" && !strings.HasPrefix(a.text, "-exec=") {
			continue
		}
		v, ok := strings.CutPrefix(a.text, "-exec=")
		w := word{text: v, dynamic: a.dynamic}
		if !ok {
			if i+1 >= len(args) {
				return
			}
			w = args[i+1]
		}
		prog := strings.Fields(w.text)
		if w.dynamic || len(prog) == 0 {
			if !inScript {
				d.unresolved(part, "go -exec with a program that is not literal")
			}
			return
		}
		d.command(simple{{text: prog[0]}}, dir, 0, inScript)
	}
}

// cargo: a .cargo/config.toml at any level can set a test runner (a
// program every test binary runs under) or rustflags; the toolchain files
// choose the compiler; nextest's config its runner. Cargo.toml and
// Cargo.lock are not pinned, for go.mod's reason: they are the change's
// dependencies.
func (d *discoverer) cargo(dir string) {
	d.glob("**/.cargo/config.toml")
	d.glob("**/.cargo/config")
	for _, r := range uniqueDirs(dir) {
		d.pin(at(r, "rust-toolchain"))
		d.pin(at(r, "rust-toolchain.toml"))
		d.pin(at(r, ".config/nextest.toml"))
	}
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
