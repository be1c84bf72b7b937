package statecache

import (
	"testing"

	"statesim/model"
)

// fineHarness is a tiny-hybrid layout (1 attention + 3 Mamba groups) of
// 32-token blocks (unified from 16) with hashes of 4 (prefix_match_unit
// 4): fine-grained hits on.
type fineHarness struct {
	t    *testing.T
	m    *KVCacheManager
	step int64
}

func newFineHarness(t *testing.T, blocks int) *fineHarness {
	t.Helper()
	sh, _ := model.Preset("tiny-hybrid")
	l := sh.Layout(16)
	m, err := NewKVCacheManagerWith(&l, blocks, ManagerOptions{EnablePrefixCaching: true, MambaCacheMode: MambaAlign, HashBlockSize: 4, PartialHashHits: true})
	if err != nil {
		t.Fatal(err)
	}
	if !m.fine || m.blockSize != 32 {
		t.Fatalf("fine-grained hits %v, block %d: want on, 32", m.fine, m.blockSize)
	}
	return &fineHarness{t: t, m: m}
}

func (h *fineHarness) newStep() {
	h.step++
	h.m.Pool.NewStepStarts(h.step)
}

func tokensOf(n int, salt int32) []int32 {
	ts := make([]int32, n)
	for i := range ts {
		ts[i] = int32(i)*7 + salt
	}
	return ts
}

// conserved checks the tables' entries against the pool's held blocks
// and SharedRefs, pins included.
func (h *fineHarness) conserved(tables ...*BlockTable) {
	h.t.Helper()
	n := 0
	for _, t := range tables {
		n += t.countHeld()
	}
	if got := h.m.Pool.NumHeld() + h.m.SharedRefs(); got != n {
		h.t.Fatalf("step %d: pool holds %d, shared %d, tables name %d", h.step, h.m.Pool.NumHeld(), h.m.SharedRefs(), n)
	}
}

