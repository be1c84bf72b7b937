package statecache

// Cases from vLLM's tests/v1/core/test_prefix_caching.py and
// test_kv_cache_utils.py (at 003df296): the same inputs, and the block ids,
// hit lengths and free-queue orders vLLM asserts, written here as tables.
// Where vLLM's expected free order is that of PR #42656 (fresh blocks to
// the head), the case also runs with FreeToTail, vLLM's order before it;
// those expectations follow from the older free_blocks (every freed block
// appended) applied to the same steps.

import (
	"slices"
	"testing"
)

// vreq is a request of the tests: its tokens, their block hashes and its
// table.
type vreq struct {
	id     RequestID
	tokens []int32
	hashes []BlockHash
	t      PrefixTable
}

func newVreq(m *PrefixCacheManager, id RequestID, tokens []int32) *vreq {
	return &vreq{id: id, tokens: tokens, hashes: AppendBlockHashes(nil, tokens, m.blockSize), t: m.NewTable()}
}

// rep is n copies of v.
func rep(v int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// span is lo, lo+1, ..., hi-1.
func span(lo, hi int) []int32 {
	out := make([]int32, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, int32(i))
	}
	return out
}

func cat(parts ...[]int32) []int32 { return slices.Concat(parts...) }

// common3 is three full blocks of 16: 0×16, 1×16, 2×16.
func common3() []int32 { return cat(rep(0, 16), rep(1, 16), rep(2, 16)) }

func fullManager(t testing.TB, numBlocks, blockSize int, order FreeOrder) *PrefixCacheManager {
	t.Helper()
	return hybridManager(t, numBlocks, order, HitGroup{FullAttention{blockSize}, []int32{0}})
}

