package cart

import "testing"

func TestTotal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prices []int
		want   int
	}{
		{"empty", nil, 0},
		{"two items", []int{250, 100}, 350},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Total(tc.prices...); got != tc.want {
				t.Fatalf("Total = %d, want %d", got, tc.want)
			}
		})
	}
}