// TestFineGrainedPartialTailAndCopyOnWrite walks a producer that caches
// its prompt's partial tail and a consumer that hits it (the shape of
// test_partial_prefix_cache_hits.py's producer/consumer cases @
// 6adad0876): the producer's Mamba entry moves to a copy at its next
// allocation, the consumer's attention and Mamba blocks are private
// copies of the shared ones, and the pins hold both ends until the step
// that runs the copies is processed.
func TestFineGrainedPartialTailAndCopyOnWrite(t *testing.T) {
	h := newFineHarness(t, 64)
	m := h.m
	prompt := tokensOf(70, 1)
	ha := AppendBlockHashes(nil, prompt, 4)
	a := m.NewTable()
	a.NumPromptTokens = 70

	// Step 1: the producer's chunk ends at the prompt's last hash
	// boundary, 68 (the scheduler's tail stop).
	h.newStep()
	if hit := m.GetComputedBlocks(&a, ha, 70, false); hit != 0 {
		t.Fatalf("empty cache hit %d", hit)
	}
	if ok, err := m.AllocateSlots(1, &a, 0, 0, 68, 70, ha); !ok || err != nil {
		t.Fatalf("allocate: %v %v", ok, err)
	}
	attnTail := a.Attn[0][2]
	if got := m.Pool.CachedUnder(ha[16], m.PoolGroup(0)); got != attnTail {
		t.Errorf("attention partial entry at 68 tokens: block %d, want the producer's block %d", got, attnTail)
	}
	src := make([]int32, 3)
	for g := range src {
		mt := &a.MambaT[g]
		src[g] = mt.Blocks[2]
		if got := m.Pool.CachedUnder(ha[16], m.MambaPoolGroup(g)); got != src[g] {
			t.Errorf("mamba group %d partial entry: block %d, want the running block %d", g, got, src[g])
		}
		if mt.partial != 3 {
			t.Errorf("mamba group %d: partial %d, want position 2 (+1)", g, mt.partial)
		}
	}
	h.conserved(&a)
	if cs := m.TakeBlockCopies(h.step, nil); len(cs) != 0 {
		t.Fatalf("step 1 copies %v", cs)
	}

	// Step 2: the producer runs on; its Mamba entries move to copies.
	h.newStep()
	if ok, err := m.AllocateSlots(1, &a, 68, 0, 70, 70, ha); !ok || err != nil {
		t.Fatalf("allocate: %v %v", ok, err)
	}
	cs := m.TakeBlockCopies(h.step, nil)
	if len(cs) != 3 {
		t.Fatalf("step 2 copies %v, want one per Mamba group", cs)
	}
	for g := range 3 {
		c := cs[g]
		if c.Group != m.MambaPoolGroup(g) || c.Kind != CopyProducer || c.Src != src[g] || c.Tokens != 68 || c.Hash != ha[16] || c.Writer != 1 {
			t.Errorf("copy %d: %+v", g, c)
		}
		if a.MambaT[g].Blocks[2] != src[g] {
			t.Errorf("group %d: the producer's table left its block", g)
		}
		if got := m.Pool.CachedUnder(ha[16], m.MambaPoolGroup(g)); got != c.Dst {
			t.Errorf("group %d: entry on block %d, want the copy %d", g, got, c.Dst)
		}
		if m.Pool.Record(c.Src).Cached {
			t.Errorf("group %d: the running block is still cached", g)
		}
	}
	h.conserved(&a)
	if err := m.ReleaseBlockCopies(h.step); err != nil {
		t.Fatal(err)
	}
	h.conserved(&a)
	for _, c := range cs {
		if m.Pool.RefCount(c.Dst) != 0 || !m.Pool.Record(c.Dst).Cached {
			t.Errorf("released copy %d: refs %d, cached %v: want free and cached", c.Dst, m.Pool.RefCount(c.Dst), m.Pool.Record(c.Dst).Cached)
		}
	}

	// Step 3: a consumer sharing 68 tokens hits the partial entries.
	h.newStep()
	cprompt := append(append([]int32{}, prompt[:68]...), tokensOf(4, 99)...)
	hc := AppendBlockHashes(nil, cprompt, 4)
	c := m.NewTable()
	c.NumPromptTokens = 72
	hit := m.GetComputedBlocks(&c, hc, 72, false)
	if hit != 68 {
		t.Fatalf("consumer hit %d tokens, want 68", hit)
	}
	if ok, err := m.AllocateSlots(2, &c, 0, hit, 72, 72, hc); !ok || err != nil {
		t.Fatalf("allocate: %v %v", ok, err)
	}
	cs = m.TakeBlockCopies(h.step, nil)
	if len(cs) != 4 {
		t.Fatalf("step 3 copies %v, want attention + 3 Mamba", cs)
	}
	if c.Attn[0][0] != a.Attn[0][0] || c.Attn[0][1] != a.Attn[0][1] || c.Attn[0][2] == attnTail {
		t.Errorf("consumer attention table %v, producer's %v: want the full blocks shared and a copy of the tail", c.Attn[0], a.Attn[0])
	}
	byGroup := map[int32]BlockCopy{}
	for i, x := range cs {
		if i > 0 && x.Group <= cs[i-1].Group {
			t.Errorf("copies out of group order: %v", cs)
		}
		byGroup[x.Group] = x
	}
	if x := byGroup[m.PoolGroup(0)]; x.Kind != CopyPartialHit || x.Src != attnTail || x.Dst != c.Attn[0][2] || x.Tokens != 68 || x.Hash != hc[16] || x.Writer != 1 || m.Pool.Record(attnTail).Hash != x.Hash {
		t.Errorf("attention copy %+v", x)
	}
	for g := range 3 {
		x, mt := byGroup[m.MambaPoolGroup(g)], &c.MambaT[g]
		if x.Kind != CopyPartialHit || x.Dst != mt.Blocks[2] || mt.Blocks[0] != NullBlock || mt.Blocks[1] != NullBlock || len(mt.Blocks) != 3 {
			t.Errorf("mamba group %d: copy %+v, table %v", g, x, mt.Blocks)
		}
		if s := m.MambaManagerOf(g).State(mt); s.CopySource != NullBlock || s.Running != x.Dst {
			t.Errorf("mamba group %d: running %d, copy source %d: want the copy, no pre-copy", g, s.Running, s.CopySource)
		}
	}
	h.conserved(&a, &c)
	if err := m.ReleaseBlockCopies(h.step); err != nil {
		t.Fatal(err)
	}
	h.conserved(&a, &c)
	if n := len(m.cow.pinned); n != 0 {
		t.Errorf("%d pins left after the release", n)
	}
}

