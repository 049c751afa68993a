package rmgo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	if d := cmp.Diff([]int{1, 2}, []int{1, 2}); d != "" {
		t.Fatal(d)
	}
}

func TestDiffFinds(t *testing.T) {
	if cmp.Diff("a", "b") == "" {
		t.Fatal("no diff")
	}
}
