package statecache

// The hybrid coordinator over KV cache groups of different block sizes
// (NewHybridCoordinatorAt), against vLLM's cases @ 6adad0876
// (tests/v1/core/test_prefix_caching.py and
// tests/v1/core/prefix_cache/test_partial_prefix_cache_hits.py): the same
// layouts and inputs, and the hit lengths and block counts vLLM asserts.
// The sliding-window cases of test_prefix_caching.py run through the
// coordinator in sliding_window_test.go (swHarness.lookup).

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func coordAt(t *testing.T, numGroups, hashBlock int, rules ...HitGroup) *HybridCoordinator {
	t.Helper()
	c, err := NewHybridCoordinatorAt(numGroups, hashBlock, rules)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drafterLayout is test_hybrid_sliding_window_group_disables_partial_hash_hits'
// layout: hashes of 2, full attention at 2 (group 0), a Mamba align group
// at 8 (group 1), an EAGLE drafter's window group at 4, window 4 (group
// 2), the window's rule before the Mamba group's when windowFirst; EAGLE
// on for the rules holding flagged (every rule when none).
func drafterLayout(t *testing.T, windowFirst bool, flagged ...int32) (*BlockPool, *SlidingWindowManager, *HybridCoordinator) {
	t.Helper()
	const hb, swBS, mambaBS = 2, 4, 8
	p := cachingPool(64, FreshToHead)
	sw := swManager(t, p, SlidingWindowSpec{BlockSize: swBS, Window: swBS, HashBlockSize: hb, SchedulerBlockSize: mambaBS, Eagle: true}, 2)
	rules := []HitGroup{{FullAttention{hb}, []int32{0}}, {MambaHit{MambaAlign, mambaBS}, []int32{1}}, {SlidingWindowHit{sw}, []int32{2}}}
	if windowFirst {
		rules[1], rules[2] = rules[2], rules[1]
	}
	c := coordAt(t, 3, hb, rules...)
	if err := c.EnableEagle(EagleMambaUnmargined, flagged...); err != nil {
		t.Fatal(err)
	}
	return p, sw, c
}

// test_prefill_hybrid_model_combinations: block 16, the 14 distinct layouts
// (two of its 15 cases name the same list) of
// full, sliding-window (window 32 or 64) and Mamba groups. Request 0
// (three full blocks and 7 tokens, all computed) leaves the three blocks
// cached in every group (one block size: the window's mask keeps every
// block, and vLLM's Mamba group there caches every block); request 1
// (the three blocks and 5 other tokens) hits 48 tokens in every group,
// each group's part three positions long, null where its rule does not
// need the block.
func TestVLLMPrefillHybridModelCombinations(t *testing.T) {
	const bs = 16
	for _, layout := range [][]string{
		{"full", "sliding_window"},
		{"full", "mamba"},
		{"sliding_window", "mamba"},
		{"sliding_window", "sliding_window_large"},
		{"full", "sliding_window", "sliding_window"},
		{"full", "mamba", "mamba"},
		{"full", "sliding_window", "mamba"},
		{"full", "sliding_window", "sliding_window_large"},
		{"full", "full", "sliding_window"},
		{"full", "full", "mamba"},
		{"full", "sliding_window", "full", "sliding_window_large"},
		{"full", "mamba", "full", "mamba"},
		{"sliding_window", "mamba", "sliding_window_large", "mamba"},
		{"full", "full", "sliding_window", "mamba"},
	} {
		p := cachingPool(10*len(layout)+1, FreshToHead)
		// verify_and_split_kv_cache_groups: equal specs share one rule.
		byType := map[string][]int32{}
		var order []string
		for g, typ := range layout {
			if byType[typ] == nil {
				order = append(order, typ)
			}
			byType[typ] = append(byType[typ], int32(g))
		}
		var rules []HitGroup
		for _, typ := range order {
			var rule HitRule
			switch typ {
			case "full":
				rule = FullAttention{bs}
			case "sliding_window", "sliding_window_large":
				window := 2 * bs
				if typ == "sliding_window_large" {
					window = 4 * bs
				}
				rule = SlidingWindowHit{swManager(t, p, SlidingWindowSpec{BlockSize: bs, Window: window}, byType[typ][0])}
			case "mamba":
				rule = MambaHit{MambaAll, bs}
			}
			rules = append(rules, HitGroup{rule, byType[typ]})
		}
		c := coordAt(t, len(layout), bs, rules...)
		hashes := AppendBlockHashes(nil, cat(common3(), rep(3, 7)), bs)
		blocks := make([][]int32, len(layout))
		for g := range layout {
			blocks[g] = cachePositions(t, p, int32(g), hashes, []bool{true, true, true}, bs)
		}
		req1 := AppendBlockHashes(nil, cat(common3(), rep(4, 5)), bs)
		hit := c.FindLongestCacheHit(p, req1, 3*bs+5-1)
		if hit != 3*bs {
			t.Errorf("%v: hit %d tokens, want 48", layout, hit)
		}
		for g, typ := range layout {
			got := c.HitBlocks(int32(g))
			want := blocks[g]
			switch typ {
			case "sliding_window": // ⌈31/16⌉ = 2 blocks before the end
				want = []int32{NullBlock, blocks[g][1], blocks[g][2]}
			case "mamba": // the state at the end
				want = []int32{NullBlock, NullBlock, blocks[g][2]}
			}
			eq(t, fmt.Sprintf("%v: group %d (%s) hit blocks", layout, g, typ), got, want)
		}
	}
}

// test_prefill_hybrid_model_combinations_eagle: full and sliding window
// (window 32), block 16, use_eagle with no group flagged (every group
// drops): four cached blocks give a hit of three in each group.
func TestVLLMPrefillHybridModelCombinationsEagle(t *testing.T) {
	const bs = 16
	p := cachingPool(21, FreshToHead)
	sw := swManager(t, p, SlidingWindowSpec{BlockSize: bs, Window: 2 * bs, Eagle: true}, 1)
	c := coordAt(t, 2, bs, HitGroup{FullAttention{bs}, []int32{0}}, HitGroup{SlidingWindowHit{sw}, []int32{1}})
	if err := c.EnableEagle(EagleMambaUnmargined); err != nil {
		t.Fatal(err)
	}
	common := runs(4, bs)
	hashes := AppendBlockHashes(nil, cat(common, rep(4, 7)), bs)
	for g := range int32(2) {
		cachePositions(t, p, g, hashes, []bool{true, true, true, true}, bs)
	}
	req1 := AppendBlockHashes(nil, cat(common, rep(6, 5)), bs)
	eq(t, "eagle hit", c.FindLongestCacheHit(p, req1, 4*bs+5-1), 3*bs)
	eq(t, "full blocks", len(c.HitBlocks(0)), 3)
	eq(t, "window blocks", len(c.HitBlocks(1)), 3)
}

// test_hybrid_sliding_window_group_disables_partial_hash_hits
// (test_partial_prefix_cache_hits.py): hashes of 2 tokens, full attention
// at 2, a Mamba align group at 8, an EAGLE drafter's window group (window
// 4) at 4. The window manager cannot look up at the hash block, so
// fine-grained hits are off and the hit aligns to lcm 8. A 12-token
// request computed in two steps (8, then 4) and freed; the same tokens
// and 2 more hit 8 tokens, four full-attention blocks.
func TestVLLMHybridSlidingWindowDisablesPartialHashHits(t *testing.T) {
	const hb, swBS, mambaBS = 2, 4, 8
	// The drafter's group alone is is_eagle_group.
	p, sw, c := drafterLayout(t, false, 2)
	spec := sw.Spec
	if c.FineGrained() || c.Alignment() != mambaBS {
		t.Fatalf("fine-grained %v, alignment %d: want off and 8", c.FineGrained(), c.Alignment())
	}
	tokens := span(0, 12)
	hashes := AppendBlockHashes(nil, tokens, hb)
	// The request's two steps as cache_blocks leaves them: every group
	// caches up to the scheduler block (8 tokens) after each, the EAGLE
	// window group one of its blocks past it (HybridCacheTokens).
	var tb SlidingWindowTable
	for _, computed := range []int{8, 12} {
		if _, err := sw.AllocateNewBlocks(0, &tb, computed); err != nil {
			t.Fatal(err)
		}
		if err := sw.CacheBlocks(0, &tb, spec.HybridCacheTokens(computed, false), hashes); err != nil {
			t.Fatal(err)
		}
	}
	cachePositions(t, p, 0, hashes[:4], []bool{true, true, true, true}, hb)
	cachePositions(t, p, 1, BlockHashesAt(nil, hashes, hb, mambaBS), []bool{true}, mambaBS)
	if err := sw.Free(0, &tb); err != nil {
		t.Fatal(err)
	}
	eq(t, "window positions cached", fmt.Sprint(swCached(p, BlockHashesAt(nil, hashes, hb, swBS), 2)), fmt.Sprint([]int{0, 1, 2}))

	req1 := AppendBlockHashes(nil, append(span(0, 12), 12, 13), hb)
	hit := c.FindLongestCacheHit(p, req1, 14-1)
	eq(t, "hit", hit, mambaBS)
	eq(t, "full-attention blocks", len(c.HitBlocks(0))*hb, hit)
	// What follows from the rules (vLLM asserts the two lines above): the
	// Mamba state at 8, the window's blocks 0 and 1 after its drop.
	eq(t, "mamba blocks", len(c.HitBlocks(1)), 1)
	eq(t, "window blocks", len(c.HitBlocks(2)), 2)
}

// The layouts of test_partial_prefix_cache_hits.py whose hits need cached
// partial tails: the coordinator's alignment and which Mamba rule the
// one-hash-unit EAGLE drop goes with.
func TestCoordinatorFineGrainedLayouts(t *testing.T) {
	// test_hybrid_partial_hash_truncates_full_attention_hit_length: full
	// and Mamba align at 4, hashes of 2: fine-grained, alignment 2.
	c := coordAt(t, 2, 2, HitGroup{FullAttention{4}, []int32{0}}, HitGroup{MambaHit{MambaAlign, 4}, []int32{1}})
	if !c.FineGrained() || c.Alignment() != 2 {
		t.Errorf("fine-grained %v, alignment %d: want on and 2", c.FineGrained(), c.Alignment())
	}
	// The one-hash-unit drop comes with #46384's Mamba rule; an older
	// rule cannot meet fine-grained hits.
	if err := c.EnableEagle(EagleMambaIgnored); err == nil {
		t.Error("EAGLE with the pre-#46384 Mamba rule accepted with fine-grained hits")
	}
	if err := c.EnableEagle(EagleMambaUnmargined); err != nil {
		t.Errorf("EAGLE with #46384's Mamba rule: %v", err)
	}
	// Mamba in all mode, or a window group at the hash block: #51843's
	// rule keeps hits fine only with the latter.
	c = coordAt(t, 2, 2, HitGroup{FullAttention{4}, []int32{0}}, HitGroup{MambaHit{MambaAll, 4}, []int32{1}})
	eq(t, "all mode: alignment", c.Alignment(), 4)
	p := cachingPool(8, FreshToHead)
	sw := swManager(t, p, SlidingWindowSpec{BlockSize: 2, Window: 4, HashBlockSize: 2, SchedulerBlockSize: 4, HitAlignment: 2}, 2)
	c = coordAt(t, 3, 2, HitGroup{FullAttention{4}, []int32{0}}, HitGroup{MambaHit{MambaAlign, 4}, []int32{1}}, HitGroup{SlidingWindowHit{sw}, []int32{2}})
	eq(t, "window at the hash block: fine-grained", c.FineGrained(), true)
	// A window whose block the alignment does not divide is refused, as
	// SlidingWindowManager asserts; so is a spec naming other sizes.
	sw4 := swManager(t, p, SlidingWindowSpec{BlockSize: 4, Window: 4, HashBlockSize: 2, SchedulerBlockSize: 4}, 1)
	for _, bad := range [][]HitGroup{
		{{FullAttention{2}, []int32{0}}, {SlidingWindowHit{sw4}, []int32{1}}, {MambaHit{MambaAlign, 8}, []int32{2}}},
		{{FullAttention{8}, []int32{0}}, {SlidingWindowHit{sw4}, []int32{1}}},
		{{FullAttention{3}, []int32{0}}, {SlidingWindowHit{sw4}, []int32{1}}},
	} {
		if _, err := NewHybridCoordinatorAt(len(bad), 2, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{4}, []int32{0}}, {SlidingWindowHit{sw}, []int32{1}}}); err == nil {
		t.Error("the one-size constructor took two block sizes")
	}
}

