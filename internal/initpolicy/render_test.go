package initpolicy

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/pkg/policy"
)

// fixedHost answers as a machine where go, node and python3 are visible in
// the sandbox and cargo is a rustup proxy under /root, so the operator
// template's golden does not depend on the machine running the test.
type fixedHost struct{}

func (fixedHost) Locate(tool string) Toolchain {
	switch tool {
	case "cargo":
		return Toolchain{Tool: tool, Host: "/root/.cargo/bin/cargo", Binds: []string{"/root/.cargo", "/root/.rustup"}, Env: []string{"RUSTUP_HOME=/root/.rustup"}}
	case "python3":
		return Toolchain{Tool: tool, Visible: "/usr/bin/python3"}
	case "node":
		return Toolchain{Tool: tool}
	}
	return Toolchain{Tool: tool, Visible: "/usr/bin/" + tool}
}

func (fixedHost) Present(path string) bool { return path != "/lib32" && path != "/libx32" }

// noPytestHost is fixedHost where the sandbox's python3 cannot run pytest
// (what LocalHost reports on a machine without python3-pytest).
type noPytestHost struct{ fixedHost }

func (h noPytestHost) Locate(tool string) Toolchain {
	if tool == "python3" {
		return Toolchain{Tool: tool, Visible: "/usr/bin/python3",
			Unusable: "/usr/bin/python3 -m pytest does not run with the sandbox's environment: /usr/bin/python3: No module named pytest",
			Fix:      PytestFix("/usr/bin/python3", "/root/.pyenv/versions/3.11.7")}
	}
	return h.fixedHost.Locate(tool)
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestDetectAndRender(t *testing.T) {
	for _, tc := range []struct {
		name  string
		repo  fstest.MapFS
		ids   []string
		notes int
		host  Host // fixedHost when nil
	}{
		{"go-with-modules", fstest.MapFS{"go.mod": file("module x\n"), "go.sum": file("golang.org/x/text v0.1.0 h1:abc=\n")}, []string{"go"}, 0, nil},
		{"node-test-plain", fstest.MapFS{"package.json": file(`{"scripts":{"test":"node --test"}}`)}, []string{"node-test"}, 0, nil},
		{"node-test-shell", fstest.MapFS{"package.json": file(`{"scripts":{"test":"node --test test/ && echo ok"}}`)}, []string{"node-test"}, 1, nil},
		// Issue 27: what the test script chains besides the runner is said,
		// not dropped.
		{"vitest-and-typecheck", fstest.MapFS{"package.json": file(`{"scripts":{"test":"vitest run && npm run check:type:ts"},"devDependencies":{"vitest":"4"}}`), "package-lock.json": file("{}")}, []string{"vitest"}, 1, nil},
		{"vitest-npm", fstest.MapFS{"package.json": file(`{"devDependencies":{"vitest":"^4.1.0"}}`), "package-lock.json": file("{}")}, []string{"vitest"}, 0, nil},
		{"jest-junit", fstest.MapFS{"package.json": file(`{"scripts":{"test":"jest"},"devDependencies":{"jest":"30","jest-junit":"17"}}`), "package-lock.json": file("{}")}, []string{"jest"}, 0, nil},
		{"jest-bare", fstest.MapFS{"package.json": file(`{"scripts":{"test":"jest"},"devDependencies":{"jest":"30"}}`), "package-lock.json": file("{}")}, []string{"jest"}, 1, nil},
		{"mocha-no-lock", fstest.MapFS{"package.json": file(`{"scripts":{"test":"mocha"}}`)}, []string{"mocha"}, 1, nil},
		{"mocha-workspaces", fstest.MapFS{"package.json": file(`{"scripts":{"test":"mocha"},"workspaces":["a"]}`), "package-lock.json": file("{}")}, []string{"mocha"}, 1, nil},
		{"yarn", fstest.MapFS{"package.json": file(`{"devDependencies":{"vitest":"4"}}`), "yarn.lock": file("")}, []string{"vitest"}, 1, nil},
		{"pnpm", fstest.MapFS{"package.json": file(`{"devDependencies":{"vitest":"4"}}`), "pnpm-lock.yaml": file("lockfileVersion: '9.0'\n")}, []string{"vitest"}, 0, nil},
		{"npm-test-unknown", fstest.MapFS{"package.json": file(`{"scripts":{"test":"ava"}}`)}, []string{"npm-test"}, 1, nil},
		{"npm-default", fstest.MapFS{"package.json": file(`{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`)}, nil, 1, nil},
		{"package-json-broken", fstest.MapFS{"package.json": file(`{`)}, nil, 1, nil},
		{"python-setup-only", fstest.MapFS{"setup.py": file("from setuptools import setup\n")}, []string{"pytest"}, 0, nil},
		{"cargo-lock-ignored", fstest.MapFS{"Cargo.toml": file("[package]\n"), ".gitignore": file("/target\nCargo.lock\n")}, []string{"cargo"}, 1, nil},
		{"cargo-registry", fstest.MapFS{"Cargo.toml": file("[package]\n"), "Cargo.lock": file("[[package]]\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n")}, []string{"cargo"}, 1, nil},
		{"cargo-no-lock", fstest.MapFS{"Cargo.toml": file("[package]\n")}, []string{"cargo"}, 1, nil},
		{"report-path-taken", fstest.MapFS{"go.mod": file("module x\n"), "reports/go.json": file("{}")}, []string{"go"}, 0, nil},
		{"polyglot", fstest.MapFS{"go.mod": file("module x\n"), "package.json": file(`{"scripts":{"test":"vitest run"}}`), "package-lock.json": file("{}"),
			"pytest.ini": file("[pytest]\n"), "Cargo.toml": file("[workspace]\n"), "Cargo.lock": file("version = 4\n")}, []string{"go", "vitest", "pytest", "cargo"}, 0, nil},
		{"nothing", fstest.MapFS{"README.md": file("hi\n")}, nil, 0, nil},
		{"pytest-missing", fstest.MapFS{"go.mod": file("module x\n"), "pytest.ini": file("[pytest]\n")}, []string{"go", "pytest"}, 0, noPytestHost{}},
		{"pytest-missing-only", fstest.MapFS{"pyproject.toml": file("[tool.pytest.ini_options]\n")}, []string{"pytest"}, 0, noPytestHost{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Detect(tc.repo)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Ecosystems(); !reflect.DeepEqual(got, tc.ids) && len(got)+len(tc.ids) > 0 {
				t.Fatalf("checks %v, want %v", got, tc.ids)
			}
			if len(p.Notes) != tc.notes {
				t.Errorf("notes %q, want %d", p.Notes, tc.notes)
			}
			if len(p.Checks) == 0 {
				return
			}
			var host Host = fixedHost{}
			if tc.host != nil {
				host = tc.host
			}
			f := Render(p, host)
			golden.Bytes(t, filepath.Join("testdata", "golden", "render", tc.name+".yaml"),
				[]byte(string(f.Checks)+"# ---- operator policy ----\n"+string(f.Operator)))

			// Both documents load with the strict loaders, and say exactly
			// what the plan says.
			repo, err := policy.ParseRepository(f.Checks, "checks.yaml")
			if err != nil {
				t.Fatalf("generated checks.yaml does not load: %v\n%s", err, f.Checks)
			}
			op, err := policy.ParseOperator(f.Operator, "policy.yaml")
			if err != nil {
				t.Fatalf("generated operator policy does not load: %v\n%s", err, f.Operator)
			}
			// A check whose toolchain cannot work is not written, and
			// every other one is.
			written := f.Written(p)
			if len(written)+len(f.Omitted) != len(p.Checks) || len(repo.Value.Checks) != len(written) {
				t.Fatalf("%d planned, %d written, %d omitted; checks.yaml has %d", len(p.Checks), len(written), len(f.Omitted), len(repo.Value.Checks))
			}
			for _, c := range f.Omitted {
				if c.Tool != "python3" || !strings.Contains(string(f.Checks), "NOT WRITTEN: the "+c.Spec.ID+" check") || !strings.Contains(string(f.Checks), "apt-get install python3-pytest") {
					t.Errorf("omitted %s without the reason and fix in checks.yaml", c.Spec.ID)
				}
			}
			if _, ok := tc.host.(noPytestHost); ok != (len(f.Omitted) > 0) {
				t.Errorf("omitted %v with host %T", f.Omitted, tc.host)
			}
			for i, c := range written {
				got := repo.Value.Checks[i]
				if got.ID != c.Spec.ID || got.Run != c.Spec.Run || !reflect.DeepEqual(got.Report, c.Spec.Report) ||
					got.Timeout != c.Spec.Timeout || got.Dependencies != c.Spec.Dependencies {
					t.Errorf("check %d round trip:\n got %+v\nwant %+v", i, got, c.Spec)
				}
			}
			if op.Value.Autonomy != policy.PROnly || op.Value.Verification.FailOnSkipped() {
				t.Errorf("operator template: autonomy %s fail_on_skipped %v", op.Value.Autonomy, op.Value.Verification.FailOnSkipped())
			}
			// A rustup-managed cargo gets an operator copy of the check
			// with RUSTUP_HOME, and the toolchain is bound.
			if strings.Contains(strings.Join(tc.ids, ","), "cargo") {
				cmds := op.Value.Verification.Commands
				if len(cmds) != 1 || cmds[0].ID != "cargo" || !strings.HasPrefix(cmds[0].Run, "export RUSTUP_HOME=/root/.rustup\n") {
					t.Errorf("operator commands %+v", cmds)
				}
				hp := op.Value.Sandbox.HostPaths
				if !contains(hp, "/root/.rustup") || !contains(hp, "/usr") || contains(hp, "/lib32") {
					t.Errorf("host_paths %v", hp)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDetectIgnoresSymlinkedManifests(t *testing.T) {
	repo := fstest.MapFS{"go.mod": &fstest.MapFile{Data: []byte("/etc/passwd"), Mode: 0o777 | 1<<27 /* fs.ModeSymlink */}}
	p, err := Detect(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Checks) != 0 {
		t.Fatalf("a symlinked go.mod was read: %+v", p.Checks)
	}
}

// FuzzScalar: whatever a command holds, the YAML init writes reads back as
// the same string (commands are the one free text init writes).
func FuzzScalar(f *testing.F) {
	for _, s := range []string{"go test ./...", "a: b", "- x", "x #y", "true", `JEST="{a}" › b`, "'q'", "", " lead", "trail ", "a\nb", "  indented\nnext", "x\n\ny", "~", "@x", "%x", "a\tb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\r\x00\ufeff") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
			return // commands are text; YAML cannot carry control characters plainly
		}
		if strings.Contains(s, "\n") && (strings.HasSuffix(s, "\n") || strings.Contains(s, " \n") || strings.Contains(s, "\t") || strings.HasPrefix(s, "\n")) {
			return // literal blocks are for scripts init writes itself
		}
		var b bytes.Buffer
		writeCheck(&b, "", policy.CheckSpec{ID: "x", Run: s})
		var got []struct {
			Run string `yaml:"run"`
		}
		if err := yaml.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v\n%s", s, err, b.String())
		}
		if len(got) != 1 || got[0].Run != s {
			t.Fatalf("%q read back as %q\n%s", s, fmt.Sprint(got), b.String())
		}
	})
}
