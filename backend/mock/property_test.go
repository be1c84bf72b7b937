package mock

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"statesim/internal/testtier"
	"statesim/sched"
)

// Over many random engines (v0.13, v0.14, fixed; 16- and 64-bit indices;
// small pools that recycle and preempt; budgets that hand new requests a
// single token), the numeric and the symbolic backends agree:
//   - every divergent request has a recorded corruption (CorruptStep ≥ 0);
//   - every request whose decode kernel read bytes not its own diverges.
func TestPropertyDivergenceMatchesProvenance(t *testing.T) {
	t.Parallel()                     // independent runs; the package's longest tests go side by side
	seeds := testtier.Sized(12, 120) // 12 engines already corrupt under v0.13, v0.14 and a 16-bit index
	versions := []sched.Version{sched.V013, sched.V014, sched.Fixed}
	var divergent, staleReaders, compared int
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		c := engineCfg{
			numBlocks:  9 + rng.IntN(110),
			budget:     1 + rng.IntN(40),
			maxSeqs:    1 + rng.IntN(10),
			version:    versions[rng.IntN(len(versions))],
			bits:       []uint{16, 64}[rng.IntN(2)],
			weightSeed: seed,
		}
		if rng.IntN(3) == 0 {
			c.temperature = 0.5 + rng.Float64()
		}
		arr := randomArrivals(rng, 10+rng.IntN(40), 50, 16, 2)
		e := newEngine(t, c)
		e.run(arr)
		replay := fmt.Sprintf("seed %d: %+v, %d requests", seed, c, len(arr))
		divs := e.divergent()
		for id, d := range divs {
			if d.CorruptStep < 0 {
				t.Errorf("%s: request %d diverged with no recorded corruption: %+v", replay, id, d)
			}
		}
		stale := e.staleDecodeReaders()
		ids := make([]int64, 0, len(stale))
		for id := range stale {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			if _, ok := divs[id]; !ok {
				t.Errorf("%s: request %d decoded from a stale slot but did not diverge", replay, id)
			}
		}
		divergent += len(divs)
		staleReaders += len(stale)
		compared += int(e.mk.Stats().RequestsCompared)
	}
	t.Logf("%d requests compared over %d engines: %d divergent, %d stale decode readers", compared, seeds, divergent, staleReaders)
	if divergent == 0 || staleReaders == 0 {
		t.Fatalf("the random engines never corrupted anything: the property is vacuous")
	}
}
