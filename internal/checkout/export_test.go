package checkout

// SetParallelCheckout lets the benchmarks compare git's parallel checkout
// with a serial one: workers processes from threshold files on.
func SetParallelCheckout(m *Manager, workers, threshold int) {
	m.checkoutWorkers, m.checkoutThreshold = workers, threshold
}
