package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/harness"
	"github.com/runmill/verify/pkg/policy"
)

// TestInputKeyCoversEveryInput: changing any one input of the key changes
// it, and the same inputs give the same key (the key is what decides reuse,
// so an input it missed would reuse a different computation).
func TestInputKeyCoversEveryInput(t *testing.T) {
	base := func() keyInputs {
		return keyInputs{Schema: inputKeySchema, Runmill: "v1", Check: "unit", Phase: "baseline", Commit: "c0ffee", Command: "go test ./...",
			Report: &policy.ReportSpec{Path: "r.json", Format: "go-test-json"}, Timeout: time.Minute, MaxOutput: 1 << 20,
			Env: []string{"PATH=/usr/bin", "CI=true"}, HostPaths: []string{"/usr"}, Dependencies: []string{"go-modules k1 f1"},
			Image: "", Toolchain: "go1.26 key", Tools: []string{"go=sha256:01", "sh=sha256:02"}, Limits: "{CPUs:2}",
			Harness: &harness.Record{Pinned: true, Base: "ba5e", Files: []harness.File{{Path: "tests/run.sh", Ran: harness.FromBase,
				Base:   &harness.Entry{Mode: "100644", Blob: "0123456789ab0123456789ab0123456789ab0123"},
				Commit: &harness.Entry{Mode: "100644", Blob: "fedcba987654fedcba987654fedcba987654fedc"}}}}}
	}
	want := base().digest()
	if got := base().digest(); got != want || len(want) != 64 {
		t.Fatalf("the same inputs give %s and %s", want, got)
	}
	// The commit tree is the checkout's measurement, not an input.
	measured := base()
	measured.Harness.CommitTree = "sha256:" + strings.Repeat("0", 64)
	if measured.digest() != want {
		t.Error("the harness record's commit tree changed the key")
	}
	for name, mod := range map[string]func(k *keyInputs){
		"runmill version": func(k *keyInputs) { k.Runmill = "v2" },
		"check id":        func(k *keyInputs) { k.Check = "lint" },
		"phase":           func(k *keyInputs) { k.Phase = "candidate" },
		"commit":          func(k *keyInputs) { k.Commit = "beef" },
		"command":         func(k *keyInputs) { k.Command = "go test -race ./..." },
		"report path":     func(k *keyInputs) { k.Report = &policy.ReportSpec{Path: "s.json", Format: "go-test-json"} },
		"report identity": func(k *keyInputs) {
			k.Report = &policy.ReportSpec{Path: "r.json", Format: "go-test-json", Identity: "suite-path"}
		},
		"no report":    func(k *keyInputs) { k.Report = nil },
		"timeout":      func(k *keyInputs) { k.Timeout = 2 * time.Minute },
		"output cap":   func(k *keyInputs) { k.MaxOutput = 2 << 20 },
		"environment":  func(k *keyInputs) { k.Env = []string{"PATH=/usr/bin", "CI=false"} },
		"host paths":   func(k *keyInputs) { k.HostPaths = []string{"/usr", "/opt"} },
		"dependencies": func(k *keyInputs) { k.Dependencies = []string{"go-modules k2 f1"} },
		"no deps":      func(k *keyInputs) { k.Dependencies = nil },
		"image":        func(k *keyInputs) { k.Image = `"/img.tar" 10 20` },
		"toolchain":    func(k *keyInputs) { k.Toolchain = "go1.27 key" },
		"interpreter":  func(k *keyInputs) { k.Tools = []string{"go=sha256:03", "sh=sha256:02"} },
		// issue 23: the second tool of `go … && sh …`, not only the first.
		"a second tool":  func(k *keyInputs) { k.Tools = []string{"go=sha256:01", "sh=sha256:04"} },
		"another tool":   func(k *keyInputs) { k.Tools = append(k.Tools, "node=sha256:05") },
		"sandbox limits": func(k *keyInputs) { k.Limits = "{CPUs:4}" },
		"key schema":     func(k *keyInputs) { k.Schema = inputKeySchema + ".next" },
		// issue 23: the harness record in full. A symlink whose target
		// text is the file's content has the same blob id: only the mode differs.
		"harness mode":        func(k *keyInputs) { k.Harness.Files[0].Base.Mode = "120000" },
		"harness object id":   func(k *keyInputs) { k.Harness.Files[0].Base.Blob = "0123456789ab" + strings.Repeat("f", 28) },
		"the commit's file":   func(k *keyInputs) { k.Harness.Files[0].Commit.Mode = "100755" },
		"harness base commit": func(k *keyInputs) { k.Harness.Base = "ba5e2" },
		"whose version ran":   func(k *keyInputs) { k.Harness.Files[0].Ran = harness.FromCommit },
		"no harness":          func(k *keyInputs) { k.Harness = nil },
		"unpinned": func(k *keyInputs) {
			k.Harness.Pinned, k.Harness.Base, k.Harness.Reason = false, "", harness.ReasonPolicyNew
		},
	} {
		k := base()
		mod(&k)
		if k.digest() == want {
			t.Errorf("%s changed, the key did not", name)
		}
	}
}

