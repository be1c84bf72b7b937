package statecache

// Cases from vLLM's tests/v1/core/test_single_type_kv_cache_manager.py and
// the sliding-window cases of test_prefix_caching.py (@ 6adad0876): the
// same inputs and the block ids, hit lengths and cached positions vLLM
// asserts, for SlidingWindowManager. Where vLLM builds blocks outside the
// pool (KVCacheBlock(1000)), the case takes real blocks from the pool and
// maps the ids.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func swManager(t *testing.T, p *BlockPool, s SlidingWindowSpec, g int32) *SlidingWindowManager {
	t.Helper()
	m, err := NewSlidingWindowManager(p, s, g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cachingPool(n int, order FreeOrder) *BlockPool {
	return NewBlockPoolWith(n, PoolOptions{EnablePrefixCaching: true, FreeOrder: order, Groups: 3})
}

// cacheAt makes block b findable under hashes[i] in group g, as vLLM's
// tests insert into cached_block_hash_to_block directly (b stays free).
func cacheAt(p *BlockPool, b int32, hashes []BlockHash, i int, g int32) {
	r := &p.pc.rec[b]
	r.Group, r.Hash, r.Tokens = g, hashes[i], int32(i+1)
	k := keyAt(hashes, i, g)
	r.run = k.run
	p.pc.insert(b, k)
}

// test_sliding_window_possible_cached_prefix: block 2, window 4 (two
// contiguous blocks end a hit), block i+10 cached under hash i.
func TestVLLMSlidingWindowPossibleCachedPrefix(t *testing.T) {
	spec := SlidingWindowSpec{BlockSize: 2, Window: 4}
	T, F := true, false
	for _, c := range []struct {
		cached []bool
		want   int // blocks
	}{
		{[]bool{F, F, F, F, F, F, F, F, F, F}, 0},
		{[]bool{T}, 1},
		{[]bool{T, F}, 1},
		{[]bool{T, T}, 2},
		{[]bool{T, T, F}, 2},
		{[]bool{T, T, T}, 3},
		{[]bool{T, T, T, F}, 3},
		{[]bool{T, T, F, T, F, F, T, T, F, T, T, T}, 12},
		{[]bool{T, T, F, T, F, F, T, T, F, F, F}, 8},
		{[]bool{T, T, F, T, F, F, T, T, F, F, F, T}, 8},
	} {
		p := cachingPool(100, FreeToTail)
		m := swManager(t, p, spec, 0)
		hashes := make([]BlockHash, len(c.cached))
		for i := range hashes {
			hashes[i] = HashBlockContent(NoneHash, uint64(i)) // vLLM: BlockHash(str(i)), unchained
		}
		for i, ok := range c.cached {
			if ok {
				cacheAt(p, int32(i+10), hashes, i, 0)
			}
		}
		dst := make([][]int32, 1)
		hit := m.FindLongestCacheHit(hashes, len(hashes)*2, false, []int32{0}, dst)
		got := dst[0]
		if hit != c.want*2 || len(got) != c.want {
			t.Errorf("%v: hit %d tokens, %d blocks; want %d blocks", c.cached, hit, len(got), c.want)
			continue
		}
		for i, b := range got {
			want := int32(NullBlock)
			if i >= c.want-2 {
				want = int32(i + 10)
			}
			if b != want {
				t.Errorf("%v: position %d holds block %d, want %d", c.cached, i, b, want)
			}
		}
	}
}

// test_sliding_window_remove_skipped_blocks: block 2, window 4, a table
// of 11 blocks (vLLM's 1000..1010, here the pool's 1..11).
func TestVLLMSlidingWindowRemoveSkippedBlocks(t *testing.T) {
	for _, c := range []struct {
		order FreeOrder
		queue []int32 // the free queue at the end, vLLM ids
	}{
		// Each call's blocks go to the tail in the order freed, the
		// later block first: 1000; 1001; 1003, 1002.
		{FreeToTail, []int32{1000, 1001, 1003, 1002}},
		// Fresh (unhashed) blocks go to the head, each call's in order.
		{FreshToHead, []int32{1003, 1002, 1001, 1000}},
	} {
		p := cachingPool(12, c.order)
		m := swManager(t, p, SlidingWindowSpec{BlockSize: 2, Window: 4}, 0)
		var tb SlidingWindowTable
		if _, err := m.AllocateNewBlocks(7, &tb, 22); err != nil {
			t.Fatal(err)
		}
		vid := func(bs []int32) []int32 {
			out := make([]int32, len(bs))
			for i, b := range bs {
				if b != NullBlock {
					out[i] = b + 999
				}
			}
			return out
		}
		orig := vid(tb.Blocks)
		eq(t, "table", orig, span(1000, 1011))
		for _, s := range []struct {
			computed int
			nulls    int
		}{
			{0, 0},
			{4, 0}, // token 0 out of the window; block 1000 still holds token 1
			{5, 1}, // tokens 0, 1 out: block 1000 goes
			{6, 1}, // block 1001 still holds token 3
			{7, 2},
			{11, 4}, // tokens 0-7 out: 1003 then 1002
		} {
			if err := m.RemoveSkippedBlocks(7, &tb, s.computed); err != nil {
				t.Fatal(err)
			}
			want := slices.Concat(make([]int32, s.nulls), orig[s.nulls:])
			eq(t, fmt.Sprintf("%v: table at %d computed", c.order, s.computed), vid(tb.Blocks), want)
			eq(t, "held", tb.Held(), 11-s.nulls)
		}
		eq(t, fmt.Sprintf("%v: free queue", c.order), vid(p.FreeQueue()), c.queue)
	}
}

// test_get_num_blocks_to_allocate: a 40-token request whose hit is 10
// free blocks, or 5 nulls and 5 free blocks.
func TestVLLMSlidingWindowBlocksToAllocate(t *testing.T) {
	p := cachingPool(100, FreeToTail)
	m := swManager(t, p, SlidingWindowSpec{BlockSize: 2, Window: 4}, 0)
	hit1 := span(1, 11)
	hit2 := slices.Concat(make([]int32, 5), span(1, 6))
	var t1, t2 SlidingWindowTable
	eq(t, "hit of 10 free blocks", m.BlocksToAllocate(&t1, 40, 0, hit1, false), 20)
	eq(t, "hit of 5 nulls and 5 free blocks", m.BlocksToAllocate(&t2, 40, 0, hit2, false), 15)
}

// test_evictable_cached_blocks_not_double_allocated: a free block hit
// counts against the free blocks, but only the truly new block is popped.
func TestVLLMEvictableCachedBlocksNotDoubleAllocated(t *testing.T) {
	p := cachingPool(100, FreeToTail)
	m := swManager(t, p, SlidingWindowSpec{BlockSize: 2, Window: 4}, 0)
	var tb SlidingWindowTable
	hit := []int32{1} // ref_cnt 0: an eviction candidate
	eq(t, "to allocate", m.BlocksToAllocate(&tb, 4, 2, hit, false), 2)
	if err := m.AddHitBlocks(1, &tb, hit, 2); err != nil {
		t.Fatal(err)
	}
	nb, err := m.AllocateNewBlocks(1, &tb, 4)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "new blocks", nb, []int32{2})
	eq(t, "table", tb.Blocks, []int32{1, 2})
	eq(t, "free", p.NumFree(), 97)
}