// acceptsAt is each rule's acceptance of a hit of k tokens, from the
// rules' definitions over the hashes at hb: full attention needs every
// block of its size that k reaches into (within maxLen's whole blocks), the window the last ⌈(window−1)/block⌉ of
// its blocks (all when fewer; at least one), the Mamba state block
// k/block − 1.
func acceptsAt(p *BlockPool, hashes []BlockHash, hb int, r HitGroup, k, maxLen int) bool {
	bs := r.Rule.BlockSize()
	if k == 0 {
		return true
	}
	view := BlockHashesAt(nil, hashes, hb, bs)
	in := func(i int) bool { return i < len(view) && p.cachedAll(view, i, r.Groups) }
	n := k / bs
	if _, ok := r.Rule.(FullAttention); !ok && k%bs != 0 {
		return false
	}
	switch rule := r.Rule.(type) {
	case FullAttention:
		// Any length its blocks cover: with fine-grained hits a hit may
		// end inside a full-attention block (⌈k/block⌉ blocks), but its
		// lookup reads only the whole blocks within maxLen.
		if mambaCeilDiv(k, bs) > maxLen/bs {
			return false
		}
		for i := range mambaCeilDiv(k, bs) {
			if !in(i) {
				return false
			}
		}
		return true
	case SlidingWindowHit:
		// A window of 1 needs no block, but the scan still stops only
		// at a cached one.
		need := max(rule.Manager.Spec.ContiguousBlocksForHit(false), 1)
		for i := max(0, n-need); i < n; i++ {
			if !in(i) {
				return false
			}
		}
		return true
	case MambaHit:
		return in(n - 1)
	}
	panic(fmt.Sprintf("rule %T", r.Rule))
}

