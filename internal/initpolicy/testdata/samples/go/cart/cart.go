// Package cart totals a shopping cart.
package cart

// Total returns the sum of prices in cents.
func Total(prices ...int) int {
	t := 0
	for _, p := range prices {
		t += p
	}
	return t
}