func hybridManager(t testing.TB, numBlocks int, order FreeOrder, rules ...HitGroup) *PrefixCacheManager {
	t.Helper()
	n := 0
	for _, r := range rules {
		n += len(r.Groups)
	}
	c, err := NewHybridCoordinator(n, rules)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewPrefixCacheManager(NewBlockPoolWith(numBlocks, PoolOptions{EnablePrefixCaching: true, FreeOrder: order}), c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lookup runs get_computed_blocks for r and returns the hit in tokens and
// each group's hit block ids.
func lookup(m *PrefixCacheManager, r *vreq) (int, [][]int32) {
	hit := m.GetComputedBlocks(len(r.tokens), r.hashes, false)
	ids := make([][]int32, m.Coord.NumGroups())
	for g := range ids {
		ids[g] = slices.Clone(m.Coord.HitBlocks(int32(g)))
	}
	return hit, ids
}

// schedule looks r up and allocates numNew tokens after the hit; it
// returns the hit and the blocks allocated, per group.
func schedule(t *testing.T, m *PrefixCacheManager, r *vreq, numNew int) (int, [][]int32, bool) {
	t.Helper()
	hit, _ := lookup(m, r)
	before := make([]int, len(r.t.Blocks))
	for g := range before {
		before[g] = len(r.t.Blocks[g]) + hit/m.blockSize
	}
	ok, err := m.AllocateSlots(r.id, &r.t, 0, hit, numNew, len(r.tokens), r.hashes)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return hit, nil, false
	}
	got := make([][]int32, len(r.t.Blocks))
	for g := range got {
		got[g] = slices.Clone(r.t.Blocks[g][before[g]:])
	}
	return hit, got, true
}

func free(t *testing.T, m *PrefixCacheManager, r *vreq) {
	t.Helper()
	if err := m.Free(r.id, &r.t); err != nil {
		t.Fatal(err)
	}
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equalAny(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []int32:
		return slices.Equal(x, b.([]int32))
	case [][]int32:
		return slices.EqualFunc(x, b.([][]int32), slices.Equal[[]int32])
	}
	return a == b
}

func TestVLLMFreeQueueOperations(t *testing.T) { // test_free_kv_cache_block_queue_operations
	q := NewFreeBlockQueue(5, 0, true)
	eq(t, "initial", q.AppendTo(nil), []int32{0, 1, 2, 3, 4})
	if b := q.PopLeft(); b != 0 || q.Len() != 4 || q.Head() != 1 {
		t.Fatalf("popleft %d, len %d, head %d", b, q.Len(), q.Head())
	}
	q.Remove(2)
	if q.Len() != 3 || q.next[1] != 3 || q.prev[3] != 1 {
		t.Fatalf("after remove: len %d, next[1] %d, prev[3] %d", q.Len(), q.next[1], q.prev[3])
	}
	q.Append(2)
	if q.Len() != 4 || q.tail != 2 || q.prev[2] != 4 || q.next[2] != noBlock {
		t.Fatalf("after append: len %d tail %d prev[2] %d", q.Len(), q.tail, q.prev[2])
	}
	var popped []int32
	for range 4 {
		popped = append(popped, q.PopLeft())
	}
	eq(t, "popped", popped, []int32{1, 3, 4, 2})
	if q.Len() != 0 || q.Head() != noBlock || q.tail != noBlock {
		t.Fatalf("empty queue: len %d head %d tail %d", q.Len(), q.Head(), q.tail)
	}
	// append_n and prepend_n keep the given order.
	q.AppendN([]int32{3, 1})
	q.PrependN([]int32{4, 0})
	eq(t, "after append_n, prepend_n", q.AppendTo(nil), []int32{4, 0, 3, 1})
}

// TestVLLMPrefill is test_prefill: hits while the owner runs and after it
// frees, and the eviction order.
func TestVLLMPrefill(t *testing.T) {
	for _, c := range []struct {
		order                FreeOrder
		afterFree, req2Block []int32
		req3                 []int32
	}{
		// vLLM's own expectations (fresh 5 and 4 to the head).
		{FreshToHead, []int32{5, 4, 6, 7, 8, 9, 10, 3, 2, 1}, []int32{5}, []int32{5, 4, 6, 7, 8, 9, 10, 3, 2, 1}},
		// Before #42656: everything to the tail.
		{FreeToTail, []int32{6, 7, 8, 9, 10, 4, 5, 3, 2, 1}, []int32{6}, []int32{7, 8, 9, 10, 4, 5, 6, 3, 2, 1}},
	} {
		t.Run(c.order.String(), func(t *testing.T) {
			m := fullManager(t, 11, 16, c.order)
			p := m.Pool
			r0 := newVreq(m, 0, cat(common3(), rep(3, 7)))
			if len(r0.hashes) != 3 {
				t.Fatalf("%d hashes", len(r0.hashes))
			}
			hit, blocks, _ := schedule(t, m, r0, 55)
			eq(t, "req0 hit", hit, 0)
			eq(t, "req0 blocks", blocks, [][]int32{{1, 2, 3, 4}})
			parent := NoneHash
			for i, b := range []int32{1, 2, 3} {
				h := HashBlockTokens(parent, r0.tokens[i*16:(i+1)*16])
				r := p.Record(b)
				if !r.Cached || r.Hash != h || r.Group != 0 || r.Tokens != int32((i+1)*16) || r.Writer != 0 || p.RefCount(b) != 1 {
					t.Errorf("block %d: %+v ref %d, want hash %#x", b, r, p.RefCount(b), uint64(h))
				}
				parent = h
			}
			if r := p.Record(4); r.Cached || r.Hash != 0 || p.RefCount(4) != 1 {
				t.Errorf("partial block 4: %+v", r)
			}

			r1 := newVreq(m, 1, cat(common3(), rep(3, 5)))
			hit, blocks, _ = schedule(t, m, r1, 53-48)
			eq(t, "req1 hit", hit, 48)
			eq(t, "req1 blocks", blocks, [][]int32{{5}})
			for _, b := range []int32{1, 2, 3} {
				eq(t, "shared ref", p.RefCount(b), 2)
			}
			eq(t, "free before frees", p.NumFree(), 5)
			free(t, m, r0)
			free(t, m, r1)
			eq(t, "free queue", p.FreeQueue(), c.afterFree)

			r2 := newVreq(m, 2, cat(common3(), rep(3, 6)))
			hit, blocks, _ = schedule(t, m, r2, 53-48)
			eq(t, "req2 hit", hit, 48)
			eq(t, "req2 blocks", blocks, [][]int32{c.req2Block})
			eq(t, "free after req2", p.NumFree(), 6)
			for _, b := range p.FreeQueue() {
				if p.RefCount(b) != 0 {
					t.Errorf("queued block %d has ref %d", b, p.RefCount(b))
				}
			}
			free(t, m, r2)

			r3 := newVreq(m, 3, rep(99, 160))
			hit, blocks, _ = schedule(t, m, r3, 160)
			eq(t, "req3 hit", hit, 0)
			eq(t, "req3 blocks (the eviction order)", blocks, [][]int32{c.req3})
			eq(t, "free at the end", p.NumFree(), 0)
			s := p.Stats()
			want := PrefixCacheStats{Requests: 4, Queries: 55 + 53 + 54 + 160, Hits: 96, Evictions: 3}
			if s != want {
				t.Errorf("stats %+v, want %+v", s, want)
			}
			eq(t, "cached blocks", p.NumCachedBlocks(), 10)
		})
	}
}

func TestVLLMEvict(t *testing.T) { // test_evict
	for _, c := range []struct {
		order          FreeOrder
		after0, after1 []int32
		req2Block      int32
	}{
		{FreshToHead, []int32{6, 10, 5, 4, 3, 2, 1}, []int32{6, 10, 5, 4, 3, 2, 1, 9, 8, 7}, 6},
		{FreeToTail, []int32{10, 6, 5, 4, 3, 2, 1}, []int32{10, 6, 5, 4, 3, 2, 1, 9, 8, 7}, 10},
	} {
		t.Run(c.order.String(), func(t *testing.T) {
			m := fullManager(t, 11, 16, c.order)
			last := 5*16 + 7
			r0 := newVreq(m, 0, span(0, last))
			_, b0, _ := schedule(t, m, r0, last)
			eq(t, "req0 blocks", len(b0[0]), 6)
			r1 := newVreq(m, 1, span(last, last+48))
			hit, b1, _ := schedule(t, m, r1, 48)
			eq(t, "req1 hit", hit, 0)
			eq(t, "req1 blocks", len(b1[0]), 3)
			eq(t, "free", m.Pool.NumFree(), 1)
			free(t, m, r0)
			eq(t, "after freeing req0", m.Pool.FreeQueue(), c.after0)
			free(t, m, r1)
			eq(t, "after freeing req1", m.Pool.FreeQueue(), c.after1)

			r2 := newVreq(m, 2, span(0, 2*16+3))
			hit, b2, _ := schedule(t, m, r2, 3)
			eq(t, "req2 hit", hit, 32)
			eq(t, "req2 hit blocks", r2.t.Blocks[0][:2], []int32{1, 2})
			eq(t, "req2 new block", b2, [][]int32{{c.req2Block}})
			eq(t, "free after req2", m.Pool.NumFree(), 7)
		})
	}
}

func TestVLLMHashBlockCorrectReuse(t *testing.T) { // test_hash_block_correct_reuse
	m := fullManager(t, 2, 16, FreshToHead)
	r0 := newVreq(m, 0, span(0, 16))
	_, b, _ := schedule(t, m, r0, 16)
	eq(t, "blocks", b, [][]int32{{1}})
	if !m.Pool.Record(1).Cached {
		t.Fatal("a full block was not cached")
	}
	free(t, m, r0)
	r1 := newVreq(m, 1, span(0, 15))
	hit, b, _ := schedule(t, m, r1, 15)
	eq(t, "hit", hit, 0)
	eq(t, "blocks", b, [][]int32{{1}})
	if r := m.Pool.Record(1); r.Cached || r.Hash != 0 || r.Writer != 1 {
		t.Errorf("reused block keeps its old hash: %+v", r)
	}
	eq(t, "evictions", m.Pool.Stats().Evictions, int64(1))
}

func TestVLLMComputedBlocksNotEvicted(t *testing.T) { // test_computed_blocks_not_evicted
	for _, order := range []FreeOrder{FreeToTail, FreshToHead} {
		m := fullManager(t, 3, 16, order)
		r0 := newVreq(m, 0, span(0, 16))
		_, b, _ := schedule(t, m, r0, 16)
		eq(t, "req0", b, [][]int32{{1}})
		r1 := newVreq(m, 1, span(16, 32))
		_, b, _ = schedule(t, m, r1, 16)
		eq(t, "req1", b, [][]int32{{2}})
		free(t, m, r0)
		free(t, m, r1)
		r2 := newVreq(m, 2, span(0, 32))
		hit, b, _ := schedule(t, m, r2, 16)
		eq(t, "req2 hit", hit, 16)
		eq(t, "req2 hit block", r2.t.Blocks[0][0], int32(1))
		// The other cached block is evicted, not the one just hit.
		eq(t, "req2 new block", b, [][]int32{{2}})
	}
}

func TestVLLMCacheBlocksMultiGroup(t *testing.T) { // test_cache_blocks_multi_group
	p := NewBlockPoolWith(10, PoolOptions{EnablePrefixCaching: true})
	hashes := AppendBlockHashes(nil, span(0, 14), 4)
	eq(t, "hashes", len(hashes), 3)
	g0, g1 := make([]int32, 2), make([]int32, 3)
	if err := p.GetNewBlocks(0, 0, g0); err != nil {
		t.Fatal(err)
	}
	if err := p.GetNewBlocks(0, 1, g1); err != nil {
		t.Fatal(err)
	}
	if err := p.CacheFullBlocks(0, 0, g0, hashes, 0, 2, 4); err != nil {
		t.Fatal(err)
	}
	eq(t, "cached", p.NumCachedBlocks(), 2)
	if err := p.CacheFullBlocks(0, 1, g1, hashes, 0, 3, 4); err != nil {
		t.Fatal(err)
	}
	eq(t, "cached", p.NumCachedBlocks(), 5)
	dst := make([]int32, 2)
	for _, c := range []struct {
		i      int
		groups []int32
		hit    bool
	}{
		{0, []int32{0}, true}, {1, []int32{0}, true}, {2, []int32{0}, false},
		{0, []int32{1}, true}, {1, []int32{1}, true}, {2, []int32{1}, true},
		{0, []int32{0, 1}, true}, {1, []int32{0, 1}, true}, {2, []int32{0, 1}, false},
	} {
		if got := p.GetCachedBlock(hashes, c.i, c.groups, dst); got != c.hit {
			t.Errorf("hash %d in groups %v: hit %v, want %v", c.i, c.groups, got, c.hit)
		}
	}
	if !p.GetCachedBlock(hashes, 1, []int32{0, 1}, dst) || !slices.Equal(dst, []int32{g0[1], g1[1]}) {
		t.Errorf("blocks of hash 1: %v, want %v", dst, []int32{g0[1], g1[1]})
	}
}

// test_prefill_not_enough_free_blocks_with_computed_blocks: a request that
// cannot be allocated leaves its hit blocks' references alone.
func TestVLLMNotEnoughFreeBlocksWithComputedBlocks(t *testing.T) {
	m := fullManager(t, 11, 16, FreshToHead)
	c := common3()
	r0 := newVreq(m, 0, c)
	schedule(t, m, r0, 48)
	part0 := slices.Clone(r0.t.Blocks[0])
	r1 := newVreq(m, 1, cat(c, c))
	hit, _, _ := schedule(t, m, r1, 48)
	eq(t, "req1 hit", hit, 48)
	eq(t, "req1 hit blocks", r1.t.Blocks[0][:3], part0)
	part1 := slices.Clone(r1.t.Blocks[0])
	free(t, m, r1)
	refs := func() []int32 {
		var out []int32
		for _, b := range part1 {
			out = append(out, int32(m.Pool.RefCount(b)))
		}
		return out
	}
	eq(t, "refs after freeing req1", refs(), []int32{1, 1, 1, 0, 0, 0})
	r2 := newVreq(m, 2, rep(7, 32))
	schedule(t, m, r2, 32)
	eq(t, "free", m.Pool.NumFree(), 5)
	r3 := newVreq(m, 3, cat(c, c, c))
	hit, _, ok := schedule(t, m, r3, 48)
	eq(t, "req3 hit", hit, 96)
	if ok {
		t.Fatal("req3 needs 3 new + 3 evictable hit blocks of 5 free, and was allocated")
	}
	eq(t, "refs after the failed allocation", refs(), []int32{1, 1, 1, 0, 0, 0})
	eq(t, "req3's table", len(r3.t.Blocks[0]), 0)
	eq(t, "free after the failed allocation", m.Pool.NumFree(), 5)
}

func TestVLLMResetPrefixCache(t *testing.T) { // test_reset_prefix_cache
	m := fullManager(t, 11, 16, FreshToHead)
	r0 := newVreq(m, 0, cat(common3(), rep(3, 7)))
	_, b, _ := schedule(t, m, r0, 55)
	eq(t, "req0", b, [][]int32{{1, 2, 3, 4}})
	r1 := newVreq(m, 1, cat(common3(), rep(4, 7)))
	hit, b, _ := schedule(t, m, r1, 7)
	eq(t, "req1 hit", hit, 48)
	eq(t, "req1", b, [][]int32{{5}})
	if m.Pool.ResetPrefixCache() || m.Pool.NumCachedBlocks() == 0 {
		t.Fatal("reset with blocks held")
	}
	free(t, m, r0)
	free(t, m, r1)
	if !m.Pool.ResetPrefixCache() || m.Pool.NumCachedBlocks() != 0 {
		t.Fatal("reset failed with every block free")
	}
	for b := int32(1); b < 11; b++ {
		if r := m.Pool.Record(b); r.Cached || r.Hash != 0 {
			t.Errorf("block %d keeps a hash: %+v", b, r)
		}
	}
	if hit, _ := lookup(m, newVreq(m, 2, cat(common3(), rep(3, 7)))); hit != 0 {
		t.Errorf("hit %d after a reset", hit)
	}
}

// test_maybe_evict_cached_block: equal hashes are kept, not deduplicated;
// a lookup returns the first cached, and evicting it exposes the next.
func TestVLLMDuplicateHashes(t *testing.T) {
	p := NewBlockPoolWith(5, PoolOptions{EnablePrefixCaching: true})
	h := AppendBlockHashes(nil, span(0, 32), 16)
	a, b := make([]int32, 2), make([]int32, 2)
	p.GetNewBlocks(0, 0, a)
	p.GetNewBlocks(1, 0, b) // a request that skips the lookup (prompt logprobs) recomputes the prefix
	if err := p.CacheFullBlocks(0, 0, a, h, 0, 2, 16); err != nil {
		t.Fatal(err)
	}
	if err := p.CacheFullBlocks(1, 0, b, h, 0, 2, 16); err != nil {
		t.Fatal(err)
	}
	eq(t, "cached", p.NumCachedBlocks(), 4)
	got := make([]int32, 1)
	g0 := []int32{0}
	for _, step := range []struct {
		evict int32
		want  int32 // block found for hash 0; 0 = miss
	}{{0, a[0]}, {a[0], b[0]}, {b[0], 0}} {
		if step.evict != 0 {
			p.pc.uncache(step.evict)
		}
		ok := p.GetCachedBlock(h, 0, g0, got)
		if (step.want == 0) == ok || ok && got[0] != step.want {
			t.Errorf("after evicting %d: found %v %d, want %d", step.evict, ok, got[0], step.want)
		}
	}
	if !p.GetCachedBlock(h, 1, g0, got) || got[0] != a[1] {
		t.Errorf("hash 1: %d, want %d", got[0], a[1])
	}
}

// TestVLLMPrefillHybridModel is test_prefill_hybrid_model: one full
// attention group and two sliding-window groups (window 2 blocks); a hit
// must hold in all three, and evicting chosen hashes cuts it as vLLM's
// _test_partial_request_hit cases expect.
func TestVLLMPrefillHybridModel(t *testing.T) {
	m := hybridManager(t, 21, FreshToHead,
		HitGroup{SlidingWindow{16, 32}, []int32{1, 2}}, // given out of order: full attention is looked up first anyway
		HitGroup{FullAttention{16}, []int32{0}})
	p := m.Pool
	all := cat(common3(), rep(3, 7))
	r0 := newVreq(m, 0, all)
	hit, b, _ := schedule(t, m, r0, 55)
	eq(t, "req0 hit", hit, 0)
	eq(t, "req0 blocks", b, [][]int32{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}})
	for i, ids := range [][]int32{{1, 5, 9}, {2, 6, 10}, {3, 7, 11}} {
		for g, id := range ids {
			if err := p.Record(id).Serves(int32(g), r0.hashes[i], (i+1)*16); err != nil {
				t.Errorf("block %d: %v", id, err)
			}
		}
	}
	r1 := newVreq(m, 1, cat(common3(), rep(3, 5)))
	hit, ids := lookup(m, r1)
	eq(t, "req1 hit", hit, 48)
	eq(t, "req1 hit blocks", ids, [][]int32{{1, 2, 3}, {0, 6, 7}, {0, 10, 11}})
	ok, err := m.AllocateSlots(1, &r1.t, 0, hit, 53-48, 53, r1.hashes)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	eq(t, "req1 new blocks", [][]int32{r1.t.Blocks[0][3:], r1.t.Blocks[1][3:], r1.t.Blocks[2][3:]}, [][]int32{{13}, {14}, {15}})
	for _, id := range []int32{1, 2, 3, 6, 7, 10, 11} {
		eq(t, "shared ref", p.RefCount(id), 2)
	}
	free(t, m, r0)
	free(t, m, r1)
	eq(t, "all free", p.NumFree(), 20)

	for _, c := range prefillHybridEvictions(r1.hashes) {
		withEvicted(p, c.evict, func() {
			r := newVreq(m, 9, all)
			hit, ids := lookup(m, r)
			if hit != c.want*16 {
				t.Errorf("%s: hit %d tokens, want %d", c.name, hit, c.want*16)
			}
			for g, bs := range ids {
				if len(bs) != hit/16 {
					t.Errorf("%s: group %d has %d hit blocks for a %d-token hit", c.name, g, len(bs), hit)
				}
			}
		})
	}
}

