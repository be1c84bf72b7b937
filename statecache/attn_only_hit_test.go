package statecache

import "testing"

// The hybrid hit as vLLM's tests pin it (test_hybrid_cache_mamba_align_
// shared_prefix_detection, tests/v1/core/test_prefix_caching.py @
// 6adad0876): request 0 caches three attention blocks and, in align mode,
// one Mamba state, at the end of its third block; request 2 shares only
// the first two blocks. Its attention hit is 2 blocks, the Mamba group has
// no state at 2 blocks, and the hit is 0 ("mamba_align doesn't cache
// intermediate blocks"). Closed PR #47491 skips the Mamba group's zero:
// the hit stays at 2 blocks with no Mamba block behind it. A shorter
// Mamba hit that is not zero cuts the hit under both.
func TestAttentionOnlyHit(t *testing.T) {
	const bs = 16
	toks := make([]int32, 3*bs)
	for i := range toks {
		toks[i] = int32(i / bs)
	}
	h0 := AppendBlockHashes(nil, toks, bs)
	toks[len(toks)-1] = 101
	h2 := AppendBlockHashes(nil, toks, bs)
	for _, c := range []struct {
		name       string
		keep       bool
		mambaAt    []bool // the Mamba group's cached states, by block
		hit, mamba int    // hit tokens, Mamba hit blocks
	}{
		{"released", false, []bool{false, false, true}, 0, 0},
		{"+47491", true, []bool{false, false, true}, 2 * bs, 0},
		{"released, a state at block 0", false, []bool{true, false, true}, bs, 1},
		{"+47491, a state at block 0", true, []bool{true, false, true}, bs, 1},
	} {
		p := NewBlockPoolWith(64, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
		cachePositions(t, p, 0, h0, []bool{true, true, true}, bs)
		cachePositions(t, p, 1, h0, c.mambaAt, bs)
		coord, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{MambaAlign, bs}, []int32{1}}})
		if err != nil {
			t.Fatal(err)
		}
		if c.keep {
			coord.SetKeepAttentionOnMiss()
		}
		got := coord.FindLongestCacheHit(p, h2, 3*bs-1)
		if got != c.hit || len(coord.HitBlocks(1)) != c.mamba {
			t.Errorf("%s: hit %d tokens with %d Mamba blocks, want %d with %d", c.name, got, len(coord.HitBlocks(1)), c.hit, c.mamba)
		}
		if a := len(coord.HitBlocks(0)); a*bs != got {
			t.Errorf("%s: %d attention blocks for a %d-token hit", c.name, a, got)
		}
		if coord.FirstRuleHit() != 2*bs {
			t.Errorf("%s: the attention rule's own hit is %d tokens, want %d", c.name, coord.FirstRuleHit(), 2*bs)
		}
	}
}
