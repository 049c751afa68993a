package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/runmill/verify"

// plumbing are the packages that know how to do a thing (run git, mount,
// hash a tree, bound a read) and nothing of what runmill decides with it.
var plumbing = []string{
	"internal/git", "internal/checkout", "internal/sandbox", "internal/mountinfo", "internal/unzip", "internal/bounded",
	"internal/fsname", "internal/rmtree", "internal/procfs", "internal/lastuse", "pkg/jsonnum",
	"pkg/treehash", "pkg/printable", "pkg/budget", "pkg/rmerr", "pkg/pathglob", "pkg/objectid", "pkg/digest",
}

// domain are the packages that decide: the pipeline's questions and its
// glue.
var domain = []string{
	"pkg/discovery", "pkg/policy", "pkg/verdict", "pkg/evidence", "pkg/outcome", "pkg/report",
	"internal/engine", "internal/cli", "internal/actions", "internal/explain", "internal/doctor", "internal/download",
}

// beside are the domain packages the engine's callers use beside it: they
// read its records, and depending on the engine would make them part of
// one run (the Actions runtime once imported it for Explain).
var beside = []string{"internal/actions", "internal/explain", "internal/download"}

// pkgInfo is what the rules read of `go list -json`: a package, what it
// imports and every package it depends on, not counting its tests (a test
// may use internal/golden; a library user never builds it).
type pkgInfo struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// violation is one broken rule: from depends on to.
type violation struct{ from, to, rule string }

// check applies the import rules to a module's packages (paths relative to
// the module).
func check(pkgs []pkgInfo) []violation {
	var out []violation
	for _, p := range pkgs {
		// Direct imports: every package of pkg/ is checked, so none
		// imports internal/ (the one that does is named, not what depends on it).
		for _, d := range p.Imports {
			if rel, ok := strings.CutPrefix(d, module+"/"); ok && under(p.ImportPath, "pkg") && under(rel, "internal") {
				out = append(out, violation{p.ImportPath, rel, "pkg/ never imports internal/"})
			}
		}
		// Every dependency: plumbing may import packages that are neither
		// plumbing nor domain (pkg/harness), which must not bring the
		// domain with them.
		for _, d := range p.Deps {
			if rel, ok := strings.CutPrefix(d, module+"/"); ok && inList(p.ImportPath, plumbing) && inList(rel, domain) {
				out = append(out, violation{p.ImportPath, rel, "plumbing does not import the domain"})
			}
			if rel, ok := strings.CutPrefix(d, module+"/"); ok && inList(p.ImportPath, beside) && rel == "internal/engine" {
				out = append(out, violation{p.ImportPath, rel, "the engine's readers do not depend on the engine"})
			}
		}
	}
	return out
}

// under reports whether the module-relative path p is top or lies below
// it. pkg/x/internal/y is under pkg, not under internal: a library's own
// internal package is part of the library.
func under(p, top string) bool { return p == top || strings.HasPrefix(p, top+"/") }

// inList reports whether p is one of list or a package nested in one.
func inList(p string, list []string) bool {
	return slices.ContainsFunc(list, func(l string) bool { return under(p, l) })
}

// goCommand is the go tool on PATH (go test puts its own GOROOT/bin first).
// The rules are never skipped for want of it.
func goCommand(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: the import rules need `go list`: %v", err)
	}
	return p
}

// list runs `go list -deps`-style listing of the module's packages.
func list(t *testing.T, patterns ...string) []pkgInfo {
	t.Helper()
	cmd := exec.Command(goCommand(t), append([]string{"list", "-json=ImportPath,Imports,Deps"}, patterns...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module+"/")
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules holds the module's packages to the rules.
func TestImportRules(t *testing.T) {
	pkgs := list(t, "./...")
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.ImportPath] = true
	}
	// A rule over packages that are not there proves nothing: every
	// package the lists name must exist (a rename must update them).
	for _, l := range slices.Concat(plumbing, domain) {
		if !seen[l] {
			t.Errorf("%s is in the rules but not in the module", l)
		}
	}
	for _, v := range check(pkgs) {
		t.Errorf("%s depends on %s: %s", v.from, v.to, v.rule)
	}
}

