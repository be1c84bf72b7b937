package testtier

import (
	"os"
	"testing"
)

// Long reports whether the long tier runs: $STATESIM_LONG set and -short
// not given. Call it from a test, after flags are parsed.
func Long() bool {
	return os.Getenv("STATESIM_LONG") != "" && !testing.Short()
}

// Sized is a test's size: suite in the suite, long in the long tier.
func Sized(suite, long int) int {
	if Long() {
		return long
	}
	return suite
}
