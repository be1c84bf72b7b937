package statecache

import (
	"slices"
	"strings"
	"testing"
)

func rel(minor int) Release { return Release{0, minor} }

func on(b bool) *bool { return &b }

// The resolution of MambaModelConfig.verify_and_update_config, release by
// release: each row is a rule of the code or a PR, not a run of ours.
func TestResolveMambaCacheMode(t *testing.T) {
	cases := []struct {
		name string
		c    MambaModeConfig
		pc   bool
		mode MambaCacheMode
		err  bool
	}{
		{"v0.22: prefix caching off by default for hybrids", MambaModeConfig{Release: rel(22), SupportsAll: true}, false, MambaNone, false},
		{"v0.22: on, Mamba2 model: all", MambaModeConfig{Release: rel(22), PrefixCaching: on(true), SupportsAll: true}, true, MambaAll, false},
		{"v0.22: on, GDN model: align", MambaModeConfig{Release: rel(22), PrefixCaching: on(true)}, true, MambaAlign, false},
		{"v0.22: all asked, no support: falls back to align", MambaModeConfig{Release: rel(22), PrefixCaching: on(true), Requested: MambaAll}, true, MambaAlign, false},
		{"v0.22: align asked on a Mamba2 model", MambaModeConfig{Release: rel(22), PrefixCaching: on(true), Requested: MambaAlign, SupportsAll: true}, true, MambaAlign, false},
		{"v0.22: off with a mode asked: forced none", MambaModeConfig{Release: rel(22), PrefixCaching: on(false), Requested: MambaAlign}, false, MambaNone, false},
		{"v0.21: spec decode, Mamba2: align (#40454)", MambaModeConfig{Release: rel(21), PrefixCaching: on(true), SupportsAll: true, SpecDecode: true}, true, MambaAlign, false},
		{"v0.27: spec decode, Mamba2: all (#52317)", MambaModeConfig{Release: rel(27), PrefixCaching: on(true), SupportsAll: true, SpecDecode: true}, true, MambaAll, false},
		{"v0.28: on by default, align by default (#50991)", MambaModeConfig{Release: rel(28), SupportsAll: true}, true, MambaAlign, false},
		{"v0.28: all asked on a Mamba2 model", MambaModeConfig{Release: rel(28), Requested: MambaAll, SupportsAll: true}, true, MambaAll, false},
		{"v0.28: switched off", MambaModeConfig{Release: rel(28), PrefixCaching: on(false), SupportsAll: true}, false, MambaNone, false},
		{"v0.28: align needs chunked prefill", MambaModeConfig{Release: rel(28), NoChunkedPrefill: true}, false, 0, true},
		{"v0.28: all without chunked prefill is fine", MambaModeConfig{Release: rel(28), Requested: MambaAll, SupportsAll: true, NoChunkedPrefill: true}, true, MambaAll, false},
		{"v0.15: align refuses spec decode (until #33705)", MambaModeConfig{Release: rel(15), PrefixCaching: on(true), SpecDecode: true}, false, 0, true},
		{"v0.16: align with spec decode", MambaModeConfig{Release: rel(16), PrefixCaching: on(true), SpecDecode: true}, true, MambaAlign, false},
		{"v0.14: no modes; a supporting model caches every boundary", MambaModeConfig{Release: rel(14), PrefixCaching: on(true), SupportsAll: true}, true, MambaAll, false},
		{"v0.14: no support: prefix caching disabled", MambaModeConfig{Release: rel(14), PrefixCaching: on(true)}, false, MambaNone, false},
		{"v0.13: mamba_cache_mode does not exist", MambaModeConfig{Release: rel(13), Requested: MambaAlign}, false, 0, true},
		{"v0.11: hybrids never cache", MambaModeConfig{Release: rel(11), PrefixCaching: on(true), SupportsAll: true}, false, MambaNone, false},
	}
	for _, c := range cases {
		got, err := ResolveMambaCacheMode(c.c)
		if (err != nil) != c.err {
			t.Errorf("%s: error %v, want error %v", c.name, err, c.err)
			continue
		}
		if err == nil && (got.PrefixCaching != c.pc || got.Mode != c.mode) {
			t.Errorf("%s: got prefix caching %v, mode %v (%s); want %v, %v", c.name, got.PrefixCaching, got.Mode, got.Why, c.pc, c.mode)
		}
	}
}