// test_predictor_matches_allocator_blocks_calculation_with_admission_cap:
// block 2, window 8, cap 4; per step the prediction is what is popped.
func TestVLLMPredictorMatchesAllocator(t *testing.T) {
	p := cachingPool(100, FreeToTail)
	m := swManager(t, p, SlidingWindowSpec{BlockSize: 2, Window: 8, MaxAdmissionBlocks: 4}, 0)
	var tb SlidingWindowTable
	computed := 0
	for _, n := range []int{4, 8, 12, 16} {
		predicted := m.BlocksToAllocate(&tb, n, computed, nil, false)
		nb, err := m.AllocateNewBlocks(1, &tb, n)
		if err != nil {
			t.Fatal(err)
		}
		if predicted != len(nb) || predicted != 2 {
			t.Errorf("%d tokens: predicted %d, popped %d, want 2", n, predicted, len(nb))
		}
		computed = n
	}
	// The cap binds only the admission gate: a fresh request of 16 tokens
	// is held to 4 blocks there, 8 otherwise.
	var fresh SlidingWindowTable
	eq(t, "capped", m.BlocksToAllocate(&fresh, 16, 0, nil, true), 4)
	eq(t, "uncapped", m.BlocksToAllocate(&fresh, 16, 0, nil, false), 8)
}

// swHarness composes a full-attention group 0 (when fullBS > 0) and
// sliding-window groups of one spec as vLLM's KVCacheManager and the
// hybrid (or, without the full group, unitary) coordinator call them: the
// caller's side of SlidingWindowManager, for the cases of
// test_prefix_caching.py. Full attention allocates and caches as
// FullAttentionManager does, at its own block size over the hash view.
type swHarness struct {
	p      *BlockPool
	fullBS int
	sw     []*SlidingWindowManager
	groups []int32 // the sliding-window groups
	drop   bool    // the spec group's use_eagle
	// coord is the hybrid coordinator over the same groups (the window
	// groups flagged is_eagle_group under EAGLE): lookup returns its hit
	// and checks it against the hand-written simple-hybrid round.
	coord *HybridCoordinator
}

type swReq struct {
	id         RequestID
	tokens     []int32
	hashes     []BlockHash // at the hash block size
	full       []int32
	fullCached int
	sw         []SlidingWindowTable
	// The last lookup.
	hit     int
	fullHit []int32
	swHit   [][]int32
}

func newSWHarness(t *testing.T, numBlocks, fullBS int, spec SlidingWindowSpec, numSW int, eagle bool) *swHarness {
	h := &swHarness{p: NewBlockPoolWith(numBlocks, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead, Groups: 1 + numSW}), fullBS: fullBS, drop: eagle}
	spec.Eagle = eagle
	first := int32(0)
	if fullBS > 0 {
		first = 1
	}
	for i := range numSW {
		g := first + int32(i)
		h.sw = append(h.sw, swManager(t, h.p, spec, g))
		h.groups = append(h.groups, g)
	}
	var rules []HitGroup
	if fullBS > 0 {
		rules = append(rules, HitGroup{FullAttention{fullBS}, []int32{0}})
	}
	rules = append(rules, HitGroup{SlidingWindowHit{h.sw[0]}, h.groups})
	c, err := NewHybridCoordinatorAt(int(first)+numSW, spec.hashBlock(), rules)
	if err != nil {
		t.Fatal(err)
	}
	if eagle {
		if err := c.EnableEagle(EagleMambaIgnored, h.groups...); err != nil {
			t.Fatal(err)
		}
	}
	h.coord = c
	return h
}

