package statecache

import "testing"

// BenchmarkPrefixHybridLookup is the coordinator's lookup alone on the
// one-block-size path every layout takes (full attention and a Mamba
// align group at 16): a 64-block prompt whose first 48 blocks are cached
// in both groups, looked up whole.
func BenchmarkPrefixHybridLookup(b *testing.B) {
	const bs, n, cached = 16, 64, 48
	p := NewBlockPoolWith(2*n+1, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
	c, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{MambaAlign, bs}, []int32{1}}})
	if err != nil {
		b.Fatal(err)
	}
	hashes := make([]BlockHash, 0, n)
	tokens := make([]int32, n*bs)
	for i := range tokens {
		tokens[i] = int32(i)
	}
	hashes = AppendBlockHashes(hashes, tokens, bs)
	for g := range int32(2) {
		blocks := make([]int32, cached)
		if err := p.GetNewBlocks(1, g, blocks); err != nil {
			b.Fatal(err)
		}
		if err := p.CacheFullBlocks(1, g, blocks, hashes, 0, cached, bs); err != nil {
			b.Fatal(err)
		}
	}
	if hit := c.FindLongestCacheHit(p, hashes, n*bs-1); hit != cached*bs {
		b.Fatalf("hit %d tokens, want %d", hit, cached*bs)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.FindLongestCacheHit(p, hashes, n*bs-1)
	}
}
