package evidence_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestNoNetworkImports proves DESIGN.md's rule for the offline verifier:
// pkg/evidence and everything it imports use no network package. Package
// net is the socket layer (and what crypto/x509 and sigstore's signature
// package pull in); net/http, crypto/tls and golang.org/x/net sit on it.
func TestNoNetworkImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-json", "github.com/runmill/verify/pkg/evidence").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		if isNetwork(p.ImportPath) {
			t.Errorf("pkg/evidence depends on network package %s", p.ImportPath)
		}
		for _, imp := range p.Imports {
			if isNetwork(imp) {
				t.Errorf("%s imports network package %s", p.ImportPath, imp)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list listed only %d packages; the check proves nothing", n)
	}
}

func isNetwork(path string) bool {
	path = strings.TrimPrefix(path, "vendor/")
	return path == "net" || strings.HasPrefix(path, "net/") || path == "crypto/tls" ||
		strings.HasPrefix(path, "golang.org/x/net") || strings.HasPrefix(path, "google.golang.org/grpc")
}