// Over random cache contents and layouts of three block sizes (full
// attention at 2, 3 or 4·hb, a window group at hb or 2·hb, a Mamba align
// group at 4·hb), the coordinator returns the longest hit, a multiple of
// the alignment, that every rule accepts, each group's blocks cached
// under its own view's hashes; and repeated lookups allocate nothing.
func TestCoordinatorDifferentBlockSizesFindsTheLongestCommonHit(t *testing.T) {
	const hb, nHash = 2, 24
	rng := rand.New(rand.NewPCG(5, 6))
	restarts, hits, fine := 0, 0, 0
	for trial := range 600 {
		p := cachingPool(4*nHash+1, FreshToHead)
		fullBS := hb * []int{2, 3, 4}[rng.IntN(3)]
		swBS := hb * []int{1, 2}[rng.IntN(2)]
		window := 1 + rng.IntN(3*swBS)
		rules := []HitGroup{{FullAttention{fullBS}, []int32{0}}}
		sched := lcm(fullBS, swBS)
		withMamba := rng.IntN(2) == 0
		if withMamba {
			sched = lcm(sched, 4*hb)
		}
		spec := SlidingWindowSpec{BlockSize: swBS, Window: window, HashBlockSize: hb, SchedulerBlockSize: sched}
		if withMamba && swBS == hb {
			spec.HitAlignment = hb // fine-grained hits
		}
		sw := swManager(t, p, spec, 1)
		rules = append(rules, HitGroup{SlidingWindowHit{sw}, []int32{1}})
		if withMamba {
			rules = append(rules, HitGroup{MambaHit{MambaAlign, 4 * hb}, []int32{2}})
		}
		c := coordAt(t, len(rules), hb, rules...)
		hashes := AppendBlockHashes(nil, span(trial*1000, trial*1000+nHash*hb), hb)
		density := 1 + rng.IntN(4)
		for _, r := range rules {
			bs := r.Rule.BlockSize()
			view := BlockHashesAt(nil, hashes, hb, bs)
			cached := make([]bool, len(view))
			for i := range cached {
				cached[i] = rng.IntN(4) < density
			}
			cachePositions(t, p, r.Groups[0], view, cached, bs)
		}
		maxLen := rng.IntN(nHash*hb + 1)
		want := 0
		for k := maxLen / c.Alignment() * c.Alignment(); k > 0; k -= c.Alignment() {
			all := true
			for _, r := range rules {
				all = all && acceptsAt(p, hashes, hb, r, k, maxLen)
			}
			if all {
				want = k
				break
			}
		}
		got := c.FindLongestCacheHit(p, hashes, maxLen)
		if got != want {
			t.Fatalf("trial %d (full %d, window %d in %d, mamba %v, align %d, max %d): hit %d tokens, want %d", trial, fullBS, window, swBS, withMamba, c.Alignment(), maxLen, got, want)
		}
		for _, r := range rules {
			bs := r.Rule.BlockSize()
			view := BlockHashesAt(nil, hashes, hb, bs)
			blocks := c.HitBlocks(r.Groups[0])
			if len(blocks) != mambaCeilDiv(want, bs) {
				t.Fatalf("trial %d: group %d has %d blocks of %d for a %d-token hit", trial, r.Groups[0], len(blocks), bs, want)
			}
			for i, b := range blocks {
				if b == NullBlock {
					continue
				}
				if err := p.Record(b).Serves(r.Groups[0], view[i], (i+1)*bs); err != nil {
					t.Fatalf("trial %d: group %d position %d: %v", trial, r.Groups[0], i, err)
				}
			}
		}
		if want > 0 {
			hits++
		}
		if c.FineGrained() {
			fine++
		}
		if c.rounds > 1 {
			restarts++
		}
		if trial%50 == 0 {
			if a := testing.AllocsPerRun(5, func() { c.FindLongestCacheHit(p, hashes, maxLen) }); a != 0 {
				t.Errorf("trial %d: %v allocations per lookup", trial, a)
			}
		}
	}
	t.Logf("%d hits, %d lookups restarted a round, %d fine-grained", hits, restarts, fine)
	if hits < 100 || restarts == 0 || fine == 0 {
		t.Errorf("%d hits, %d restarts, %d fine-grained: the search went untested", hits, restarts, fine)
	}
}