// TestCommandTools: every program a command names — behind env, sh -c,
// &&, a pipe, $(…) — is found on the task's PATH and named by content, with
// the interpreter of a program that is a script; a repository path, an
// option or a non-executable file is not a tool (issue 23).
func TestCommandTools(t *testing.T) {
	bin, other := t.TempDir(), t.TempDir()
	write := func(dir, name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, n := range []string{"env", "sh", "node", "make", "python3", "timeout", "which"} {
		write(bin, n, "binary "+n, 0o755)
	}
	write(bin, "data", "not a program", 0o644)
	interp := write(other, "interp", "binary interp", 0o755)
	write(bin, "wrapped", "#!"+interp+" -u\nrun\n", 0o755)
	write(bin, "viaenv", "#!"+filepath.Join(bin, "env")+" python3\n", 0o755)
	env := []string{"PATH=" + bin}
	tools := func(command string) map[string]string {
		t.Helper()
		list, ok := commandTools(nil, command, env)
		if !ok {
			t.Fatalf("%q: the tools could not be named", command)
		}
		m := map[string]string{}
		for _, e := range list {
			k, v, _ := strings.Cut(e, "=")
			if !strings.HasPrefix(v, "sha256:") {
				t.Fatalf("%q: %s is not named by content", command, e)
			}
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		command string
		want    []string
	}{
		{"env FOO=1 node test.js", []string{"env", "node"}},
		{`sh -c 'make check && node x.js' > reports/r.tap`, []string{"sh", "make", "node"}},
		{"timeout 60 python3 -m pytest | data", []string{"timeout", "python3"}},
		{"$(which node) t.js; " + filepath.Join(bin, "make"), []string{"which", "node", filepath.Join(bin, "make")}},
		{"sh tests/run.sh ./node -node", []string{"sh"}},
		{"wrapped", []string{"wrapped", interp}},
		{"viaenv", []string{"viaenv", filepath.Join(bin, "env"), filepath.Join(bin, "python3")}},
		{"nothing-here tests/x.t", nil},
	} {
		got := tools(tc.command)
		tc.want = append(tc.want, taskShell) // every task runs /bin/sh -c COMMAND
		if len(got) != len(tc.want) {
			t.Errorf("%q: tools %v, want %v", tc.command, got, tc.want)
		}
		for _, w := range tc.want {
			if _, ok := got[w]; !ok {
				t.Errorf("%q: no %s among %v", tc.command, w, got)
			}
		}
	}
	// The second tool changed by content: another name for it.
	before := tools("sh -c 'make check && node x.js'")
	write(bin, "node", "binary node, upgraded", 0o755)
	after := tools("sh -c 'make check && node x.js'")
	if before["node"] == after["node"] || before["sh"] != after["sh"] || before["make"] != after["make"] {
		t.Errorf("node upgraded: before %v, after %v", before, after)
	}
	// An interpreter behind a script changed by content.
	w1 := tools("wrapped")[interp]
	write(other, "interp", "binary interp 2", 0o755)
	if tools("wrapped")[interp] == w1 {
		t.Error("the script's interpreter changed, its name did not")
	}
	// Past the bound no key is better than a key that misses a tool.
	if _, ok := commandTools(nil, strings.Repeat("w ", 10)+strings.Join(manyWords(maxCommandWords+1), " "), env); ok {
		t.Error("a command of more words than the bound was named")
	}
}

func manyWords(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "w" + strconv.Itoa(i)
	}
	return out
}

// FuzzCommandWords: the literal reading never yields an empty word or one
// holding a character it splits at, and every word is in the command.
func FuzzCommandWords(f *testing.F) {
	for _, s := range []string{"go test ./...", `sh -c 'a && b' > r.tap`, "env X=1 $(which node) t.js", "a|b;c&&d||e `f` {g;}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		for _, w := range commandWords(command) {
			if w == "" || strings.ContainsAny(w, " \t\n;&|()<>{}'\"`$\\") || !strings.Contains(command, w) {
				t.Fatalf("%q: word %q", command, w)
			}
		}
	})
}

