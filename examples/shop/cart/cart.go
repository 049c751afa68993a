// Package cart prices a shopping cart.
package cart

import "errors"

// Item is one line of a cart.
type Item struct {
	SKU   string
	Cents int64
	Qty   int64
}

// ErrQty is returned for a non-positive quantity.
var ErrQty = errors.New("quantity must be positive")

// Total sums the cart in cents.
func Total(items []Item) (int64, error) {
	var t int64
	for _, it := range items {
		if it.Qty <= 0 {
			return 0, ErrQty
		}
		t += it.Cents * it.Qty
	}
	return t, nil
}