// The layout above with every group dropping (use_eagle, none flagged),
// full attention cached for 10 tokens: FullAttentionManager drops its
// last block before cutting to the alignment (10 → 8 → 8 tokens,
// single_type_kv_cache_manager.py @ 6adad0876), where cutting first would
// leave nothing (10 → 8 → 6 → 0). The Mamba group gets no margin
// (#46384) and the window keeps its drop: the hit is 8.
func TestCoordinatorFullAttentionDropsBeforeAligning(t *testing.T) {
	const hb, swBS, mambaBS = 2, 4, 8
	p, _, c := drafterLayout(t, false)
	hashes := AppendBlockHashes(nil, span(0, 14), hb)
	cachePositions(t, p, 0, hashes[:5], []bool{true, true, true, true, true}, hb)
	cachePositions(t, p, 1, BlockHashesAt(nil, hashes, hb, mambaBS), []bool{true}, mambaBS)
	cachePositions(t, p, 2, BlockHashesAt(nil, hashes, hb, swBS), []bool{true, true, true}, swBS)
	eq(t, "hit", c.FindLongestCacheHit(p, hashes, 13), 8)
	eq(t, "full attention's own hit", c.FirstRuleHit(), 8)
	eq(t, "blocks", fmt.Sprint(len(c.HitBlocks(0)), len(c.HitBlocks(1)), len(c.HitBlocks(2))), "4 1 2")
}

