package cart

import (
	"os"
	"testing"
)

func TestTotal(t *testing.T) {
	got, err := Total([]Item{{"a", 250, 2}, {"b", 100, 1}})
	if err != nil || got != 600 {
		t.Fatalf("Total = %d, %v", got, err)
	}
}

func TestRejectsZeroQty(t *testing.T) {
	if _, err := Total([]Item{{"a", 250, 0}}); err != ErrQty {
		t.Fatalf("err = %v", err)
	}
}

func TestPricesFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/prices.txt")
	if err != nil || len(b) == 0 {
		t.Fatalf("fixture: %v", err)
	}
}
