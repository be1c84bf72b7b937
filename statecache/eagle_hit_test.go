package statecache

import "testing"

// The EAGLE drop in the coordinator (#53912). Attention caches blocks
// 0..5, the Mamba group states at blocks 1, 3, 4 and 5 (ends 8, 16, 20,
// 24 tokens). Without EAGLE the hit is 24 tokens. Under the drop,
// attention keeps 5 blocks (20 tokens) after matching 6: as released the
// Mamba lookup gets the margin and no drop and ends at 24 tokens, past
// the attention hit; #48375 honours the drop (a state at or below the
// attention hit: 20); #57128 gives no margin and drops a block (16).
func TestEagleDropMambaHit(t *testing.T) {
	const bs = 4
	p := NewBlockPoolWith(64, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
	h := tokenHashes(7*bs, bs, 0)
	cachePositions(t, p, 0, h, []bool{true, true, true, true, true, true, false}, bs)
	cachePositions(t, p, 1, h, []bool{false, true, false, true, true, true, false}, bs)
	for _, c := range []struct {
		name          string
		eagle         bool
		m             EagleMamba
		hit, attnHits int
	}{
		{"no eagle", false, 0, 6 * bs, 6},
		{"released", true, EagleMambaIgnored, 6 * bs, 5},
		{"+48375", true, EagleMambaHonored, 5 * bs, 5},
		{"+57128", true, EagleMambaNoMargin, 4 * bs, 4},
		// #46384 (481e481be, kept @ 6adad0876): no margin, no drop.
		{"#46384", true, EagleMambaUnmargined, 5 * bs, 5},
	} {
		coord, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{MambaAlign, bs}, []int32{1}}})
		if err != nil {
			t.Fatal(err)
		}
		if c.eagle {
			coord.SetEagle(c.m)
		}
		got := coord.FindLongestCacheHit(p, h, 7*bs-1)
		attn := len(coord.HitBlocks(0))
		if got != c.hit || attn != c.attnHits {
			t.Errorf("%s: hit %d tokens with %d attention blocks, want %d with %d", c.name, got, attn, c.hit, c.attnHits)
		}
		if c.eagle && c.m == EagleMambaIgnored && attn*bs >= got {
			t.Errorf("released: the attention hit (%d blocks) covers the %d-token hit; the Mamba hit should run past it", attn, got)
		}
	}
}
