package checkout

// SetCheckoutWorkers lets the benchmarks compare git's parallel checkout
// with a serial one.
func SetCheckoutWorkers(m *Manager, n int) { m.checkoutWorkers = n }