func (h *swHarness) spec() SlidingWindowSpec { return h.sw[0].Spec }

func (h *swHarness) newReq(id RequestID, tokens []int32) *swReq {
	return &swReq{id: id, tokens: tokens, hashes: AppendBlockHashes(nil, tokens, h.spec().hashBlock()), sw: make([]SlidingWindowTable, len(h.sw))}
}

func (h *swHarness) fullView(r *swReq) []BlockHash {
	return BlockHashesAt(nil, r.hashes, h.spec().hashBlock(), h.fullBS)
}

// lookup is get_computed_blocks (at most num_tokens − 1 tokens) through
// the coordinator; it fails the test where the coordinator's hit differs
// from the hand-written round (lookupByHand).
func (h *swHarness) lookup(t *testing.T, r *swReq) int {
	t.Helper()
	want, wantFull, wantSW := h.lookupByHand(r)
	r.hit = h.coord.FindLongestCacheHit(h.p, r.hashes, len(r.tokens)-1)
	r.fullHit, r.swHit = nil, make([][]int32, len(h.groups))
	if h.fullBS > 0 {
		r.fullHit = slices.Clone(h.coord.HitBlocks(0))
	}
	for i, g := range h.groups {
		r.swHit[i] = slices.Clone(h.coord.HitBlocks(g))
	}
	if r.hit != want || !slices.Equal(r.fullHit, wantFull) || !slices.EqualFunc(r.swHit, wantSW, slices.Equal[[]int32]) {
		t.Errorf("request %d: coordinator hit %d tokens %v %v, by hand %d %v %v", r.id, r.hit, r.fullHit, r.swHit, want, wantFull, wantSW)
	}
	return r.hit
}

// lookupByHand is the simple hybrid's one round written out (full
// attention, then the window at the full hit with the EAGLE margin), or
// the unitary lookup.
func (h *swHarness) lookupByHand(r *swReq) (int, []int32, [][]int32) {
	maxLen := len(r.tokens) - 1
	cur := maxLen
	var fullHit []int32
	if h.fullBS > 0 {
		dst := [][]int32{nil}
		nb := FullAttention{h.fullBS}.FindLongestCacheHit(h.p, h.fullView(r), maxLen, h.spec().hitAlignment(), []int32{0}, dst)
		fullHit = dst[0]
		cur = nb * h.fullBS
	}
	ceiling := cur
	if h.drop && h.fullBS > 0 {
		ceiling = min(cur+h.spec().BlockSize, maxLen) // the coordinator's eagle margin
	}
	swHit := make([][]int32, len(h.groups))
	hit := h.sw[0].FindLongestCacheHit(r.hashes, ceiling, h.drop, h.groups, swHit)
	if h.fullBS > 0 {
		fullHit = fullHit[:mambaCeilDiv(hit, h.fullBS)]
	}
	return hit, fullHit, swHit
}

// allocate is allocate_slots for a new request after its lookup, numNew
// tokens past the hit: it returns the new blocks per group, or false.
func (h *swHarness) allocate(t *testing.T, r *swReq, numNew int) ([][]int32, bool) {
	t.Helper()
	total := r.hit
	need := 0
	for i, m := range h.sw {
		if err := m.RemoveSkippedBlocks(r.id, &r.sw[i], total); err != nil {
			t.Fatal(err)
		}
		need += m.BlocksToAllocate(&r.sw[i], total+numNew, total, r.swHit[i], false)
	}
	if h.fullBS > 0 {
		need += max(mambaCeilDiv(total+numNew, h.fullBS)-len(r.full)-len(r.fullHit), 0)
		for _, b := range r.fullHit {
			if h.p.RefCount(b) == 0 {
				need++
			}
		}
	}
	if need > h.p.NumFree() {
		return nil, false
	}
	anyHit := len(r.fullHit) > 0
	for _, hb := range r.swHit {
		anyHit = anyHit || len(hb) > 0
	}
	if anyHit {
		if h.fullBS > 0 {
			h.p.Touch(r.id, r.fullHit)
			r.full = append(r.full, r.fullHit...)
			r.fullCached = len(r.full)
		}
		for i, m := range h.sw {
			if err := m.AddHitBlocks(r.id, &r.sw[i], r.swHit[i], r.hit); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got [][]int32
	if h.fullBS > 0 {
		old := len(r.full)
		r.full = append(r.full, make([]int32, max(mambaCeilDiv(total+numNew, h.fullBS)-old, 0))...)
		if err := h.p.GetNewBlocks(r.id, 0, r.full[old:]); err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(r.full[old:]))
	}
	for i, m := range h.sw {
		nb, err := m.AllocateNewBlocks(r.id, &r.sw[i], total+numNew)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(nb))
	}
	n := min(total+numNew, len(r.tokens))
	if h.fullBS > 0 {
		sb := h.spec().schedBlock()
		if full := n / sb * sb / h.fullBS; full > r.fullCached {
			if err := h.p.CacheFullBlocks(r.id, 0, r.full, h.fullView(r), r.fullCached, full, h.fullBS); err != nil {
				t.Fatal(err)
			}
			r.fullCached = full
		}
	}
	for i, m := range h.sw {
		ct := n // the unitary coordinator caches what it is given
		if h.fullBS > 0 {
			ct = m.Spec.HybridCacheTokens(n, false)
		}
		if err := m.CacheBlocks(r.id, &r.sw[i], ct, r.hashes); err != nil {
			t.Fatal(err)
		}
	}
	return got, true
}

