package engine

import (
	"os"
	"strconv"
	"testing"
)

// sized is a test's workload size: suite under `go test`, long under
// $STATESIM_LONG (`make long`). The suite's size still shows what the test
// says it shows; the long tier replays more of it.
func sized(suite, long int) int {
	if os.Getenv("STATESIM_LONG") != "" && !testing.Short() {
		return long
	}
	return suite
}

func sizedSet(key string, suite, long int) string {
	return key + "=" + strconv.Itoa(sized(suite, long))
}
