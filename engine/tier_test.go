package engine

import (
	"strconv"

	"statesim/internal/testtier"
)

// sizedSet is a --set override sized by the test tier.
func sizedSet(key string, suite, long int) string {
	return key + "=" + strconv.Itoa(testtier.Sized(suite, long))
}
