package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/treehash"
)

// TestIsGoCheck: the prepared toolchain cache goes to checks that run the
// go command or declare go-modules, and only to them (a cargo or npm check
// must not get a GOCACHE bind it has no use for, nor pay for building it).
func TestIsGoCheck(t *testing.T) {
	for _, tc := range []struct {
		cmd, deps string
		want      bool
	}{
		{"go test -json ./... > reports/unit.json", "", true},
		{"cd sub && go test ./...", "", true},
		{"set -e; go vet ./...", "", true},
		{"(go build ./cmd/x)", "", true},
		{"GOFLAGS=-count=1 go test ./...", "", true},
		{"sh scripts/test.sh", deps.GoModules, true},
		{"cargo test", "", false},
		{"npm test", deps.NPM, false},
		{"gotest ./...", "", false},
		{"echo go", "", false},
		{"mongo test", "", false},
		{"sh scripts/gofmt-tap.sh > reports/fmt.tap", "", false},
	} {
		if got := isGoCheck(discovery.Check{Command: tc.cmd, Dependencies: tc.deps}); got != tc.want {
			t.Errorf("isGoCheck(%q, deps %q) = %v, want %v", tc.cmd, tc.deps, got, tc.want)
		}
	}
}

// TestGoToolKey: the key follows the toolchain root and the environment
// (any build-affecting variable changes it) and nothing else.
func TestGoToolKey(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "go", "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "go"), []byte("go binary"), 0o755)
	os.WriteFile(filepath.Join(dir, "go", "VERSION"), []byte("go1.26.0\n"), 0o644)
	img := filepath.Join(dir, "image.tar")
	os.WriteFile(img, []byte("image"), 0o644)
	env := []string{"PATH=" + bin, "GOFLAGS=-mod=readonly"}
	base := goToolKey(nil, "", nil, env)
	if again := goToolKey(nil, "", nil, []string{env[1], env[0]}); again != base {
		t.Errorf("the key depends on the environment's order")
	}
	if goToolKey(nil, "", nil, env) != base {
		t.Errorf("the key is not stable")
	}
	// Where modules come from does not change how std compiles.
	if goToolKey(nil, "", nil, append(env, "GOMODCACHE=/state/deps/go-modules/k1/tree", "GOPROXY=off", "GOSUMDB=off")) != base {
		t.Errorf("the module settings changed the toolchain key")
	}
	differs := map[string]func() string{
		"GOAMD64":    func() string { return goToolKey(nil, "", nil, append(env, "GOAMD64=v3")) },
		"CGO":        func() string { return goToolKey(nil, "", nil, append(env, "CGO_ENABLED=0")) },
		"GOFLAGS":    func() string { return goToolKey(nil, "", nil, []string{env[0], "GOFLAGS=-trimpath"}) },
		"host paths": func() string { return goToolKey(nil, "", []string{"/usr", "/opt/go"}, env) },
		"image":      func() string { return goToolKey(nil, img, nil, env) },
		"go version": func() string {
			os.WriteFile(filepath.Join(dir, "go", "VERSION"), []byte("go1.26.1\n"), 0o644)
			defer os.WriteFile(filepath.Join(dir, "go", "VERSION"), []byte("go1.26.0\n"), 0o644)
			return goToolKey(nil, "", nil, env)
		},
		"go binary": func() string {
			os.WriteFile(filepath.Join(bin, "go"), []byte("another go binary"), 0o755)
			defer os.WriteFile(filepath.Join(bin, "go"), []byte("go binary"), 0o755)
			return goToolKey(nil, "", nil, env)
		},
	}
	for name, f := range differs {
		if f() == base {
			t.Errorf("%s: the key did not change", name)
		}
	}
}

type tarEntry struct {
	name string
	typ  byte
	body string
	link string
}

func tarOf(t testing.TB, es []tarEntry) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return b.Bytes()
}

// TestUntarGoCache: the archive a task hands back unpacks only as a Go
// build cache; a link, a device, a path outside the cache or a name the
// go command never writes is refused, with the entry named.
func TestUntarGoCache(t *testing.T) {
	entry := "ab/" + strings.Repeat("0", 62) + "ab-d"
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		wantErr string
		want    map[string]string
	}{
		{"cache", []tarEntry{{"./", tar.TypeDir, "", ""}, {"./README", tar.TypeReg, "cache", ""}, {"./ab/", tar.TypeDir, "", ""}, {"./" + entry, tar.TypeReg, "output", ""}, {"./trim.txt", tar.TypeReg, "1", ""}},
			"", map[string]string{"README": "cache", entry: "output", "trim.txt": "1"}},
		{"no dot prefix", []tarEntry{{"ab", tar.TypeDir, "", ""}, {entry, tar.TypeReg, "x", ""}}, "", map[string]string{entry: "x"}},
		{"escape", []tarEntry{{"../evil", tar.TypeReg, "x", ""}}, `"../evil"`, nil},
		{"absolute", []tarEntry{{"/etc/passwd", tar.TypeReg, "x", ""}}, `"/etc/passwd"`, nil},
		{"nested escape", []tarEntry{{"ab/../../x", tar.TypeReg, "x", ""}}, "not a Go build cache entry", nil},
		{"symlink", []tarEntry{{"./" + entry, tar.TypeSymlink, "", "/etc/passwd"}}, "only directories and regular files", nil},
		{"hard link", []tarEntry{{"./" + entry, tar.TypeLink, "", "README"}}, "only directories and regular files", nil},
		{"device", []tarEntry{{"./README", tar.TypeChar, "", ""}}, "only directories and regular files", nil},
		{"other name", []tarEntry{{"./ab/notes.txt", tar.TypeReg, "x", ""}}, "not a Go build cache entry", nil},
		{"twice", []tarEntry{{"./README", tar.TypeReg, "a", ""}, {"./README", tar.TypeReg, "b", ""}}, "exists", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "cache")
			err := untarGoCache(bytes.NewReader(tarOf(t, tc.entries)), dst)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.want {
				if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != body {
					t.Errorf("%s = %q, %v; want %q", name, b, err, body)
				}
			}
		})
	}
	if err := untarGoCache(strings.NewReader("not a tar archive, but long enough to be read as a header block"+strings.Repeat("x", 600)), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Error("garbage unpacked without an error")
	}
}

