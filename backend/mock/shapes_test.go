package mock

import (
	"math/rand/v2"
	"testing"

	"statesim/internal/testtier"
	"statesim/model"
	"statesim/sched"
)

// Shapes other than tiny-hybrid exercise the layout paths tiny-hybrid does
// not: several raw tensors (group size 2), and a Mamba-only page whose
// stride (528 elements) does not divide 2^16, so wrapped state writes land
// mid-page, straddle two pages and clobber other slots' conv windows.
func otherShapes(t *testing.T) map[string]model.Shape {
	base := tinyShape(t)
	multi := base
	multi.Name, multi.NumLayers = "tiny-hybrid-8", 8 // attention at 2 and 6: groups of 2 layers
	mambaOnly := base
	mambaOnly.Name, mambaOnly.NumLayers, mambaOnly.AttnLayerPeriod, mambaOnly.AttnLayerOffset = "tiny-mamba", 2, 0, 0
	mambaOnly.HiddenSize = 24
	return map[string]model.Shape{"multi-tensor": multi, "mamba-only": mambaOnly}
}

func TestOtherShapes(t *testing.T) {
	t.Parallel() // independent runs; the package's longest tests go side by side
	for _, name := range []string{"mamba-only", "multi-tensor"} {
		shape := otherShapes(t)[name]
		l := shape.Layout(16)
		t.Logf("%s: group size %d, groups %v, page %d elements", name, l.GroupSize, l.Groups, l.PageBytes/4)
		for _, bits := range []uint{64, 16} {
			var divergent, stale, missed int
			// One workload per shape and width: a 16-bit one already
			// wraps into 22 (multi-tensor) and 89 (mamba-only) stale
			// decode readers, and the 64-bit control shows the same
			// slots clean.
			for seed := uint64(1); seed <= uint64(testtier.Sized(1, 6)); seed++ {
				rng := rand.New(rand.NewPCG(seed, 0xa11))
				e := newEngine(t, engineCfg{shape: &shape, numBlocks: 130 + rng.IntN(100), budget: 8 + rng.IntN(40),
					maxSeqs: 2 + rng.IntN(8), version: sched.Fixed, bits: bits, weightSeed: seed})
				n := 40
				if name == "mamba-only" {
					n = 300 // one block per request: the queue must cycle past slot 125
				}
				e.run(randomArrivals(rng, n, 40, 12, 1))
				st := e.mk.Stats()
				if bits == 64 {
					if e.rec.Total() != 0 || st.MaxDelta != 0 {
						t.Fatalf("%s seed %d, 64-bit: %d violations, stats %+v; want clean and exact", name, seed, e.rec.Total(), st)
					}
					continue
				}
				divs := e.divergent()
				for id, d := range divs {
					if d.CorruptStep < 0 {
						t.Errorf("%s seed %d: request %d diverged with no recorded corruption", name, seed, id)
					}
				}
				for id := range e.staleDecodeReaders() {
					if _, ok := divs[id]; !ok {
						// Possible: a lost state can land on a token the
						// current token alone already decides.
						t.Logf("%s seed %d: request %d decoded from a stale slot but did not diverge", name, seed, id)
						missed++
					}
					stale++
				}
				divergent += len(divs)
			}
			if bits == 16 {
				t.Logf("%s, 16-bit: %d divergent, %d stale decode readers, %d of them not divergent", name, divergent, stale, missed)
				if divergent == 0 || stale == 0 {
					t.Errorf("%s: no corruption with a 16-bit index", name)
				}
				if missed*20 > stale {
					t.Errorf("%s: %d of %d stale decode readers did not diverge; want at most 5%%", name, missed, stale)
				}
			}
		}
	}
}
