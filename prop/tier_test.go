package prop

import (
	"os"
	"testing"
)

// sized is a search's size: suite under `go test` (and -short), long
// under $STATESIM_LONG (`make long`). The suite's size still breaks what
// the test says can break; the long tier draws more.
func sized(suite, long int) int {
	if os.Getenv("STATESIM_LONG") != "" && !testing.Short() {
		return long
	}
	return suite
}