// TestStoreLink: a reused body is a hard link to the source's file when
// runmill owns it and no one else may write it, else a copy; anything that
// is not a regular file of the recorded size hashing to its address is
// refused, a FIFO without blocking (issue 23).
func TestStoreLink(t *testing.T) {
	src := t.TempDir()
	put := func(name, body string, mode os.FileMode) (string, string) {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p, evidence.ArtifactAddress(digest.Hex([]byte(body)))
	}
	same := func(a, b string) bool {
		x, err1 := os.Stat(a)
		y, err2 := os.Stat(b)
		return err1 == nil && err2 == nil && os.SameFile(x, y)
	}
	st := newStore(t.TempDir())
	own, ownAddr := put("own", "own body", 0o644)
	if err := st.link(own, ownAddr, 8, nil); err != nil || !same(own, st.path(ownAddr)) {
		t.Fatalf("runmill's own file: %v, linked %v", err, same(own, st.path(ownAddr)))
	}
	if err := st.link(own, ownAddr, 8, nil); err != nil {
		t.Fatalf("stored twice: %v", err)
	}
	writable, wAddr := put("writable", "writable by all", 0o666)
	if err := st.link(writable, wAddr, 15, nil); err != nil || same(writable, st.path(wAddr)) {
		t.Fatalf("a file others may write: %v, linked %v (want a copy)", err, same(writable, st.path(wAddr)))
	}
	foreign, fAddr := put("foreign", "another user's", 0o644)
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatalf("chown (the tests run as root): %v", err)
	}
	if err := st.link(foreign, fAddr, 14, nil); err != nil || same(foreign, st.path(fAddr)) {
		t.Fatalf("another user's file: %v, linked %v (want a copy)", err, same(foreign, st.path(fAddr)))
	}
	lying, _ := put("lying", "other bytes", 0o644)
	_, otherAddr := put("x", "the recorded", 0o644)
	if err := st.link(lying, otherAddr, 11, nil); err == nil {
		t.Error("a body that does not hash to its address was stored")
	}
	if err := st.link(own, ownAddr+"", 9, nil); err == nil {
		t.Error("a body of another size was stored")
	}
	fifo := filepath.Join(src, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.link(fifo, otherAddr, 12, nil); !errors.Is(err, bounded.ErrNotRegular) {
		t.Errorf("a FIFO: %v", err)
	}
	// A trusted stamp links without reading; a changed file is read again.
	tr, trAddr := put("trusted", "trusted body", 0o644)
	fi, _ := os.Stat(tr)
	stamp, _ := stampOf(fi)
	st2 := newStore(t.TempDir())
	if err := st2.link(tr, trAddr, 12, &stamp); err != nil || !same(tr, st2.path(trAddr)) {
		t.Fatalf("a trusted file: %v", err)
	}
	st3 := newStore(t.TempDir())
	os.WriteFile(tr, []byte("changed body"), 0o644) // same size, other bytes
	if err := st3.link(tr, trAddr, 12, &stamp); err == nil {
		t.Error("a file changed since it was hashed was linked unread")
	}
}