// prime looks a new request up and allocates numNew tokens past its hit.
func (h *swHarness) prime(t *testing.T, id RequestID, tokens []int32, numNew int) *swReq {
	t.Helper()
	r := h.newReq(id, tokens)
	h.lookup(t, r)
	if _, ok := h.allocate(t, r, numNew); !ok {
		t.Fatalf("request %d not allocated", id)
	}
	return r
}

// runs is n runs of size equal tokens: 0…0, 1…1, ….
func runs(n, size int) []int32 {
	var out []int32
	for i := range n {
		out = append(out, rep(int32(i), size)...)
	}
	return out
}

func (h *swHarness) free(t *testing.T, r *swReq) {
	t.Helper()
	for i, m := range h.sw {
		if err := m.Free(r.id, &r.sw[i]); err != nil {
			t.Fatal(err)
		}
	}
	if h.fullBS > 0 {
		bs := slices.Clone(r.full)
		slices.Reverse(bs)
		if err := h.p.FreeBlocks(r.id, bs); err != nil {
			t.Fatal(err)
		}
		r.full, r.fullCached = nil, 0
	}
}

// swCached lists the positions of hashes (at the hash block size) cached
// in group g.
func swCached(p *BlockPool, hashes []BlockHash, g int32) []int {
	var out []int
	for i := range hashes {
		var b [1]int32
		if p.GetCachedBlock(hashes, i, []int32{g}, b[:]) {
			out = append(out, i)
		}
	}
	return out
}

// test_prefill_hybrid_model: full attention and two sliding-window groups
// (window 32), block 16, 21 blocks. The window group's hit is null before
// the window; its new blocks and the eviction cases follow.
func TestVLLMPrefillHybridModelSlidingWindow(t *testing.T) {
	h := newSWHarness(t, 21, 16, SlidingWindowSpec{BlockSize: 16, Window: 32}, 2, false)
	all := cat(common3(), rep(3, 7))
	r0 := h.newReq(0, all)
	eq(t, "req0 hit", h.lookup(t, r0), 0)
	b, ok := h.allocate(t, r0, 55)
	if !ok {
		t.Fatal("req0 not allocated")
	}
	eq(t, "req0 blocks", b, [][]int32{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}})
	for i, ids := range [][]int32{{1, 5, 9}, {2, 6, 10}, {3, 7, 11}} {
		for g, id := range ids {
			if err := h.p.Record(id).Serves(int32(g), r0.hashes[i], (i+1)*16); err != nil {
				t.Errorf("block %d: %v", id, err)
			}
		}
	}
	for _, id := range []int32{4, 8, 12} {
		eq(t, "partial block cached", h.p.Record(id).Cached, false)
	}
	r1 := h.newReq(1, cat(common3(), rep(3, 5)))
	eq(t, "req1 hit", h.lookup(t, r1), 48)
	eq(t, "req1 hit blocks", [][]int32{r1.fullHit, r1.swHit[0], r1.swHit[1]}, [][]int32{{1, 2, 3}, {0, 6, 7}, {0, 10, 11}})
	b, ok = h.allocate(t, r1, 53-48)
	if !ok {
		t.Fatal("req1 not allocated")
	}
	eq(t, "req1 new blocks", b, [][]int32{{13}, {14}, {15}})
	for _, id := range []int32{1, 2, 3, 6, 7, 10, 11} {
		eq(t, "shared ref", h.p.RefCount(id), 2)
	}
	eq(t, "shared table entries", h.sw[0].SharedRefs()+h.sw[1].SharedRefs(), 4)
	h.free(t, r0)
	h.free(t, r1)
	eq(t, "all free", h.p.NumFree(), 20)
	eq(t, "no shared entries left", h.sw[0].SharedRefs()+h.sw[1].SharedRefs(), 0)

	for _, c := range prefillHybridEvictions(r1.hashes) {
		withEvicted(h.p, c.evict, func() {
			r := h.newReq(9, all)
			if hit := h.lookup(t, r); hit != c.want*16 {
				t.Errorf("%s: hit %d tokens, want %d", c.name, hit, c.want*16)
			}
			for _, hb := range append([][]int32{r.fullHit}, r.swHit...) {
				if len(hb) != c.want {
					t.Errorf("%s: %d hit blocks in a group, want %d", c.name, len(hb), c.want)
				}
			}
		})
	}
}

