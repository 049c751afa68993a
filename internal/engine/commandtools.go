package engine

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/runmill/verify/internal/bounded"
)

// The tools a check's command runs, by content (issue 23). An input key that
// named only the command's first word kept a baseline in use after a host
// tool behind a wrapper changed (`env node …`, `sh -c 'make && go test'`,
// `timeout 60 python3 …`). The key now names every word of the command that
// resolves to an executable on the task's PATH (or is an absolute path to
// one), and the interpreter each such program names in its `#!` line, each
// by the SHA-256 of its bytes. A script of the repository (`./x.sh`,
// `sh tests/run.sh`) is the tree's and the harness's matter, not a tool's;
// its interpreter (sh) is a word of the command and so a tool.
//
// The reading is literal and over-approximates: a word that is an argument
// but names a program on PATH (`test` in `go test`) is hashed too, which
// can only cost a reuse when that file changes, never give a false one.

// taskShell is the shell every task runs its command with (`/bin/sh -c
// COMMAND`, internal/sandbox's OCI spec): a tool of every command.
const taskShell = "/bin/sh"

// maxCommandWords and maxCommandTools bound the work one command makes: a
// command longer than that gets no key (its runs are never reused) rather
// than a key that misses a tool.
const (
	maxCommandWords = 1024
	maxCommandTools = 64
	// maxShebangDepth is how many `#!` interpreters are followed in turn
	// (Linux itself follows at most four).
	maxShebangDepth = 4
)

// commandWords is a literal reading of a command's words: split at blanks
// and at every character the shell gives a meaning (operators, quotes,
// expansions, escapes), so that the words inside `sh -c '…'`, `$(…)`, `a &&
// b` and `env X=1 b` are words as well. Nothing is expanded.
func commandWords(command string) []string {
	return strings.FieldsFunc(command, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(";&|()<>{}'\"`$\\!*?[]~#", r)
	})
}

// envPath is the PATH entry of env ("" without one).
func envPath(env []string) string {
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// commandTools names the programs command runs — the task's shell and
// every program the command names — as the task would find them on env's
// PATH: sorted "name=sha256:<hex>" entries, a program's `#!`
// interpreter named by its path. ok=false when they cannot all be named (too
// many, or one unreadable): then the run gets no input key.
func commandTools(d *fileDigests, command string, env []string) (tools []string, ok bool) {
	dirs := filepath.SplitList(envPath(env))
	words := append(commandWords(command), taskShell)
	slices.Sort(words)
	words = slices.Compact(words)
	if len(words) > maxCommandWords {
		return nil, false
	}
	found := map[string]string{} // name → host path of the executable
	for _, w := range words {
		if p := resolveProgram(w, dirs); p != "" {
			found[w] = p
		}
	}
	// Each program's interpreter, and its interpreter's, in turn.
	next := found
	for depth := 0; depth < maxShebangDepth && len(next) > 0; depth++ {
		more := map[string]string{}
		for _, p := range next {
			for _, w := range shebang(p) {
				if q := resolveProgram(w, dirs); q != "" {
					if _, dup := found[q]; !dup {
						more[q] = q
					}
				}
			}
		}
		for k, v := range more {
			found[k] = v
		}
		next = more
	}
	if len(found) > maxCommandTools {
		return nil, false
	}
	for name, p := range found {
		sum := d.sum(p)
		if sum == "" {
			return nil, false
		}
		tools = append(tools, name+"="+sum)
	}
	slices.Sort(tools)
	return tools, true
}

// resolveProgram is the host path of the executable word names: an absolute
// path to one, or a bare name found in dirs the way exec(3p) searches PATH
// ("" for anything else — an option, a repository path, a word that names
// no program).
func resolveProgram(word string, dirs []string) string {
	if word == "" || strings.HasPrefix(word, "-") {
		return ""
	}
	if strings.Contains(word, "/") {
		if !filepath.IsAbs(word) {
			return ""
		}
		return executable(word)
	}
	for _, dir := range dirs {
		if p := executable(filepath.Join(dir, word)); p != "" {
			return p
		}
	}
	return ""
}

// executable is p when it is (or links to) a regular file someone may
// execute.
func executable(p string) string {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return p
}

// shebang is the words of p's `#!` line (interpreter and arguments; none
// when p is not a script): `#!/usr/bin/env python3` gives both env and
// python3 to resolve.
func shebang(p string) []string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil
	}
	f, _, err := bounded.OpenRegular(real)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 256) // the kernel reads no more of a #! line
	n, _ := io.ReadFull(f, head)
	line, ok := bytes.CutPrefix(head[:n], []byte("#!"))
	if !ok {
		return nil
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	return commandWords(string(line))
}
