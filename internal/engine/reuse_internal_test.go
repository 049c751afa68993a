package engine

import (
	"testing"
	"time"

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
			Image: "", Toolchain: "go1.26 key", Program: `"/usr/bin/go" 1 2`, Limits: "{CPUs:2}",
			Harness: "c0ffee with the base's harness tests/run.sh@0123456789ab"}
	}
	want := base().digest()
	if got := base().digest(); got != want || len(want) != 64 {
		t.Fatalf("the same inputs give %s and %s", want, got)
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
		"no report":      func(k *keyInputs) { k.Report = nil },
		"timeout":        func(k *keyInputs) { k.Timeout = 2 * time.Minute },
		"output cap":     func(k *keyInputs) { k.MaxOutput = 2 << 20 },
		"environment":    func(k *keyInputs) { k.Env = []string{"PATH=/usr/bin", "CI=false"} },
		"host paths":     func(k *keyInputs) { k.HostPaths = []string{"/usr", "/opt"} },
		"dependencies":   func(k *keyInputs) { k.Dependencies = []string{"go-modules k2 f1"} },
		"no deps":        func(k *keyInputs) { k.Dependencies = nil },
		"image":          func(k *keyInputs) { k.Image = `"/img.tar" 10 20` },
		"toolchain":      func(k *keyInputs) { k.Toolchain = "go1.27 key" },
		"interpreter":    func(k *keyInputs) { k.Program = `"/usr/bin/go" 1 3` },
		"sandbox limits": func(k *keyInputs) { k.Limits = "{CPUs:4}" },
		"key schema":     func(k *keyInputs) { k.Schema = inputKeySchema + ".next" },
		"harness":        func(k *keyInputs) { k.Harness = "c0ffee with the base's harness tests/run.sh@fedcba987654" },
	} {
		k := base()
		mod(&k)
		if k.digest() == want {
			t.Errorf("%s changed, the key did not", name)
		}
	}
}
