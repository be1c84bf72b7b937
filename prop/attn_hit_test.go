package prop_test

import "testing"

// TestAttentionOnlyHitFromSeeds1And2: with closed PR #47491 the search
// finds the attention-only hit's stale read from search seeds 1 and 2;
// the release as shipped (the hybrid hit is the minimum over groups) is
// clean over both seeds' scenarios. bugtable runs the twin over 10,000.
func TestAttentionOnlyHitFromSeeds1And2(t *testing.T) {
	p := property(t, "stale-slot-read")
	for _, seed := range []int64{1, 2} {
		res := searchShared(t, attnOnlyHit(), p, seed, 2000)
		if res.Holds {
			t.Errorf("seed %d: +47491 found no stale read", seed)
		}
		released := attnOnlyHit()
		released.Patches = nil
		if res := searchShared(t, released, p, seed, 2000); !res.Holds {
			t.Errorf("seed %d: the release as shipped reads a stale state: %v", seed, res.Err)
		}
	}
}
