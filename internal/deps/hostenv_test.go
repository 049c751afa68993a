package deps

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/proctest"
)

// candidateGoMod is a go.mod that asks for a toolchain that does not exist:
// a host go that honours it tries to download golang.org/toolchain.
const candidateGoMod = "module example.com/candidate\n\ngo 1.99.1\n\ntoolchain go1.99.1\n"

// TestHostGoModCacheIgnoresCandidateToolchain is issue 13's S6: runmill's
// `go env GOMODCACHE` started from inside a candidate whose go.mod wants
// go1.99.1, with GOTOOLCHAIN unset or auto and GOPROXY pointing at a server
// that records requests, downloads nothing and still gives the operator's
// module cache, however the operator configured it.
func TestHostGoModCacheIgnoresCandidateToolchain(t *testing.T) {
	depstest.Need(t, "go")
	var mu sync.Mutex
	var requests []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer proxy.Close()
	candidate := t.TempDir()
	if err := os.WriteFile(filepath.Join(candidate, "go.mod"), []byte(candidateGoMod), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(candidate)
	t.Setenv("GOPROXY", proxy.URL)
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOFLAGS", "-modcacherw")

	home := t.TempDir()
	envFile := filepath.Join(t.TempDir(), "goenv")
	if err := os.WriteFile(envFile, []byte("GOMODCACHE=/srv/go-env-file/mod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		toolchain string // "" unsets GOTOOLCHAIN
		env       map[string]string
		want      string
	}{
		{"GOMODCACHE set, GOTOOLCHAIN unset", "", map[string]string{"GOMODCACHE": "/srv/modcache"}, "/srv/modcache"},
		{"GOMODCACHE set, GOTOOLCHAIN=auto", "auto", map[string]string{"GOMODCACHE": "/srv/modcache"}, "/srv/modcache"},
		{"from GOPATH", "auto", map[string]string{"GOPATH": "/srv/gopath:/srv/other", "GOENV": "off"}, "/srv/gopath/pkg/mod"},
		{"from HOME", "auto", map[string]string{"HOME": home, "GOENV": "off"}, filepath.Join(home, "go", "pkg", "mod")},
		{"from the go env file", "auto", map[string]string{"GOENV": envFile}, "/srv/go-env-file/mod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"GOMODCACHE", "GOPATH", "GOENV", "GOTOOLCHAIN"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			if c.toolchain != "" {
				t.Setenv("GOTOOLCHAIN", c.toolchain)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			got, err := hostGoModCache(context.Background())
			if err != nil {
				t.Fatalf("go env failed in a candidate that wants go1.99.1: %v", err)
			}
			if got != c.want {
				t.Errorf("GOMODCACHE = %q, want %q", got, c.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(requests) > 0 {
				t.Fatalf("the host go command tried to download: %v", requests)
			}
		})
	}
}

// TestHostGoEnvHidesSecrets watches the real go process runmill starts:
// GOENV names a FIFO, so `go env` blocks opening it while the test reads
// /proc/<pid>/environ and /proc/<pid>/cwd, then the test answers through
// the FIFO and the value comes back (GOENV is honoured).
func TestHostGoEnvHidesSecrets(t *testing.T) {
	depstest.Need(t, "go")
	secrets := map[string]string{"GITHUB_TOKEN": "ghs_secret1", "RUNMILL_TEST_SECRET": "secret2",
		"RUNMILL_SIGNING_KEY": "secret3", "ACTIONS_RUNTIME_TOKEN": "secret4"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	fifo := filepath.Join(t.TempDir(), "goenv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", fifo)
	t.Setenv("GOMODCACHE", "")
	os.Unsetenv("GOMODCACHE")
	t.Chdir(t.TempDir())

	type result struct {
		dir string
		err error
	}
	done := make(chan result, 1)
	go func() {
		dir, err := hostGoModCache(context.Background())
		done <- result{dir, err}
	}()
	// The open of a FIFO for writing returns once go has it open for
	// reading: go is then blocked in its read, alive and observable.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	pid := proctest.ChildNamed(t, "go")
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("GOMODCACHE=/srv/observed/mod\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := <-done
	if r.err != nil || r.dir != "/srv/observed/mod" {
		t.Fatalf("hostGoModCache = %q, %v; want the FIFO's /srv/observed/mod", r.dir, r.err)
	}
	vars := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	t.Logf("go ran in %s with %q", cwd, vars)
	if cwd != "/" {
		t.Errorf("go ran in %s, want /", cwd)
	}
	has := map[string]bool{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		has[kv] = true
		if _, ok := secrets[k]; ok {
			t.Errorf("go saw %s", k)
		}
		for _, s := range secrets {
			if strings.Contains(v, s) {
				t.Errorf("go saw a secret in %s", k)
			}
		}
	}
	for _, want := range []string{"GOTOOLCHAIN=local", "GOPROXY=off", "GOENV=" + fifo} {
		if !has[want] {
			t.Errorf("go's environment lacks %s", want)
		}
	}
}