// TestFineGrainedLookupsAtHashBoundaries: the Mamba scan finds a state
// at any hash boundary, attention's probe only inside the first block
// past its full run, and the coordinator the longest both serve.
func TestFineGrainedLookupsAtHashBoundaries(t *testing.T) {
	h := newFineHarness(t, 64)
	m := h.m
	prompt := tokensOf(120, 3)
	hs := AppendBlockHashes(nil, prompt, 4)
	a := m.NewTable()
	a.NumPromptTokens = 120
	h.newStep()
	// A 64-token chunk: attention caches blocks 0 and 1, Mamba the state
	// at 64 (a block boundary).
	if ok, err := m.AllocateSlots(1, &a, 0, 0, 64, 120, hs); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for _, tc := range []struct {
		name   string
		tokens int
		want   int
	}{
		{"shared prefix 88: the Mamba state at 64", 88, 64},
		{"shared prefix 60: attention's probe of block 1 finds no entry, Mamba none below 64", 60, 0},
		{"shared prefix 65: the state at 64", 65, 64},
	} {
		other := append(append([]int32{}, prompt[:tc.tokens]...), tokensOf(20, 77)...)
		ho := AppendBlockHashes(nil, other, 4)
		o := m.NewTable()
		if got := m.GetComputedBlocks(&o, ho, len(other), false); got != tc.want {
			t.Errorf("%s: hit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestFineGrainedNeedsTheRelease: without #46384 (PartialHashHits off)
// the same layout's hits stay whole blocks.
func TestFineGrainedNeedsTheRelease(t *testing.T) {
	sh, _ := model.Preset("tiny-hybrid")
	l := sh.Layout(16)
	m, err := NewKVCacheManagerWith(&l, 64, ManagerOptions{EnablePrefixCaching: true, MambaCacheMode: MambaAlign, HashBlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if m.fine || m.coord.Alignment() != m.blockSize {
		t.Errorf("fine-grained %v, alignment %d: want off, %d", m.fine, m.coord.Alignment(), m.blockSize)
	}
}

// TestLookaheadSlotsAreNotCached: allocate_slots caches the computed and
// scheduled tokens only, not the drafter's lookahead slots: a chunk
// ending one token short of the prompt's last hash boundary, with one
// lookahead slot, registers no partial tail there (its state is not
// written this step).
func TestLookaheadSlotsAreNotCached(t *testing.T) {
	h := newFineHarness(t, 64)
	m := h.m
	prompt := tokensOf(70, 5)
	hs := AppendBlockHashes(nil, prompt, 4)
	a := m.NewTable()
	a.NumPromptTokens = 70
	h.newStep()
	if ok, err := m.AllocateSlotsLookahead(1, &a, 0, 0, 68, 1, 70, hs); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if b := m.Pool.CachedUnder(hs[16], m.MambaPoolGroup(0)); b != NullBlock {
		t.Errorf("a 67-token step with a lookahead slot cached the state at 68 in block %d", b)
	}
	if ok, err := m.AllocateSlotsLookahead(1, &a, 67, 0, 69, 1, 70, hs); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if b := m.Pool.CachedUnder(hs[16], m.MambaPoolGroup(0)); b == NullBlock {
		t.Error("the step reaching 68 did not cache the partial tail")
	}
}

// TestPartialEntriesInThePool: a partial entry is a block's primary key
// until the block is cached full (cache_full_blocks promotes it); then,
// renewed, it is the block's extra key beside the full one. Both go with
// the block on eviction, and a move takes both to the copy.
func TestPartialEntriesInThePool(t *testing.T) {
	p := cachingPool(8, FreshToHead)
	p.EnablePartialEntries()
	hs := AppendBlockHashes(nil, tokensOf(32, 9), 4) // blocks of 16: hashes at 4
	full := BlockHashesAt(nil, hs, 4, 16)
	var b [1]int32
	if err := p.GetNewBlocks(1, 0, b[:]); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.CachePartialBlock(1, 0, b[0], hs[2], 12); !ok || err != nil {
		t.Fatal(ok, err)
	}
	eq(t, "partial entry", p.CachedUnder(hs[2], 0), b[0])
	if err := p.CacheFullBlocks(1, 0, b[:], full, 0, 1, 16); err != nil {
		t.Fatal(err)
	}
	eq(t, "promoted: the full key", p.CachedUnder(full[0], 0), b[0])
	eq(t, "promoted: the partial key dropped", p.CachedUnder(hs[2], 0), int32(NullBlock))
	if _, err := p.CachePartialBlock(1, 0, b[0], hs[2], 12); err != nil {
		t.Fatal(err)
	}
	eq(t, "renewed as the extra key", p.CachedUnder(hs[2], 0), b[0])
	eq(t, "the primary key stays", p.Record(b[0]).Tokens, int32(16))
	var d [1]int32
	if err := p.GetNewBlocks(1, 0, d[:]); err != nil {
		t.Fatal(err)
	}
	if err := p.MoveBlockHashes(b[0], d[0]); err != nil {
		t.Fatal(err)
	}
	eq(t, "moved: full key", p.CachedUnder(full[0], 0), d[0])
	eq(t, "moved: extra key", p.CachedUnder(hs[2], 0), d[0])
	eq(t, "moved: the source uncached", p.Record(b[0]).Cached, false)
	// Freed and popped again, the copy is evicted with both keys.
	if err := p.FreeBlocks(1, d[:]); err != nil {
		t.Fatal(err)
	}
	var all [7]int32
	if err := p.GetNewBlocks(2, 0, all[:6]); err != nil {
		t.Fatal(err)
	}
	eq(t, "evicted: full key", p.CachedUnder(full[0], 0), int32(NullBlock))
	eq(t, "evicted: extra key", p.CachedUnder(hs[2], 0), int32(NullBlock))
}