// test_different_block_size: full attention of 32-token blocks, a window
// of 32 tokens in 16-token blocks, hashes of 16; the hit agrees in tokens,
// a multiple of 32.
func TestVLLMDifferentBlockSize(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 16, Window: 32, HashBlockSize: 16, SchedulerBlockSize: 32}, 1, false)
	common := runs(10, 16)
	r0 := h.newReq(0, common)
	eq(t, "req0 hit", h.lookup(t, r0), 0)
	b, ok := h.allocate(t, r0, 7*16)
	if !ok {
		t.Fatal("req0 not allocated")
	}
	eq(t, "req0 blocks", b, [][]int32{{1, 2, 3, 4}, {5, 6, 7, 8, 9, 10, 11}})
	r1 := h.newReq(1, common[:7*16+1])
	eq(t, "req1 hit", h.lookup(t, r1), 6*16)
	eq(t, "req1 hit blocks", fmt.Sprint([]int{len(r1.fullHit), len(r1.swHit[0])}), fmt.Sprint([]int{3, 6}))
	r2 := h.newReq(2, common[:6*16+1])
	eq(t, "req2 hit", h.lookup(t, r2), 6*16)
	eq(t, "req2 hit blocks", fmt.Sprint([]int{len(r2.fullHit), len(r2.swHit[0])}), fmt.Sprint([]int{3, 6}))
	// The window's hit would be 5 blocks; the hit must be a multiple of 32.
	for _, i := range []int{6, 5} {
		h.p.pc.table.del(keyAt(r1.hashes, i, 1))
	}
	eq(t, "req1 hit after evicting", h.lookup(t, r1), 4*16)
	eq(t, "req1 hit blocks after evicting", fmt.Sprint([]int{len(r1.fullHit), len(r1.swHit[0])}), fmt.Sprint([]int{2, 4}))
}

// test_hybrid_cache_blocks_swa_tail_window_only: full 32, window 8 in
// blocks of 8: of each 32-token segment only the last window block can
// serve a hit, so only it is cached.
func TestVLLMHybridCacheBlocksSWATailWindowOnly(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 8, Window: 8, HashBlockSize: 8, SchedulerBlockSize: 32}, 1, false)
	tokens := runs(8, 8)
	r := h.prime(t, 0, tokens, 64)
	eq(t, "hashes", len(r.hashes), 8)
	eq(t, "cached window positions", fmt.Sprint(swCached(h.p, r.hashes, 1)), fmt.Sprint([]int{3, 7}))
}

// test_hybrid_cache_blocks_clamped_to_lcm: 112 tokens cache only the 96
// a 32-token-aligned hit can reach.
func TestVLLMHybridCacheBlocksClampedToLCM(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 16, Window: 32, HashBlockSize: 16, SchedulerBlockSize: 32}, 1, false)
	tokens := runs(7, 16)
	r := h.prime(t, 0, tokens, 7*16)
	eq(t, "cached window positions", fmt.Sprint(swCached(h.p, r.hashes, 1)), fmt.Sprint([]int{0, 1, 2, 3, 4, 5}))
}

// test_eagle_with_sliding_window: one sliding-window group (window 16,
// block 16) under EAGLE: two cached blocks hit one; with the first
// evicted, nothing.
func TestVLLMEagleWithSlidingWindow(t *testing.T) {
	h := newSWHarness(t, 10, 0, SlidingWindowSpec{BlockSize: 16, Window: 16}, 1, true)
	tokens := rep(0, 2*16+5)
	r := h.prime(t, 0, tokens, len(tokens))
	h.free(t, r)
	re := h.newReq(1, tokens)
	eq(t, "eagle hit", h.lookup(t, re), 16)
	eq(t, "eagle hit blocks", len(re.swHit[0]), 1)
	h.p.pc.table.del(keyAt(r.hashes, 0, 0))
	ra := h.newReq(2, tokens)
	eq(t, "hit after evicting the first block", h.lookup(t, ra), 0)
	eq(t, "blocks after evicting the first block", len(ra.swHit[0]), 0)
}

// test_eagle_swa_alignment_caches_extra_block: full 32, an EAGLE window of
// 8 in blocks of 8: the block past each segment's end is cached too, so
// an equal prompt hits (vLLM asserts > 0 and a multiple of 32; the scan
// gives 96: 127 tokens at most, full attention 3 blocks, the window's run
// [11, 12] with 12 dropped).
func TestVLLMEagleSWAAlignmentCachesExtraBlock(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 8, Window: 8, HashBlockSize: 8, SchedulerBlockSize: 32}, 1, true)
	tokens := runs(16, 8)
	r0 := h.prime(t, 0, tokens, len(tokens))
	eq(t, "cached window positions", fmt.Sprint(swCached(h.p, r0.hashes, 1)), fmt.Sprint([]int{3, 4, 7, 8, 11, 12, 15}))
	h.free(t, r0)
	r1 := h.newReq(1, tokens)
	hit := h.lookup(t, r1)
	if hit <= 0 || hit%32 != 0 || hit != 96 {
		t.Errorf("hit %d tokens, want 96", hit)
	}
}

// test_eagle_swa_boundary_caches_post_boundary_block: 40 computed tokens
// cache window blocks 3 (the segment's tail) and 4 (the EAGLE lookahead);
// a 41-token prompt then hits 32.
func TestVLLMEagleSWABoundaryCachesPostBoundaryBlock(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 8, Window: 8, HashBlockSize: 8, SchedulerBlockSize: 32}, 1, true)
	tokens := runs(5, 8)
	r0 := h.prime(t, 0, tokens, len(tokens))
	eq(t, "cached window positions", fmt.Sprint(swCached(h.p, r0.hashes, 1)), fmt.Sprint([]int{3, 4}))
	h.free(t, r0)
	r1 := h.newReq(1, append(slices.Clone(tokens), 999))
	eq(t, "hit", h.lookup(t, r1), 32)
}

