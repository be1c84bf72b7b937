// A deliberately impure file: TestPurityCheckCatchesImpurity plants it to
// show the purity check fires. testdata is never built.
package impure

import (
	"math/rand/v2"
	"time"
)

func Jitter() time.Duration { return time.Duration(rand.IntN(10)) }
