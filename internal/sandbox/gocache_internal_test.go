package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runmill/verify/pkg/rmerr"
)

// TestGoCacheLayersValidate: layers that overlayfs could not name, that lie
// in the checkout, repeat, are missing or are files are refused with their
// field; a valid set yields one read-only overlay (GoCache's entries first)
// and GOCACHE at GoCachePath.
func TestGoCacheLayersValidate(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	op, pre, co := mk("operator"), mk("prepared"), mk("co")
	colon, comma := mk("a:b"), mk("a,b")
	inCo := mk("co/cache")
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for name, tc := range map[string]struct {
		spec  Spec
		field string
	}{
		"no first layer":  {Spec{GoCacheLayers: []string{pre}}, "go_cache_layers"},
		"relative":        {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{"prepared"}}, "go_cache_layers[0]"},
		"colon":           {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{colon}}, "go_cache_layers[0]"},
		"comma":           {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{comma}}, "go_cache_layers[0]"},
		"first has colon": {Spec{GoCache: colon, ReadOnly: []string{colon}, GoCacheLayers: []string{pre}}, "go_cache"},
		"in the checkout": {Spec{Checkout: co, GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{inCo}}, "go_cache_layers[0]"},
		"twice":           {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{pre, pre}}, "go_cache_layers[1]"},
		"same as first":   {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{op}}, "go_cache_layers[0]"},
		"missing":         {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{filepath.Join(dir, "nope")}}, "go_cache_layers[0]"},
		"a file":          {Spec{GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{file}}, "go_cache_layers[0]"},
	} {
		tc.spec.Command = "true"
		_, err := tc.spec.validate()
		var list rmerr.List
		if rmerr.CodeOf(err) != rmerr.SandboxSpec || !asList(err, &list) || !slices.ContainsFunc(list, func(e *rmerr.Error) bool { return e.Field == tc.field }) {
			t.Errorf("%s: want %s in field %s, got %v", name, rmerr.SandboxSpec, tc.field, err)
		}
	}

	p, err := Spec{Command: "true", GoCache: op, ReadOnly: []string{op}, GoCacheLayers: []string{pre}}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.env, "GOCACHE="+GoCachePath) {
		t.Errorf("env %q lacks GOCACHE=%s", p.env, GoCachePath)
	}
	m, ok := p.goCacheMount()
	want := []string{"ro", "nosuid", "nodev", "lowerdir=" + op + ":" + pre}
	if !ok || m.Type != "overlay" || m.Destination != GoCachePath || !slices.Equal(m.Options, want) {
		t.Errorf("mount %+v, want an overlay at %s with %q", m, GoCachePath, want)
	}
	// No layers: no overlay, GOCACHE is the bind.
	p, err = Spec{Command: "true", GoCache: op, ReadOnly: []string{op}}.validate()
	if _, ok := p.goCacheMount(); err != nil || ok || !slices.Contains(p.env, "GOCACHE="+op) {
		t.Errorf("one cache: %v, overlay %v, env %q", err, ok, p.env)
	}
}