// TestCheckFindsViolations: the rules checker refuses each kind of broken
// import, and lets the allowed ones through (both ways, so the rules test
// above cannot pass by checking nothing). The first case is the state of
// main before issue 18: internal/git imported pkg/discovery.
func TestCheckFindsViolations(t *testing.T) {
	dep := func(p string) string { return module + "/" + p }
	for name, tc := range map[string]struct {
		pkgs []pkgInfo
		want []violation
	}{
		"plumbing imports domain": {
			pkgs: []pkgInfo{{"internal/git", []string{dep("pkg/discovery")}, []string{"bytes", dep("pkg/discovery"), dep("pkg/rmerr")}}},
			want: []violation{{"internal/git", "pkg/discovery", "plumbing does not import the domain"}},
		},
		"plumbing depends on domain through a nested package": {
			pkgs: []pkgInfo{{"pkg/treehash", []string{dep("pkg/harness")}, []string{dep("pkg/harness"), dep("pkg/report/internal/xmlscan")}}},
			want: []violation{{"pkg/treehash", "pkg/report/internal/xmlscan", "plumbing does not import the domain"}},
		},
		"pkg imports internal": {
			pkgs: []pkgInfo{{"pkg/verdict", []string{dep("internal/engine")}, []string{dep("internal/engine")}}},
			want: []violation{{"pkg/verdict", "internal/engine", "pkg/ never imports internal/"}},
		},
		"pkg imports its own internal package": {
			pkgs: []pkgInfo{{"pkg/report", []string{dep("pkg/report/internal/xmlscan")}, []string{dep("pkg/report/internal/xmlscan")}}},
		},
		"a pkg package that depends on internal/ only through another's import": {
			pkgs: []pkgInfo{{"pkg/verdict", []string{dep("pkg/report")}, []string{dep("pkg/report"), dep("internal/bounded")}}},
		},
		"the Actions runtime depends on the engine": {
			pkgs: []pkgInfo{{"internal/actions", []string{dep("internal/explain")}, []string{dep("internal/explain"), dep("internal/engine")}}},
			want: []violation{{"internal/actions", "internal/engine", "the engine's readers do not depend on the engine"}},
		},
		"domain imports plumbing and internal": {
			pkgs: []pkgInfo{{"internal/engine", []string{dep("internal/git"), dep("pkg/evidence")}, []string{dep("internal/git"), dep("pkg/evidence")}}},
		},
		"a module outside is not ours": {
			pkgs: []pkgInfo{{"internal/git", []string{"example.com/x/pkg/discovery"}, []string{"example.com/x/pkg/discovery"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := check(tc.pkgs); !slices.Equal(got, tc.want) {
				t.Errorf("check = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNoNetworkImports proves DESIGN.md's rule for the offline verifier:
// pkg/evidence and everything it imports use no network package. Package
// net is the socket layer (and what crypto/x509 and sigstore's signature
// package pull in); net/http, crypto/tls and golang.org/x/net sit on it.
// (Moved here from pkg/evidence with the other import rules.)
func TestNoNetworkImports(t *testing.T) {
	pkgs := list(t, "-deps", module+"/pkg/evidence")
	if len(pkgs) < 10 {
		t.Fatalf("go list listed only %d packages; the check proves nothing", len(pkgs))
	}
	for _, p := range pkgs {
		if isNetwork(p.ImportPath) {
			t.Errorf("pkg/evidence depends on network package %s", p.ImportPath)
		}
		for _, d := range p.Deps {
			if isNetwork(d) {
				t.Errorf("%s depends on network package %s", p.ImportPath, d)
			}
		}
	}
}

func isNetwork(path string) bool {
	path = strings.TrimPrefix(path, "vendor/")
	return path == "net" || strings.HasPrefix(path, "net/") || path == "crypto/tls" ||
		strings.HasPrefix(path, "golang.org/x/net") || strings.HasPrefix(path, "google.golang.org/grpc")
}

func TestIsNetwork(t *testing.T) {
	for p, want := range map[string]bool{
		"net": true, "net/http": true, "vendor/golang.org/x/net/dns/dnsmessage": true, "crypto/tls": true,
		"google.golang.org/grpc/codes": true, "crypto/ed25519": false, "encoding/json": false, "github.com/runmill/verify/pkg/netrc": false,
	} {
		if got := isNetwork(p); got != want {
			t.Errorf("isNetwork(%q) = %v, want %v", p, got, want)
		}
	}
}
