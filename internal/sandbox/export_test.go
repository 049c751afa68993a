package sandbox

// DisableOuterTimerUnsafe turns off Run's own wall-clock timer until restore
// is called, so a test can show that the in-task init alone ends a task at
// its limit. Never for a real run: the outer timer is what records the
// timeout promptly.
func DisableOuterTimerUnsafe() (restore func()) {
	outerTimerOff.Store(true)
	return func() { outerTimerOff.Store(false) }
}
