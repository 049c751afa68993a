package deps

import (
	"testing"

	"golang.org/x/mod/module"
)

// TestEscapePathAgreesWithModule holds escapePath to golang.org/x/mod's
// encoding of the module cache on every path and version the library
// accepts (escapePath exists only because the library refuses a wider
// grammar than go.sum parsing admits).
func TestEscapePathAgreesWithModule(t *testing.T) {
	for _, p := range []string{"github.com/google/go-cmp", "github.com/BurntSushi/toml", "github.com/Azure/azure-sdk-for-go/sdk/azcore",
		"gopkg.in/yaml.v3", "example.com/ALLCAPS/Mixed.Case"} {
		want, err := module.EscapePath(p)
		if err != nil {
			t.Fatalf("module.EscapePath(%q): %v", p, err)
		}
		if got := escapePath(p); got != want {
			t.Errorf("escapePath(%q) = %q, module.EscapePath says %q", p, got, want)
		}
	}
	for _, v := range []string{"v1.2.3", "v0.0.0-20230101000000-abcdefABCDEF", "v2.0.0+incompatible", "v1.0.0-RC1"} {
		want, err := module.EscapeVersion(v)
		if err != nil {
			t.Fatalf("module.EscapeVersion(%q): %v", v, err)
		}
		if got := escapePath(v); got != want {
			t.Errorf("escapePath(%q) = %q, module.EscapeVersion says %q", v, got, want)
		}
	}
}