// FuzzUntarGoCache: whatever the task writes, nothing lands outside the
// destination and nothing but directories and regular files is made.
func FuzzUntarGoCache(f *testing.F) {
	f.Add(tarOf(f, []tarEntry{{"./ab/", tar.TypeDir, "", ""}, {"./ab/" + strings.Repeat("1", 62) + "ab-a", tar.TypeReg, "x", ""}}))
	f.Add(tarOf(f, []tarEntry{{"../x", tar.TypeReg, "x", ""}}))
	f.Add(tarOf(f, []tarEntry{{"./README", tar.TypeSymlink, "", "/"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		dst := filepath.Join(root, "cache")
		_ = untarGoCache(bytes.NewReader(b), dst)
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != root && p != dst && !strings.HasPrefix(p, dst+"/") {
				t.Errorf("%s was made outside the cache", p)
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				t.Errorf("%s is a %s", p, d.Type())
			}
			return nil
		})
	})
}

// TestGoToolCacheReuseVerifies: a kept cache is used only while its tree
// hashes to its recorded fingerprint; one changed byte discards it (and,
// here, with the probe failed, no new one is built: nothing runs in the
// sandbox unprobed).
func TestGoToolCacheReuseVerifies(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("ab", 32)
	tree := filepath.Join(dir, key, "cache")
	entry := filepath.Join(tree, "ab", strings.Repeat("0", 62)+"ab-d")
	os.MkdirAll(filepath.Dir(entry), 0o755)
	os.WriteFile(entry, []byte("compiled"), 0o644)
	d, _, err := treehash.Sum(context.Background(), tree, treehash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, key, receiptName), []byte(d.String()+"\n"), 0o644)
	gate := make(chan struct{})
	close(gate)
	e := &executor{gate: gate, gateErr: errors.New("probe failed"), logf: func(string, ...any) {}}

	path, note, err := (&goToolCaches{dir: dir}).prepare(context.Background(), e, key, "", nil)
	if err != nil || path != tree || !strings.Contains(note, "reused, every byte verified") {
		t.Fatalf("intact cache: %q, %q, %v", path, note, err)
	}
	os.WriteFile(entry, []byte("tampered"), 0o644)
	path, note, err = (&goToolCaches{dir: dir}).prepare(context.Background(), e, key, "", nil)
	if err == nil || path != "" || note != "" {
		t.Fatalf("tampered cache used: %q, %q, %v", path, note, err)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !os.IsNotExist(err) {
		t.Errorf("the tampered cache is still kept: %v", err)
	}
}

// fakeRunner is a sandbox that runs nothing; unions says whether it can
// join Go build caches.
type fakeRunner struct{ unions bool }

func (fakeRunner) Prepare(context.Context, sandbox.Spec) (*sandbox.Task, error) {
	return nil, errors.New("fakeRunner runs nothing")
}
func (fakeRunner) Probe(context.Context, sandbox.Spec) (sandbox.ProbeReport, error) {
	return sandbox.ProbeReport{}, errors.New("fakeRunner probes nothing")
}
func (f fakeRunner) UnionsGoCaches() bool { return f.unions }

// TestGoToolchainCacheOperatorNotJoined: where the prepared cache cannot be
// joined with the operator's build cache (no overlayfs, a path overlayfs
// cannot name) the check keeps the operator's cache alone, the note says
// why, and no toolchain cache is built for it.
func TestGoToolchainCacheOperatorNotJoined(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	for _, tc := range []struct {
		name     string
		unions   bool
		operator string
		want     string
	}{
		{"no overlayfs", false, "/state/deps/go-build/k/tree", "the kernel has no overlayfs"},
		{"a colon in the path", true, "/state:1/deps/go-build/k/tree", "which an overlay cannot join"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := false
			e := &executor{sb: fakeRunner{tc.unions}, gate: gate, logf: func(string, ...any) { built = true },
				goCaches: &goToolCaches{dir: filepath.Join(t.TempDir(), "go")}}
			view := &deps.View{GoCache: tc.operator, ReadOnly: []string{tc.operator}}
			note := e.goToolchainCache(context.Background(), discovery.Check{ID: "unit", Command: "go test ./..."}, view, nil)
			if !strings.HasPrefix(note, "no prepared Go toolchain cache") || !strings.Contains(note, tc.want) {
				t.Errorf("note %q, want one saying %q", note, tc.want)
			}
			if view.GoCache != tc.operator || len(view.GoCacheLayers) != 0 || len(view.ReadOnly) != 1 {
				t.Errorf("the view changed: %+v", view)
			}
			if _, err := os.Stat(e.goCaches.dir); built || !os.IsNotExist(err) {
				t.Errorf("a toolchain cache build was attempted (log %v, dir %v)", built, err)
			}
		})
	}
}