// evictCase is one of test_prefill_hybrid_model's evictions (full
// attention in group 0, windows of 2 blocks in groups 1 and 2, three
// cached blocks): the keys taken out and the hit left, in blocks.
type evictCase struct {
	name  string
	evict []BlockKey
	want  int
}

func prefillHybridEvictions(hashes []BlockHash) []evictCase {
	k := func(i int, g int32) BlockKey { return keyAt(hashes, i, g) }
	return []evictCase{
		{"outside the window", []BlockKey{k(0, 1), k(0, 2)}, 3},
		{"first full-attention block", []BlockKey{k(0, 0)}, 0},
		{"last block everywhere", []BlockKey{k(2, 0), k(2, 1), k(2, 2)}, 2},
		{"last full-attention block", []BlockKey{k(2, 0)}, 2},
		{"last window block of group 1", []BlockKey{k(2, 1)}, 2},
		{"last window block of group 2", []BlockKey{k(2, 2)}, 2},
		// Full attention can serve 1... 2 blocks, the window none ending
		// there: the two disagree, a miss.
		{"different blocks per kind", []BlockKey{k(2, 0), k(0, 1), k(0, 2)}, 0},
	}
}

// withEvicted runs f with keys out of p's table, as vLLM's tests pop
// them from cached_block_hash_to_block, then puts them back.
func withEvicted(p *BlockPool, keys []BlockKey, f func()) {
	saved := make([]int32, len(keys))
	for i, k := range keys {
		saved[i] = p.pc.table.lookup(k)
		p.pc.table.del(k)
	}
	f()
	for i, k := range keys {
		p.pc.table.put(k, saved[i])
	}
}

