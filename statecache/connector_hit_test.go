package statecache

import "testing"

// #44243's lookup for a KV connector on a hybrid (find_longest_cache_hit_
// per_group, kv_cache_coordinator.py @ 55911db58): each group's own hit,
// the hit their maximum. Request 0 caches three attention blocks; the
// Mamba group holds states where mambaAt says. The common lookup cuts
// the hit to the Mamba group's; the per-group one keeps the attention
// hit with the Mamba group's shorter blocks, and a Mamba state deeper
// than the attention hit (its attention blocks evicted) sets the hit.
func TestConnectorMaxOverGroups(t *testing.T) {
	const bs = 16
	toks := make([]int32, 4*bs)
	for i := range toks {
		toks[i] = int32(i / bs)
	}
	h := AppendBlockHashes(nil, toks, bs)
	for _, c := range []struct {
		name          string
		max           bool
		attnAt        []bool
		mambaAt       []bool
		hit, attn, mb int // hit tokens, attention and Mamba hit blocks
	}{
		{"common, Mamba at 1", false, []bool{true, true, true}, []bool{true, false, false}, bs, 1, 1},
		{"max, Mamba at 1", true, []bool{true, true, true}, []bool{true, false, false}, 3 * bs, 3, 1},
		{"max, Mamba miss", true, []bool{true, true, true}, []bool{false, false, false}, 3 * bs, 3, 0},
		{"max, agreeing", true, []bool{true, true, true}, []bool{false, false, true}, 3 * bs, 3, 3},
		{"max, Mamba deeper", true, []bool{true, false, false}, []bool{false, false, true}, 3 * bs, 1, 3},
	} {
		p := NewBlockPoolWith(64, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
		cachePositions(t, p, 0, h, c.attnAt, bs)
		cachePositions(t, p, 1, h, c.mambaAt, bs)
		coord, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{MambaAll, bs}, []int32{1}}})
		if err != nil {
			t.Fatal(err)
		}
		if c.max {
			coord.SetMaxOverGroups()
		}
		got := coord.FindLongestCacheHit(p, h, 4*bs-1)
		if got != c.hit || len(coord.HitBlocks(0)) != c.attn || len(coord.HitBlocks(1)) != c.mb {
			t.Errorf("%s: hit %d tokens, %d attention and %d Mamba blocks; want %d, %d, %d", c.name,
				got, len(coord.HitBlocks(0)), len(coord.HitBlocks(1)), c.hit, c.attn, c.mb)
		}
	}
}
