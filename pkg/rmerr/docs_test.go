package rmerr_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestEveryCodeIsDocumented keeps docs/errors.md and the declared codes in
// step: codes are part of the interface, so an undocumented one is a bug, and
// so is a documented one that nothing can return.
func TestEveryCodeIsDocumented(t *testing.T) {
	decl := regexp.MustCompile(`Code = "(RM-[A-Z]+-\d{3})"`)
	declared := map[string]bool{}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			if declared[m[1]] {
				t.Errorf("code %s declared twice", m[1])
			}
			declared[m[1]] = true
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile(`(?m)^### (RM-[A-Z]+-\d{3})\b`)
	documented := map[string]bool{}
	for _, m := range head.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	var missing, stale []string
	for c := range declared {
		if !documented[c] {
			missing = append(missing, c)
		}
	}
	for c := range documented {
		if !declared[c] {
			stale = append(stale, c)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		t.Fatalf("docs/errors.md out of step: undocumented %v, documented but not declared %v", missing, stale)
	}
}
