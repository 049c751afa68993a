package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeGoroot writes a toolchain tree (VERSION, bin/go, pkg/tool programs)
// under dir and returns its go binary.
func fakeGoroot(t *testing.T, dir string, mtime time.Time) string {
	t.Helper()
	files := map[string]string{
		"VERSION": "go1.26.8\ntime 2026-08-28T16:20:06Z\n",
		"bin/go":  "go binary",
	}
	for _, tool := range []string{"compile", "link", "asm", "vet", "cgo", "cover"} {
		files["pkg/tool/"+runtime.GOOS+"_"+runtime.GOARCH+"/"+tool] = tool + " binary"
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
	return filepath.Join(dir, "bin", "go")
}

// TestToolchainIdentityByContent: a toolchain copied to another directory
// or extracted again in place (new mtimes, new inodes) keeps its identity
// and its cache key; one changed byte of compile, of go or of VERSION
// changes them, with the memo and without.
func TestToolchainIdentityByContent(t *testing.T) {
	day := time.Date(2026, 8, 28, 16, 20, 6, 0, time.UTC)
	root := filepath.Join(t.TempDir(), "go")
	goBin := fakeGoroot(t, root, day)
	memo := &fileDigests{path: filepath.Join(t.TempDir(), fileDigestsName)}
	for _, d := range []*fileDigests{nil, memo} {
		id := d.goToolchainIdentity(goBin)
		env := []string{"PATH=" + filepath.Dir(goBin)}
		key := goToolKey(d, "", nil, env)

		other := fakeGoroot(t, filepath.Join(t.TempDir(), "elsewhere"), day.Add(time.Hour))
		if got := d.goToolchainIdentity(other); got != id {
			t.Errorf("memo %v: a copy in another directory: identity %s, want %s", d != nil, got, id)
		}
		// setup-go's re-extract: the same bytes, new files, new times.
		os.RemoveAll(root)
		fakeGoroot(t, root, day.Add(2*time.Hour))
		if got := goToolKey(d, "", nil, env); got != key {
			t.Errorf("memo %v: re-extracted in place: key %s, want %s", d != nil, got, key)
		}

		compile := filepath.Join(root, "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "compile")
		for name, p := range map[string]string{"compile": compile, "go": goBin, "VERSION": filepath.Join(root, "VERSION")} {
			orig, _ := os.ReadFile(p)
			fi, _ := os.Stat(p)
			changed := []byte(string(orig))
			changed[0] ^= 1
			// Same size, and the old mtime put back: only the content
			// (and the ctime) tell.
			os.WriteFile(p, changed, 0o755)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
			if d.goToolchainIdentity(goBin) == id || goToolKey(d, "", nil, env) == key {
				t.Errorf("memo %v: one byte of %s changed, the identity did not", d != nil, name)
			}
			os.WriteFile(p, orig, 0o755)
			if got := goToolKey(d, "", nil, env); got != key {
				t.Errorf("memo %v: %s restored: key %s, want %s", d != nil, name, got, key)
			}
		}
	}
}

// TestFileDigestsMemo: a warm run takes a file's digest from the memo in
// the state dir while the file's stamp is unchanged (proven by a memo
// entry edited to a wrong digest, which is then returned), and hashes
// again once the file is rewritten.
func TestFileDigestsMemo(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tool")
	os.WriteFile(p, []byte("tool"), 0o755)
	memoPath := filepath.Join(dir, fileDigestsName)
	want, _ := hashFile(p)
	if got := (&fileDigests{path: memoPath}).sum(p); got != want {
		t.Fatalf("sum %s, want %s", got, want)
	}
	b, err := os.ReadFile(memoPath)
	if err != nil {
		t.Fatalf("no memo written: %v", err)
	}
	var m map[string]fileStamp
	if err := json.Unmarshal(b, &m); err != nil || m[p].SHA256 != want {
		t.Fatalf("memo %s: %v", b, err)
	}
	fake := "sha256:" + strings.Repeat("0", 64)
	e := m[p]
	e.SHA256 = fake
	m[p] = e
	b, _ = json.Marshal(m)
	os.WriteFile(memoPath, b, 0o600)
	if got := (&fileDigests{path: memoPath}).sum(p); got != fake {
		t.Errorf("a warm run hashed again (%s) instead of reading the memo", got)
	}
	os.WriteFile(p, []byte("toof"), 0o755)
	want2, _ := hashFile(p)
	if got := (&fileDigests{path: memoPath}).sum(p); got != want2 || got == fake {
		t.Errorf("a rewritten file: sum %s, want %s", got, want2)
	}
	// A damaged memo costs a hash, never a wrong digest.
	os.WriteFile(memoPath, []byte("{not json"), 0o600)
	if got := (&fileDigests{path: memoPath}).sum(p); got != want2 {
		t.Errorf("damaged memo: sum %s, want %s", got, want2)
	}
	if got := (&fileDigests{path: memoPath}).sum(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("a missing file has digest %q", got)
	}
}
