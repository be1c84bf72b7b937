package mock

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"statesim/internal/testtier"
	"statesim/sched"
)

// With the fix and 64-bit indices, random small workloads (chunking,
// mixed batches, recycling and recompute preemption under small pools,
// greedy and sampled) produce log-probs equal to the reference's exactly.
func TestHealthyRandomWorkloadsExact(t *testing.T) {
	t.Parallel() // independent runs; the package's longest tests go side by side
	seeds := testtier.Sized(10, 40)
	var preemptions, requests int
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xbeef))
		c := engineCfg{
			numBlocks:  8 + rng.IntN(60),
			budget:     1 + rng.IntN(64),
			maxSeqs:    1 + rng.IntN(12),
			version:    sched.Fixed,
			weightSeed: seed,
		}
		if seed%2 == 0 {
			c.temperature = 1
		}
		if seed%5 == 0 {
			c.bits = 16 // harmless below the first wrapping slot (64)
			c.numBlocks = min(c.numBlocks, 64)
		}
		arr := randomArrivals(rng, 5+rng.IntN(25), 70, 20, 3)
		e := newEngine(t, c)
		e.run(arr)
		name := fmt.Sprintf("seed %d (%+v)", seed, c)
		if n := e.rec.Total(); n != 0 {
			t.Fatalf("%s: %d violations, first %v", name, n, e.viol[0])
		}
		st := e.mk.Stats()
		if st.RequestsCompared != int64(len(arr)) || st.RequestsDivergent != 0 || st.MaxDelta != 0 {
			t.Fatalf("%s: stats %+v, want all %d requests compared with Δ exactly 0", name, st, len(arr))
		}
		if e.mk.Pending() != 0 {
			t.Fatalf("%s: %d requests still held after finishing", name, e.mk.Pending())
		}
		for _, r := range e.reqs {
			preemptions += r.NumPreemptions
		}
		requests += len(arr)
	}
	t.Logf("%d requests over %d seeds, %d recompute preemptions", requests, seeds, preemptions)
	if preemptions == 0 {
		t.Fatalf("no workload preempted: recompute is untested")
	}
}

// A run is a pure function of its configuration.
func TestDeterministic(t *testing.T) {
	digest := func() string {
		rng := rand.New(rand.NewPCG(77, 1))
		e := newEngine(t, engineCfg{numBlocks: 12, budget: 9, version: sched.V013, weightSeed: 1, temperature: 0.7})
		e.keepRes = true
		e.run(randomArrivals(rng, 20, 40, 10, 2))
		return fmt.Sprintf("%v|%+v|%v|%v", e.mk.Divergences(), e.mk.Stats(), e.tokens, e.logprobs)
	}
	if a, b := digest(), digest(); a != b {
		t.Fatalf("two runs of one configuration differ")
	}
}