// eagle_verified (kv_cache_coordinator.py @ 6adad0876, #40860): a lookup
// without the drop that shortens the candidate makes the EAGLE groups
// drop again. Hashes of 2; full attention at 2 (cached throughout), the
// Mamba group at 8 (a state at 8 only), an EAGLE window group at 4
// (window 4) cached but for its blocks 2 and 7, looked up before the
// Mamba group (the rules' order). Round 1: full attention
// 24, the window (drop) 24, the Mamba group 8; round 2: the window drops
// again at 8, which needs its block 2: the hit is 0. Verified once and
// kept, the window would take 8 without the drop.
func TestCoordinatorEagleDropsAgainAfterAShorterCandidate(t *testing.T) {
	const hb, swBS, mambaBS = 2, 4, 8
	p, _, c := drafterLayout(t, true, 2)
	hashes := AppendBlockHashes(nil, span(0, 32), hb)
	all := make([]bool, 16)
	for i := range all {
		all[i] = true
	}
	cachePositions(t, p, 0, hashes, all, hb)
	cachePositions(t, p, 1, BlockHashesAt(nil, hashes, hb, mambaBS), []bool{true, false, false, false}, mambaBS)
	cachePositions(t, p, 2, BlockHashesAt(nil, hashes, hb, swBS), []bool{true, true, false, true, true, true, true, false}, swBS)
	eq(t, "hit", c.FindLongestCacheHit(p, hashes, 31), 0)
	eq(t, "full attention's first hit", c.FirstRuleHit(), 24)
}