// test_eagle_grouped_swa_siblings_use_same_cache_mask: two window groups
// of one spec, one flagged EAGLE: both cache the lookahead block, and a
// 73-token prompt hits 64.
func TestVLLMEagleGroupedSWASiblings(t *testing.T) {
	h := newSWHarness(t, 100, 32, SlidingWindowSpec{BlockSize: 8, Window: 8, HashBlockSize: 8, SchedulerBlockSize: 32}, 2, true)
	tokens := runs(9, 8)
	r0 := h.prime(t, 0, tokens, len(tokens))
	for _, i := range []int{4, 8} {
		var b [2]int32
		if !h.p.GetCachedBlock(r0.hashes, i, []int32{1, 2}, b[:]) {
			t.Errorf("hash %d not cached in both window groups", i)
		}
	}
	h.free(t, r0)
	r1 := h.newReq(1, append(slices.Clone(tokens), 999))
	eq(t, "hit", h.lookup(t, r1), 64)
}

// BlockHashListWithBlockSize's docstring: hashes A B C D of 16 tokens are
// B D at 32.
func TestBlockHashesAt(t *testing.T) {
	a, b, c, d := BlockHash(0xa), BlockHash(0xb), BlockHash(0xc), BlockHash(0xd)
	eq(t, "32 from 16", fmt.Sprint(BlockHashesAt(nil, []BlockHash{a, b, c, d}, 16, 32)), fmt.Sprint([]BlockHash{b, d}))
	eq(t, "partial large block", len(BlockHashesAt(nil, []BlockHash{a, b, c}, 16, 32)), 1)
	eq(t, "same size", len(BlockHashesAt(nil, []BlockHash{a, b, c}, 16, 16)), 3)
	// The chain makes the view the hashes of the larger blocks.
	tokens := span(0, 100)
	small := AppendBlockHashes(nil, tokens, 8)
	eq(t, "chained", fmt.Sprint(BlockHashesAt(nil, small, 8, 32)), fmt.Sprint([]BlockHash{small[3], small[7], small[11]}))
}

// get_num_skipped_tokens' docstring (window 4, 7 computed: 4 skipped),
// extra retained tokens, and the admission cap's worked example (block 4,
// 4 tokens need two blocks).
func TestSlidingWindowSpecArithmetic(t *testing.T) {
	s := SlidingWindowSpec{BlockSize: 4, Window: 4}
	eq(t, "skipped", s.NumSkippedTokens(7), 4)
	eq(t, "none skipped", s.NumSkippedTokens(3), 0)
	s.ExtraRetainedTokens = 2
	eq(t, "skipped with 2 retained", s.NumSkippedTokens(7), 2)
	// window 4: 3 tokens before the next plus 1 in flight = 4 tokens.
	eq(t, "admission", SlidingWindowSpec{BlockSize: 4, Window: 4}.MaxAdmission(1, 1000), 2)
	eq(t, "admission capped by max_model_len", SlidingWindowSpec{BlockSize: 4, Window: 100}.MaxAdmission(8, 16), 5)
	eq(t, "contiguous", SlidingWindowSpec{BlockSize: 16, Window: 33}.ContiguousBlocksForHit(false), 2)
	eq(t, "contiguous eagle", SlidingWindowSpec{BlockSize: 16, Window: 33}.ContiguousBlocksForHit(true), 3)
	eq(t, "hybrid cache tokens", SlidingWindowSpec{BlockSize: 8, Window: 8, SchedulerBlockSize: 32}.HybridCacheTokens(47, false), 32)
	eq(t, "hybrid cache tokens, eagle", SlidingWindowSpec{BlockSize: 8, Window: 8, SchedulerBlockSize: 32, Eagle: true}.HybridCacheTokens(47, false), 40)
	eq(t, "hybrid cache tokens, fine", SlidingWindowSpec{BlockSize: 8, Window: 8, SchedulerBlockSize: 32}.HybridCacheTokens(47, true), 47)
	for _, bad := range []SlidingWindowSpec{
		{BlockSize: 0, Window: 4},
		{BlockSize: 4, Window: 0},
		{BlockSize: 12, Window: 4, HashBlockSize: 8},
		{BlockSize: 8, Window: 4, SchedulerBlockSize: 12},
		{BlockSize: 8, Window: 4, SchedulerBlockSize: 32, HitAlignment: 4},
		{BlockSize: 8, Window: 4, ExtraRetainedTokens: -1},
	} {
		if _, err := NewSlidingWindowManager(NewBlockPoolWith(4, PoolOptions{}), bad, 0); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// With one block size and no EAGLE drop the manager's lookup is the hit
// rule the coordinator already runs (SlidingWindow, prefix_hit.go, ported
// from an older vLLM): both over random cache states, alignments and
// sibling groups.
func TestSlidingWindowLookupMatchesHitRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		bs := 1 + rng.IntN(4)
		window := 1 + rng.IntN(4*bs)
		align := bs * (1 + rng.IntN(3))
		groups := []int32{0, 1}[:1+rng.IntN(2)]
		n := rng.IntN(12)
		hashes := make([]BlockHash, n)
		for i := range hashes {
			hashes[i] = HashBlockContent(NoneHash, uint64(trial*100+i))
		}
		p := cachingPool(64, FreeToTail)
		next := int32(1)
		for i := range hashes {
			for _, g := range groups {
				if rng.IntN(3) > 0 {
					cacheAt(p, next, hashes, i, g)
					next++
				}
			}
		}
		m := swManager(t, p, SlidingWindowSpec{BlockSize: bs, Window: window, SchedulerBlockSize: align}, 0)
		maxLen := rng.IntN(n*bs + 1)
		got := make([][]int32, len(groups))
		want := make([][]int32, len(groups))
		hit := m.FindLongestCacheHit(hashes, maxLen, false, groups, got)
		ref := SlidingWindow{bs, window}.FindLongestCacheHit(p, hashes, maxLen, align, groups, want)
		if hit != ref*bs || !slices.EqualFunc(got, want, slices.Equal[[]int32]) {
			t.Fatalf("trial %d (block %d, window %d, align %d, max %d): manager %d tokens %v, rule %d blocks %v", trial, bs, window, align, maxLen, hit, got, ref, want)
		}
	}
}

