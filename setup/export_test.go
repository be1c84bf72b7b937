package setup

// CountParses makes f hear every parse and layout this package makes, until
// the returned function is called (tests only; not safe for parallel tests).
func CountParses(f func(what string)) (stop func()) {
	parsed = f
	return func() { parsed = nil }
}
