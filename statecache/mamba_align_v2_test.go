package statecache

import "testing"

// v2AlignColumns replays Model Runner V2's align-mode column arithmetic
// (vllm/v1/worker/gpu/model_states/mamba_hybrid.py add_request and
// vllm/v1/worker/mamba_utils.py preprocess_mamba_align_fused_kernel @
// 6adad0876): add_request seeds state_idx = (num_computed - 1) //
// block_size; each step the kernel takes src = state_idx and advances
// state_idx to dst = cdiv(num_computed + q, B) - 1; the pre-copy runs
// when src >= 0 and src != dst, and the forward writes column dst in
// place. With one block size for every group the seed's divisor
// (cache_config.block_size) is the Mamba group's, as here.
type v2AlignColumns struct{ stateIdx, bs int }

func newV2AlignColumns(numComputed, bs int) v2AlignColumns {
	// Python's floor division: -1 // B is -1, a fresh request's "no source".
	s := (numComputed - 1) / bs
	if numComputed == 0 {
		s = -1
	}
	return v2AlignColumns{s, bs}
}

func (v *v2AlignColumns) step(numComputed, q int) (src, dst int) {
	src = v.stateIdx
	dst = (numComputed+q+v.bs-1)/v.bs - 1
	v.stateIdx = dst
	return src, dst
}

// V2's align columns against the manager's table, for producers and for
// requests restoring a full block-aligned hit: the column V2 writes in
// place is the manager's running block, the column it copies from is the
// manager's copy source, and the written block is never one that was
// cached before the step and is held by this request alone. So V2's
// in-place write never reaches a shared snapshot in the allocator vLLM
// has at 6adad0876 (single_type_kv_cache_manager.py MambaManager.
// allocate_new_blocks: a hit of k blocks and q > 0 tokens needs
// cdiv(k·B + q, B) > k blocks, so the running column k is fresh), which
// is why #57908's full-aligned-hit case does not arise here.
func TestMambaAlignV2ColumnsMatchManager(t *testing.T) {
	const bs = 4
	type req struct {
		hitBlocks int
		chunks    []int // tokens per step after the hit; decodes are 1
	}
	cases := []req{
		{0, []int{8, 2, 1, 1, 1, 1}}, // producer: publishes 8 and 12, keeps decoding
		{0, []int{4, 4, 4, 1}},       // producer: a boundary every step
		{2, []int{4, 1, 1}},          // full aligned hit of 8, a 4-token tail
		{2, []int{1, 1, 1, 1, 1}},    // full aligned hit of 8, 1-token tail
		{1, []int{4, 3, 1}},          // hit of 4, an aligned chunk, then the rest
	}
	for ci, c := range cases {
		h := newHarness(t, MambaAlign, bs, 32)
		hashes := tokenHashes(32, bs, 0)
		var hit []int32
		if c.hitBlocks > 0 {
			// A producer caches the hit's boundary, then leaves.
			var p MambaTable
			h.newStep()
			h.schedule(100, &p, 0, c.hitBlocks*bs, 32, hashes, nil, 0)
			if err := h.m.Free(100, &p); err != nil {
				t.Fatal(err)
			}
			dst := [][]int32{nil}
			if n := (MambaHit{MambaAlign, bs}).FindLongestCacheHit(h.p, hashes, 31, bs, []int32{0}, dst); n != c.hitBlocks {
				t.Fatalf("case %d: hit %d blocks, want %d", ci, n, c.hitBlocks)
			}
			hit = dst[0]
		}
		var tb MambaTable
		computed := c.hitBlocks * bs
		v2 := newV2AlignColumns(computed, bs)
		for si, q := range c.chunks {
			cachedBefore := map[int32]bool{}
			for _, b := range tb.Blocks {
				if b != NullBlock && h.p.Record(b).Cached {
					cachedBefore[b] = true
				}
			}
			for _, b := range hit {
				if b != NullBlock {
					cachedBefore[b] = true
				}
			}
			h.newStep()
			hitTokens := 0
			if si == 0 {
				hitTokens = computed
			}
			if !h.schedule(1, &tb, computed-hitTokens, q, 32, hashes, hit, hitTokens) {
				t.Fatalf("case %d step %d: did not fit", ci, si)
			}
			src, dst := v2.step(computed, q)
			s := h.m.State(&tb)
			if s.RunningIndex != dst {
				t.Errorf("case %d step %d: V2 writes column %d, the manager runs column %d (table %v)", ci, si, dst, s.RunningIndex, tb.Blocks)
			}
			copies := src >= 0 && src != dst
			if copies && s.CopySourceIndex != src || !copies && s.CopySourceIndex >= 0 {
				t.Errorf("case %d step %d: V2 copies from %d (copy %v), the manager from %d", ci, si, src, copies, s.CopySourceIndex)
			}
			if cachedBefore[s.Running] || h.p.RefCount(s.Running) != 1 {
				t.Errorf("case %d step %d: V2 writes block %d in place: cached before the step %v, refs %d", ci, si, s.Running, cachedBefore[s.Running], h.p.RefCount(s.Running))
			}
			computed += q
			hit = nil
		}
	}
}
