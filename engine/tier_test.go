package engine

import (
	"strconv"

	"statesim/internal/testtier"
)

// sizedSet is a --set override sized by the test tier.
func sizedSet(key string, suite, long int) string {
	return key + "=" + strconv.Itoa(testtier.Sized(suite, long))
}

// wrap32Small is wrap32 shrunk for the tests that trace it (its trace is
// a third of a gigabyte): in the suite one training step on a 29-bit
// index, which wraps at slot 5958 (337 wrapped writes, 820 stale reads,
// a 51 MB trace); in the long tier three steps on a 30-bit one.
func wrap32Small() []string {
	if testtier.Long() {
		return []string{"workload.steps=3", "engine.state_index_bits=30"}
	}
	return []string{"workload.steps=1", "engine.state_index_bits=29"}
}