// A request's life in a window group of 8-token blocks, window 16, hashes
// of 4, beside nothing else: blocks out of the window are freed as it
// decodes (held stays within the admission bound), freed blocks keep
// their hashes, and Free returns every block.
func TestSlidingWindowLifecycle(t *testing.T) {
	p := cachingPool(40, FreshToHead)
	spec := SlidingWindowSpec{BlockSize: 8, Window: 16, HashBlockSize: 4}
	m := swManager(t, p, spec, 0)
	tokens := span(0, 100)
	hashes := AppendBlockHashes(nil, tokens, 4)
	var tb SlidingWindowTable
	computed := 0
	bound := spec.MaxAdmission(8, 1000)
	for computed < len(tokens) {
		q := min(8, len(tokens)-computed)
		if err := m.RemoveSkippedBlocks(1, &tb, computed); err != nil {
			t.Fatal(err)
		}
		if need := m.BlocksToAllocate(&tb, computed+q, computed, nil, false); need > p.NumFree() {
			t.Fatalf("at %d: %d blocks needed, %d free", computed, need, p.NumFree())
		}
		if _, err := m.AllocateNewBlocks(1, &tb, computed+q); err != nil {
			t.Fatal(err)
		}
		if err := m.CacheBlocks(1, &tb, computed+q, hashes); err != nil {
			t.Fatal(err)
		}
		if tb.Held() > bound {
			t.Errorf("at %d: %d blocks held, bound %d", computed, tb.Held(), bound)
		}
		eq(t, "held is the table's real blocks", tb.Held(), len(tb.Blocks)-countNull(tb.Blocks))
		eq(t, "pool agrees", p.NumHeld(), tb.Held())
		computed += q
	}
	// 100 tokens: 13 positions, ⌊(100 − 16 + 1)/8⌋ = 10 nulls after the
	// last step's free (at 96 computed: ⌊81/8⌋ = 10).
	eq(t, "positions", len(tb.Blocks), 13)
	eq(t, "nulls", countNull(tb.Blocks), 10)
	eq(t, "cached", tb.NumCached(), 12)
	// A freed block keeps its hash: the 8-token block 0 is the 4-token
	// hash 1's.
	var b [1]int32
	if !p.GetCachedBlock(BlockHashesAt(nil, hashes, 4, 8), 0, []int32{0}, b[:]) {
		t.Error("block 0's hash gone after its free")
	} else if err := p.Record(b[0]).Serves(0, hashes[1], 8); err != nil {
		t.Error(err)
	}
	if err := m.Free(1, &tb); err != nil {
		t.Fatal(err)
	}
	eq(t, "all free", p.NumFree(), 39)
	eq(t, "table empty", len(tb.Blocks), 0)
}

func countNull(bs []int32) int {
	n := 0
	for _, b := range bs {
		if b == NullBlock {
			n++
		}
	}
	return n
}

// swSimReq is one request of TestSlidingWindowRandomLives.
type swSimReq struct {
	id       RequestID
	tokens   []int32
	hashes   []BlockHash
	computed int
	t        SlidingWindowTable
}