// Hit lengths are cut to the coordinator's alignment and by max length.
func TestFullAttentionHitLimits(t *testing.T) {
	m := fullManager(t, 11, 16, FreshToHead)
	r0 := newVreq(m, 0, span(0, 64))
	schedule(t, m, r0, 64)
	for _, c := range []struct{ tokens, want int }{
		{64, 48}, // the last token is always recomputed
		{65, 64},
		{47, 32},
		{16, 0},
		{0, 0},
	} {
		r := newVreq(m, 1, span(0, c.tokens))
		if hit := m.GetComputedBlocks(c.tokens, r.hashes, false); hit != c.want {
			t.Errorf("%d-token request: hit %d, want %d", c.tokens, hit, c.want)
		}
	}
	dst := [][]int32{nil}
	if n := (FullAttention{16}).FindLongestCacheHit(m.Pool, r0.hashes, 64, 32, []int32{0}, dst); n != 4 {
		t.Errorf("aligned to 32: %d blocks, want 4", n)
	}
	if n := (FullAttention{16}).FindLongestCacheHit(m.Pool, r0.hashes, 63, 32, []int32{0}, dst); n != 2 || len(dst[0]) != 2 {
		t.Errorf("aligned to 32 under 63 tokens: %d blocks (%v), want 2", n, dst[0])
	}
}