func TestParseRelease(t *testing.T) {
	for s, want := range map[string]Release{"v0.28": {0, 28}, "0.14": {0, 14}, "v0.27.1": {0, 27}, "v1.0": {1, 0}} {
		if got, err := ParseRelease(s); err != nil || got != want {
			t.Errorf("ParseRelease(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"v0", "fixed", "v0.x", "v0.1.2.3", ""} {
		if _, err := ParseRelease(s); err == nil {
			t.Errorf("ParseRelease(%q): want an error", s)
		}
	}
	if !rel(28).AtLeast(rel(28)) || rel(27).AtLeast(rel(28)) || !(Release{1, 0}).AtLeast(rel(99)) {
		t.Error("AtLeast ordering")
	}
}

// max_memory_usage_bytes in pages, from kv_cache_interface.py @ bc8282e6.
func TestMaxBlocksPerRequest(t *testing.T) {
	cases := []struct {
		spec MambaSpec
		want int
	}{
		{MambaSpec{MambaNone, 8192, 0, false}, 1},
		{MambaSpec{MambaNone, 8192, 2, false}, 3},
		{MambaSpec{MambaAlign, 544, 0, false}, 2},
		{MambaSpec{MambaAlign, 544, 3, false}, 5},
		{MambaSpec{MambaAll, 544, 0, false}, 16}, // cdiv(8192, 544)
	}
	for _, c := range cases {
		if got := c.spec.MaxBlocksPerRequest(8192); got != c.want {
			t.Errorf("%+v: %d blocks, want %d", c.spec, got, c.want)
		}
	}
}

// Which blocks are zeroed on allocation, by group and release (#35219,
// #47574, #51749; Mamba never, #54004).
func TestZeroedOnAllocation(t *testing.T) {
	cases := []struct {
		k               ZeroKind
		r               Release
		hybrid, quantSW bool
		want            bool
	}{
		{ZeroFullAttention, rel(14), true, false, false},
		{ZeroFullAttention, rel(17), true, false, true},
		{ZeroFullAttention, rel(22), false, false, false},
		{ZeroOtherAttention, rel(22), true, false, false},
		{ZeroOtherAttention, rel(28), true, false, true},
		{ZeroFullAttention, rel(24), false, true, false},
		{ZeroFullAttention, rel(25), false, true, true},
		{ZeroOtherAttention, rel(25), false, true, false},
		{ZeroOtherAttention, rel(28), false, true, true},
		{ZeroMambaState, rel(14), true, false, false},
		{ZeroMambaState, rel(22), true, true, false},
		{ZeroMambaState, rel(30), true, true, false},
	}
	for _, c := range cases {
		if got := ZeroedOnAllocation(c.k, c.r, c.hybrid, c.quantSW); got != c.want {
			t.Errorf("%v at %v (hybrid %v, quantized window %v): zeroed %v, want %v", c.k, c.r, c.hybrid, c.quantSW, got, c.want)
		}
	}
}

// cachePositions caches, in group g, a fresh block for each position of
// hashes marked in cached, as a request that wrote them would.
func cachePositions(t *testing.T, p *BlockPool, g int32, hashes []BlockHash, cached []bool, bs int) []int32 {
	t.Helper()
	blocks := make([]int32, len(hashes))
	for i, c := range cached {
		if !c {
			continue
		}
		if err := p.GetNewBlocks(900, g, blocks[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CacheFullBlocks(900, g, blocks, hashes, 0, len(hashes), bs); err != nil {
		t.Fatal(err)
	}
	return blocks
}

func tokenHashes(n, bs int, seed int32) []BlockHash {
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = seed + int32(i)
	}
	return AppendBlockHashes(nil, toks, bs)
}

// The Mamba lookup: right to left, the last cached block whose end is a
// multiple of the alignment; nulls before it; none mode never hits.
func TestMambaHitRule(t *testing.T) {
	const bs = 4
	cases := []struct {
		cached    []bool
		maxLength int
		alignment int
		want      int
	}{
		{[]bool{false, false, false}, 12, 4, 0},
		{[]bool{true, false, false}, 12, 4, 1},
		{[]bool{true, true, false}, 12, 4, 2},
		{[]bool{false, false, true}, 12, 4, 3}, // a state needs nothing before it
		{[]bool{true, false, true, false}, 16, 4, 3},
		{[]bool{true, true, true}, 11, 4, 2}, // max length caps the scan
		{[]bool{true, true, true}, 12, 8, 2}, // block 3 ends at 12, not a multiple of 8
		{[]bool{true, false, true, false}, 16, 8, 0},
		{[]bool{false, true, true, true}, 16, 8, 4},
	}
	for ci, c := range cases {
		p := NewBlockPoolWith(32, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
		h := tokenHashes(len(c.cached)*bs, bs, 0)
		blocks := cachePositions(t, p, 0, h, c.cached, bs)
		dst := [][]int32{nil}
		got := MambaHit{MambaAlign, bs}.FindLongestCacheHit(p, h, c.maxLength, c.alignment, []int32{0}, dst)
		if got != c.want || len(dst[0]) != got {
			t.Errorf("case %d: hit %d blocks (%v), want %d", ci, got, dst[0], c.want)
			continue
		}
		for i, b := range dst[0] {
			want := int32(NullBlock)
			if i == got-1 {
				want = blocks[i]
			}
			if b != want {
				t.Errorf("case %d: position %d holds %d, want %d", ci, i, b, want)
			}
		}
		if n := (MambaHit{MambaNone, bs}).FindLongestCacheHit(p, h, c.maxLength, c.alignment, []int32{0}, dst); n != 0 || len(dst[0]) != 0 {
			t.Errorf("case %d: none mode hit %d", ci, n)
		}
	}
}

// A hybrid hit needs every group: attention's 6 cached blocks are cut to
// the Mamba group's last state, and no state means no hit at all.
func TestMambaHybridHitNeedsEveryGroup(t *testing.T) {
	const bs = 4
	p := NewBlockPoolWith(64, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
	h := tokenHashes(7*bs, bs, 0)
	cachePositions(t, p, 0, h, []bool{true, true, true, true, true, true, false}, bs)
	coord, err := NewHybridCoordinator(2, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{MambaAlign, bs}, []int32{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := coord.FindLongestCacheHit(p, h, 7*bs-1); got != 0 {
		t.Errorf("no Mamba state: hit %d tokens, want 0", got)
	}
	mb := cachePositions(t, p, 1, h, []bool{false, true, false, true, false, false, false}, bs)
	if got := coord.FindLongestCacheHit(p, h, 7*bs-1); got != 4*bs {
		t.Errorf("state at block 3: hit %d tokens, want %d", got, 4*bs)
	}
	if hb := coord.HitBlocks(1); !slices.Equal(hb, []int32{0, 0, 0, mb[3]}) || len(coord.HitBlocks(0)) != 4 {
		t.Errorf("hit blocks: attention %v, mamba %v", coord.HitBlocks(0), hb)
	}
	// Capped at 2 blocks (a short request): the state at block 1 serves.
	if got := coord.FindLongestCacheHit(p, h, 3*bs-1); got != 2*bs {
		t.Errorf("max 11 tokens: hit %d, want %d", got, 2*bs)
	}
}

// harness drives one Mamba group's manager the way allocate_slots does.
type harness struct {
	t    *testing.T
	p    *BlockPool
	m    *MambaManager
	step int64
}

func newHarness(t *testing.T, mode MambaCacheMode, bs, blocks int) *harness {
	t.Helper()
	p := NewBlockPoolWith(blocks, PoolOptions{EnablePrefixCaching: mode != MambaNone, FreeOrder: FreshToHead})
	m, err := NewMambaManager(p, MambaSpec{Mode: mode, BlockSize: bs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, p: p, m: m}
}

func (h *harness) newStep() {
	h.step++
	h.p.NewStepStarts(h.step)
}

// schedule gives req n more tokens after computed ones (hit: its blocks
// and tokens when it is new), caching up to numTokens (the request's).
func (h *harness) schedule(req RequestID, tb *MambaTable, computed, n, numTokens int, hashes []BlockHash, hit []int32, hitTokens int) bool {
	h.t.Helper()
	if err := h.m.RemoveSkippedBlocks(req, tb, computed); err != nil {
		h.t.Fatal(err)
	}
	total := computed + hitTokens
	if h.m.BlocksToAllocate(tb, total+n, total, hit) > h.p.NumFree() {
		return false
	}
	if !tb.running {
		if err := h.m.AddHitBlocks(req, tb, hit, hitTokens); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.m.AllocateNewBlocks(req, tb, total+n); err != nil {
		h.t.Fatal(err)
	}
	if err := h.m.CacheBlocks(req, tb, min(total+n, numTokens), hashes); err != nil {
		h.t.Fatal(err)
	}
	return true
}

// Align mode, one request, B = 4, a 10-token prompt in an aligned chunk
// and its tail, then decodes: the running block, the copy source kept one
// step, and boundary states cached only where a step ends on i·B.
func TestMambaAlignLifecycle(t *testing.T) {
	h := newHarness(t, MambaAlign, 4, 16)
	hashes := tokenHashes(16, 4, 0)
	var tb MambaTable
	type want struct {
		running, src     int // table positions, -1 none
		runTok, srcTok   int
		held             int
		snapshotsAtIndex []int
	}
	check := func(label string, w want) {
		t.Helper()
		s := h.m.State(&tb)
		if s.RunningIndex != w.running || s.CopySourceIndex != w.src || s.Held != w.held ||
			s.RunningTokens != w.runTok || w.src >= 0 && s.CopySourceTokens != w.srcTok {
			t.Errorf("%s: state %+v, want %+v (table %v)", label, s, w, tb.Blocks)
		}
		var at []int
		for _, sn := range h.m.Snapshots(&tb, nil) {
			at = append(at, sn.Index)
			if int(sn.Tokens) != 4*(sn.Index+1) || sn.Hash != hashes[sn.Index] || sn.Group != 0 {
				t.Errorf("%s: snapshot %+v does not hold its position's prefix", label, sn)
			}
		}
		if !slices.Equal(at, w.snapshotsAtIndex) {
			t.Errorf("%s: snapshots at %v, want %v", label, at, w.snapshotsAtIndex)
		}
	}
	h.newStep() // 8 tokens: ends on a boundary, so block 1's state is cached
	h.schedule(1, &tb, 0, 8, 10, hashes, nil, 0)
	check("prefill 0..8", want{1, -1, 8, 0, 1, []int{1}})
	r1 := tb.Blocks[1]
	h.newStep() // the 2-token tail: a new running block, block 1 the copy source
	h.schedule(1, &tb, 8, 2, 10, hashes, nil, 0)
	check("tail 8..10", want{2, 1, 10, 8, 2, []int{1}})
	h.newStep() // decode to 11: the copy source is freed, still cached
	h.schedule(1, &tb, 10, 1, 11, hashes, nil, 0)
	check("decode 10..11", want{2, -1, 11, 0, 1, nil})
	if r := h.p.Record(r1); !r.Cached || h.p.RefCount(r1) != 0 {
		t.Errorf("freed boundary block %d: record %+v, refs %d; want cached and free", r1, r, h.p.RefCount(r1))
	}
	h.newStep() // decode to 12: the step ends at 3·B, block 2 caches it
	h.schedule(1, &tb, 11, 1, 12, hashes, nil, 0)
	check("decode 11..12", want{2, -1, 12, 0, 1, []int{2}})
	h.newStep() // decode to 13: block 3 runs, block 2 is the copy source
	h.schedule(1, &tb, 12, 1, 13, hashes, nil, 0)
	check("decode 12..13", want{3, 2, 13, 12, 2, []int{2}})
	h.newStep()
	h.schedule(1, &tb, 13, 1, 14, hashes, nil, 0)
	check("decode 13..14", want{3, -1, 14, 0, 1, nil})
	if err := h.m.Free(1, &tb); err != nil {
		t.Fatal(err)
	}
	if h.p.NumHeld() != 0 || len(tb.Blocks) != 0 {
		t.Errorf("after free: %d held, table %v", h.p.NumHeld(), tb.Blocks)
	}
}

// A hit restores into a fresh block: the hit block is the copy source for
// one step, then its reference is dropped and it stays cached.
func TestMambaAlignHitRestoresIntoFreshBlock(t *testing.T) {
	h := newHarness(t, MambaAlign, 4, 16)
	hashes := tokenHashes(12, 4, 0)
	var a, b MambaTable
	h.newStep()
	h.schedule(1, &a, 0, 8, 12, hashes, nil, 0) // caches block 1 (8 tokens)
	src := a.Blocks[1]
	if err := h.m.Free(1, &a); err != nil {
		t.Fatal(err)
	}
	h.newStep()
	dst := [][]int32{nil}
	if n := (MambaHit{MambaAlign, 4}).FindLongestCacheHit(h.p, hashes, 11, 4, []int32{0}, dst); n != 2 {
		t.Fatalf("hit %d blocks, want 2", n)
	}
	if !h.schedule(2, &b, 0, 4, 12, hashes, dst[0], 8) {
		t.Fatal("the hit request did not fit")
	}
	s := h.m.State(&b)
	if s.CopySource != src || s.CopySourceTokens != 8 || s.RunningIndex != 2 || s.Running == src || s.RunningTokens != 12 {
		t.Errorf("after the hit: %+v; want copy source %d (8 tokens), a fresh running block at 2", s, src)
	}
	if h.p.RefCount(src) != 1 {
		t.Errorf("hit block refs %d, want 1", h.p.RefCount(src))
	}
	h.newStep()
	h.schedule(2, &b, 12, 1, 13, hashes, nil, 0) // 13 tokens: block 3 runs, copied from block 2
	if h.p.RefCount(src) != 0 || !h.p.Record(src).Cached || h.m.State(&b).CopySourceIndex != 2 {
		t.Errorf("one step later: refs %d, record %+v, state %+v", h.p.RefCount(src), h.p.Record(src), h.m.State(&b))
	}
}

// A state cached in this step is not written until the step runs: a
// request that would restore from it waits a step (#29387).
func TestMambaSameStepHitWaits(t *testing.T) {
	h := newHarness(t, MambaAlign, 4, 16)
	hashes := tokenHashes(12, 4, 0)
	var a, b MambaTable
	h.newStep()
	h.schedule(1, &a, 0, 8, 12, hashes, nil, 0)
	dst := [][]int32{nil}
	(MambaHit{MambaAlign, 4}).FindLongestCacheHit(h.p, hashes, 11, 4, []int32{0}, dst)
	if n := h.m.BlocksToAllocate(&b, 12, 8, dst[0]); n <= h.p.NumBlocks() {
		t.Errorf("same-step hit costs %d blocks, want more than the pool's %d", n, h.p.NumBlocks())
	}
	h.newStep()
	if n := h.m.BlocksToAllocate(&b, 12, 8, dst[0]); n != 1 {
		t.Errorf("next step: %d blocks, want 1 (the hit block is held)", n)
	}
}

// Without chunk alignment, align mode caches the copy source under a
// boundary's hash it does not hold: a chunk from 6 to 14 (B = 4) leaves
// block 1 (state after 6 tokens) in range of blocks [1, 3) to cache, so
// the cache says it holds the 8-token prefix. vLLM relies on the chunk
// policy (sched.AlignMambaChunk) never to schedule such a chunk; a
// provenance check on restore would catch it.
func TestMambaAlignUnalignedChunkMislabelsCopySource(t *testing.T) {
	h := newHarness(t, MambaAlign, 4, 16)
	hashes := tokenHashes(16, 4, 0)
	var tb MambaTable
	h.newStep()
	h.schedule(1, &tb, 0, 6, 16, hashes, nil, 0)
	h.newStep()
	h.schedule(1, &tb, 6, 8, 16, hashes, nil, 0)
	s := h.m.State(&tb)
	r := h.p.Record(s.CopySource)
	if !r.Cached || r.Tokens != 8 || s.CopySourceTokens != 6 {
		t.Errorf("copy source %d: record %+v, holds %d tokens; want cached as 8 tokens while holding 6", s.CopySource, r, s.CopySourceTokens)
	}
}

// All mode: a block per B tokens, every boundary cached; blocks before
// the one with the last computed token are freed, still findable.
func TestMambaAllLifecycle(t *testing.T) {
	h := newHarness(t, MambaAll, 4, 32)
	hashes := tokenHashes(20, 4, 0)
	var tb MambaTable
	h.newStep()
	h.schedule(1, &tb, 0, 10, 20, hashes, nil, 0)
	if len(tb.Blocks) != 3 || h.m.State(&tb).Held != 3 || len(h.m.Snapshots(&tb, nil)) != 2 {
		t.Fatalf("10 tokens: table %v, snapshots %v", tb.Blocks, h.m.Snapshots(&tb, nil))
	}
	first := slices.Clone(tb.Blocks[:2])
	h.newStep()
	h.schedule(1, &tb, 10, 6, 20, hashes, nil, 0) // to 16
	st := h.m.State(&tb)
	if st.Held != 2 || st.RunningIndex != 3 || tb.Blocks[0] != NullBlock || tb.Blocks[1] != NullBlock {
		t.Errorf("16 tokens: table %v, state %+v; want blocks 0, 1 freed", tb.Blocks, st)
	}
	for i, b := range first {
		if r := h.p.Record(b); !r.Cached || h.p.RefCount(b) != 0 || int(r.Tokens) != 4*(i+1) {
			t.Errorf("freed block %d: %+v refs %d", b, r, h.p.RefCount(b))
		}
	}
	// Another request finds the state at block 3 (16 tokens) and reads
	// it in place: all mode copies nothing.
	h.newStep()
	dst := [][]int32{nil}
	if n := (MambaHit{MambaAll, 4}).FindLongestCacheHit(h.p, hashes, 19, 4, []int32{0}, dst); n != 4 {
		t.Fatalf("hit %d blocks, want 4", n)
	}
	var b MambaTable
	h.schedule(2, &b, 0, 3, 20, hashes, dst[0], 16)
	sb := h.m.State(&b)
	if sb.CopySource != NullBlock || b.Blocks[3] != tb.Blocks[3] || h.p.RefCount(tb.Blocks[3]) != 2 || sb.RunningIndex != 4 {
		t.Errorf("all-mode hit: table %v, state %+v", b.Blocks, sb)
	}
}

// None mode: one block of max_model_len tokens for the request's life,
// nothing cached, a pool without prefix caching.
func TestMambaNoneOneBlock(t *testing.T) {
	const maxModelLen = 64
	h := newHarness(t, MambaNone, maxModelLen, 8)
	var tb MambaTable
	for c, n := 0, 16; c < maxModelLen-1; c, n = c+n, 1 {
		h.newStep()
		if !h.schedule(1, &tb, c, n, maxModelLen, nil, nil, 0) {
			t.Fatal("did not fit")
		}
		if len(tb.Blocks) != 1 || h.p.NumHeld() != 1 {
			t.Fatalf("at %d tokens: table %v", c+n, tb.Blocks)
		}
	}
	if err := h.m.Free(1, &tb); err != nil || h.p.NumHeld() != 0 {
		t.Errorf("free: %v, %d held", err, h.p.NumHeld())
	}
}

// Once warm, a step of allocation, caching and freeing allocates nothing.
func TestMambaStepAllocsNothingWhenWarm(t *testing.T) {
	for _, mode := range []MambaCacheMode{MambaAlign, MambaAll} {
		h := newHarness(t, mode, 4, 256)
		hashes := tokenHashes(64, 4, 0)
		tables := make([]MambaTable, 4)
		run := func() {
			for r := range tables {
				c := 0
				for _, n := range []int{16, 8, 4, 1, 1, 1, 1, 1} {
					h.newStep()
					h.schedule(RequestID(r), &tables[r], c, n, 40, hashes, nil, 0)
					c += n
				}
				if err := h.m.Free(RequestID(r), &tables[r]); err != nil {
					t.Fatal(err)
				}
			}
		}
		run()
		if a := testing.AllocsPerRun(20, run); a != 0 {
			t.Errorf("%v: %.1f allocations per run, want 0", mode, a)
		}
	}
}

// vLLM's hybrid cases (tests/v1/core/test_prefix_caching.py,
// test_prefill_hybrid_model_combinations "3g-full+2mamba" and
// test_prefill_hybrid_model_mamba_align; B = 16): request 0 schedules its
// 55 tokens (3 full blocks) in one step; after new_step_starts, request 1
// with the same 48-token prefix hits 48 tokens in every group when the
// Mamba groups cache every boundary. In align mode that one chunk ends
// off the grid, so its 3 null positions are passed over (issue #34361)
// and nothing is cached: no hit. Chunked as the align policy cuts it
// (48, then 7), the state at 48 is cached and request 1 hits 48.
func TestMambaVLLMHybridPrefill(t *testing.T) {
	const bs = 16
	common := make([]int32, 0, 55)
	for i := range 3 {
		for range bs {
			common = append(common, int32(i))
		}
	}
	req0 := append(slices.Clone(common), 3, 3, 3, 3, 3, 3, 3)
	req1 := append(slices.Clone(common), 4, 4, 4, 4, 4)
	h0, h1 := AppendBlockHashes(nil, req0, bs), AppendBlockHashes(nil, req1, bs)
	for _, c := range []struct {
		name   string
		mode   MambaCacheMode
		chunks []int
		want   int
	}{
		{"all, one chunk", MambaAll, []int{55}, 48},
		{"align, one chunk", MambaAlign, []int{55}, 0},
		{"align, aligned chunks", MambaAlign, []int{48, 7}, 48},
	} {
		p := NewBlockPoolWith(40, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
		attn := make([]int32, 4) // the full-attention group 0, as its manager would
		if err := p.GetNewBlocks(0, 0, attn); err != nil {
			t.Fatal(err)
		}
		if err := p.CacheFullBlocks(0, 0, attn, h0, 0, 3, bs); err != nil {
			t.Fatal(err)
		}
		var mgrs [2]*MambaManager
		var tabs [2]MambaTable
		step := int64(1)
		computed := 0
		for _, n := range c.chunks {
			p.NewStepStarts(step)
			for g := range mgrs {
				if mgrs[g] == nil {
					mgrs[g], _ = NewMambaManager(p, MambaSpec{Mode: c.mode, BlockSize: bs}, int32(g+1))
				}
				m, tb := mgrs[g], &tabs[g]
				if err := m.RemoveSkippedBlocks(0, tb, computed); err != nil {
					t.Fatal(err)
				}
				if err := m.AllocateNewBlocks(0, tb, computed+n); err != nil {
					t.Fatal(err)
				}
				if err := m.CacheBlocks(0, tb, computed+n, h0); err != nil {
					t.Fatal(err)
				}
			}
			computed += n
			step++
		}
		p.NewStepStarts(step)
		coord, err := NewHybridCoordinator(3, []HitGroup{{FullAttention{bs}, []int32{0}}, {MambaHit{c.mode, bs}, []int32{1, 2}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := coord.FindLongestCacheHit(p, h1, len(req1)-1); got != c.want {
			t.Errorf("%s: request 1 hits %d tokens, want %d", c.name, got, c.want)
		}
	}
}

// Align mode, K = 2: the runner's copy of a table keeps the id of a
// position the scheduler frees (it is only appended to), and a count
// that shrinks below the table is vLLM's assertion, not tolerated.
func TestMambaAlignRunnerCopy(t *testing.T) {
	p := NewBlockPoolWith(16, PoolOptions{EnablePrefixCaching: true, FreeOrder: FreshToHead})
	m, err := NewMambaManager(p, MambaSpec{Mode: MambaAlign, BlockSize: 4, NumSpeculativeBlocks: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tb MambaTable
	if err := m.AddHitBlocks(1, &tb, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.AllocateNewBlocks(1, &tb, 8); err != nil { // [null, run, spec, spec]
		t.Fatal(err)
	}
	if !slices.Equal(tb.RunnerBlocks(), tb.Blocks) {
		t.Fatalf("first allocation: runner %v, scheduler %v; want the whole table", tb.RunnerBlocks(), tb.Blocks)
	}
	if err := m.AllocateNewBlocks(1, &tb, 11); err != nil { // a decode of 1 + K: running at 2
		t.Fatal(err)
	}
	run1 := tb.Blocks[1]
	// An over-count of 11 (drafts not yet rejected) frees position 1.
	if err := m.RemoveSkippedBlocks(1, &tb, 11); err != nil {
		t.Fatal(err)
	}
	if tb.Blocks[1] != NullBlock || tb.Holds(run1) {
		t.Fatalf("position 1 not freed: table %v", tb.Blocks)
	}
	if got := tb.RunnerBlocks(); len(got) != len(tb.Blocks) || got[1] != run1 {
		t.Errorf("runner's copy %v, want the freed block %d kept at position 1 (table %v)", got, run1, tb.Blocks)
	}
	// 12 + K positions were sized for; 7 tokens need 2 + K.
	if err := m.AllocateNewBlocks(1, &tb, 7); err == nil || !strings.Contains(err.Error(), "asserts num_required_blocks > len(req_blocks)") {
		t.Errorf("shrinking count: %v, want vLLM's assertion named", err)
	}
	if err := m.Free(1, &tb); err != nil || len(tb.RunnerBlocks()) != 0 {
		t.Errorf("after free: %v, runner's copy %v", err, tb.RunnerBlocks())
	}
}

func TestParseMambaCacheMode(t *testing.T) {
	for s, want := range map[string]MambaCacheMode{"": MambaNone, "none": MambaNone, "align": MambaAlign, "all": MambaAll} {
		if got, err := ParseMambaCacheMode(s); err != nil || got != want {
			t.Errorf("ParseMambaCacheMode(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseMambaCacheMode("some"); err == nil {
		t.Error(`ParseMambaCacheMode("some") took an unknown mode`)
	}
}