// swRandomLives drives one window group through random request lives
// (admission with a hit, chunked prefill, decode, finish) from seed,
// checking after every call what the manager must keep true, and returns
// a transcript of the pool's state.
func swRandomLives(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	order := []FreeOrder{FreeToTail, FreshToHead}[rng.IntN(2)]
	p := cachingPool(24+rng.IntN(40), order)
	eagle := rng.IntN(2) == 0
	spec := SlidingWindowSpec{BlockSize: 8, Window: []int{1, 5, 16, 24}[rng.IntN(4)], HashBlockSize: 4, Eagle: eagle}
	m := swManager(t, p, spec, 0)
	prefixes := [][]int32{span(0, 40), span(100, 164), span(200, 209)}
	var live []*swSimReq
	var next RequestID
	var log []byte
	check := func(what string) {
		t.Helper()
		held := 0
		for _, r := range live {
			seen := map[int32]bool{}
			n := 0
			for _, b := range r.t.Blocks {
				if b == NullBlock {
					continue
				}
				n++
				if seen[b] {
					t.Fatalf("seed %d, %s: request %d holds block %d twice", seed, what, r.id, b)
				}
				seen[b] = true
				if p.RefCount(b) < 1 {
					t.Fatalf("seed %d, %s: request %d's block %d has no reference", seed, what, r.id, b)
				}
			}
			if n != r.t.Held() {
				t.Fatalf("seed %d, %s: request %d holds %d blocks, counts %d", seed, what, r.id, n, r.t.Held())
			}
			held += n
		}
		if got := p.NumHeld(); got != held-m.SharedRefs() {
			t.Fatalf("seed %d, %s: pool holds %d, tables %d less %d shared", seed, what, got, held, m.SharedRefs())
		}
	}
	// schedule gives r q more tokens, as allocate_slots: false when the
	// pool is short.
	schedule := func(r *swSimReq, hit []int32, hitTokens, q int) bool {
		t.Helper()
		total := r.computed + hitTokens
		if err := m.RemoveSkippedBlocks(r.id, &r.t, total); err != nil {
			t.Fatal(err)
		}
		for i := range min(spec.NumSkippedTokens(total)/spec.BlockSize, len(r.t.Blocks)) {
			if r.t.Blocks[i] != NullBlock {
				t.Fatalf("seed %d: request %d keeps block %d at position %d, out of the window at %d tokens", seed, r.id, r.t.Blocks[i], i, total)
			}
		}
		need := m.BlocksToAllocate(&r.t, total+q, total, hit, false)
		if need > p.NumFree() {
			return false
		}
		free := p.NumFree()
		if len(hit) > 0 {
			if err := m.AddHitBlocks(r.id, &r.t, hit, hitTokens); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.AllocateNewBlocks(r.id, &r.t, total+q); err != nil {
			t.Fatalf("seed %d: %d blocks counted, %d free: %v", seed, need, free, err)
		}
		if used := free - p.NumFree(); used != need {
			t.Fatalf("seed %d: request %d counted %d blocks, used %d", seed, r.id, need, used)
		}
		r.computed = total + q
		if err := m.CacheBlocks(r.id, &r.t, min(r.computed, len(r.tokens)), r.hashes); err != nil {
			t.Fatal(err)
		}
		return true
	}
	for op := range 80 {
		switch k := rng.IntN(4); {
		case k == 0 || len(live) == 0: // admit
			r := &swSimReq{id: next, tokens: slices.Clone(prefixes[rng.IntN(len(prefixes))])}
			r.tokens = r.tokens[:1+rng.IntN(len(r.tokens))]
			for range rng.IntN(20) {
				r.tokens = append(r.tokens, int32(1000+rng.IntN(3)))
			}
			r.hashes = AppendBlockHashes(nil, r.tokens, 4)
			dst := make([][]int32, 1)
			hit := m.FindLongestCacheHit(r.hashes, len(r.tokens)-1, eagle, []int32{0}, dst)
			if hit%spec.BlockSize != 0 || hit > len(r.tokens)-1 || len(dst[0]) != hit/spec.BlockSize {
				t.Fatalf("seed %d: hit %d tokens in %d blocks for %d tokens", seed, hit, len(dst[0]), len(r.tokens))
			}
			view := BlockHashesAt(nil, r.hashes, 4, spec.BlockSize)
			for i, b := range dst[0] {
				if b == NullBlock {
					continue
				}
				if err := p.Record(b).Serves(0, view[i], (i+1)*spec.BlockSize); err != nil {
					t.Fatalf("seed %d: hit block %d at %d: %v", seed, b, i, err)
				}
			}
			q := 1 + rng.IntN(len(r.tokens)-hit)
			if schedule(r, dst[0], hit, q) {
				next++
				live = append(live, r)
				log = fmt.Appendf(log, "%d: admit %d hit %d q %d\n", op, r.id, hit, q)
			}
		case k == 1: // finish
			i := rng.IntN(len(live))
			if err := m.Free(live[i].id, &live[i].t); err != nil {
				t.Fatal(err)
			}
			log = fmt.Appendf(log, "%d: free %d\n", op, live[i].id)
			live = slices.Delete(live, i, i+1)
		default: // a chunk or a decode
			r := live[rng.IntN(len(live))]
			if r.computed == len(r.tokens) {
				r.tokens = append(r.tokens, int32(1000+rng.IntN(3)))
				r.hashes = AppendBlockHashes(r.hashes, r.tokens, 4)
			}
			q := 1 + rng.IntN(len(r.tokens)-r.computed)
			ok := schedule(r, nil, 0, q)
			log = fmt.Appendf(log, "%d: run %d q %d %v\n", op, r.id, q, ok)
		}
		check(fmt.Sprint("op ", op))
	}
	return fmt.Sprintf("%s%v %d", log, p.FreeQueue(), p.NumCachedBlocks())
}

// Random lives hold the manager to its counts (what BlocksToAllocate
// predicts is what is popped), the pool's conservation, the window's
// frees and the hit's records, and repeat exactly from their seed.
func TestSlidingWindowRandomLives(t *testing.T) {
	hits := 0
	for seed := range uint64(150) {
		a := swRandomLives(t, seed)
		if b := swRandomLives(t, seed); a != b {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if strings.Contains(a, "hit 8") || strings.Contains(a, "hit 16") || strings.Contains(a, "hit 24") {
			hits++
		}
	}
	t.Logf("%d seeds with a hit", hits)
	if hits < 20 {
		t.Errorf("only %d of 150 seeds had a hit", hits)
	}
}
