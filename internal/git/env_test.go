package git

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/proctest"
)

// TestHostGitEnvironment watches a real git process runmill starts (issue
// 13, S6): `git hash-object` of a FIFO blocks opening it, while the test
// reads /proc/<pid>/environ (an allow-list, no secret) and /proc/<pid>/cwd
// (the repository given, whatever runmill's own directory is); then the test
// writes the FIFO and checks git hashed what it wrote.
func TestHostGitEnvironment(t *testing.T) {
	secrets := map[string]string{"GITHUB_TOKEN": "ghs_secret1", "RUNMILL_TEST_SECRET": "secret2",
		"RUNMILL_SIGNING_KEY": "secret3", "GIT_DIR": "/elsewhere/.git", "GIT_INDEX_FILE": "/elsewhere/index"}
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	g.Commit("base")
	repo, err := Open(context.Background(), g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Chdir(t.TempDir())
	fifo := filepath.Join(t.TempDir(), "blob")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := repo.run(context.Background(), nil, "hash-object", "--", fifo)
		done <- result{out, err}
	}()
	// Opening the FIFO for writing returns once git has it open for
	// reading: git is then blocked in its read, alive and observable.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	pid := proctest.ChildNamed(t, "git")
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	// git hash-object of "hello\n", as `printf 'hello\n' | git hash-object --stdin` prints it.
	if want := "ce013625030ba8dba906f756967f9e9ca394464a"; r.err != nil || strings.TrimSpace(string(r.out)) != want {
		t.Fatalf("hash-object = %q, %v; want %s", r.out, r.err, want)
	}
	vars := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	t.Logf("git ran in %s with %q", cwd, vars)
	if real, _ := filepath.EvalSymlinks(repo.Dir); cwd != real {
		t.Errorf("git ran in %s, want the repository %s", cwd, real)
	}
	allowed := map[string]bool{"PATH": true}
	for _, kv := range Env() {
		k, _, _ := strings.Cut(kv, "=")
		allowed[k] = true
	}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		if !allowed[k] {
			t.Errorf("git saw %s, which is not on the allow-list", k)
		}
		for _, s := range secrets {
			if strings.Contains(v, s) {
				t.Errorf("git saw a secret in %s", k)
			}
		}
	}
	for _, want := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1"} {
		if !strings.Contains(string(environ), want+"\x00") {
			t.Errorf("git's environment lacks %s", want)
		}
	}
}
