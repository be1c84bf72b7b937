package statecache

// DecodesLeased reports whether req's decodes of positions [computed, end)
// through t, one token per step, would each take both shortcuts: every
// attention group's leased last block (AccessKV) and the leased Mamba
// slots (AdvanceState). Each such call only raises the leased tail's
// tokens and sets its step, and sets the state lease's tokens and step,
// so one AccessKV(computed, end) and one AdvanceState(computed, end) at
// the last step leave exactly the records the per-step calls would: the
// engine's bulk of steady decode steps rests on this. The span must lie
// within one block (a call that fills the block marks it verified, as
// the last per-step call would). It reads and changes nothing.
func (ps *Provenances) DecodesLeased(t *BlockTable, req RequestID, computed, end, blockSize int) bool {
	if ps.Plain || t.kvEpoch != ps.clobbers || end <= computed || computed <= 0 {
		return false
	}
	first, last := computed/blockSize, (end-1)/blockSize
	for g := range t.Attn {
		kg := &t.kv0
		if g > 0 {
			if g-1 >= len(t.kvN) {
				return false
			}
			kg = &t.kvN[g-1]
		}
		if !kg.tail.leased || t.st.ps != ps || !kg.tailServes(req, first, last, end, t.covered) {
			return false
		}
	}
	return len(t.Mamba) == 0 || ps.stateLeased(t, req, computed)
}

// MambaSteady is how many of at most k decode steps from numComputed c
// (one token each, no speculation: the steps schedule at c, c+1, ...)
// leave every Mamba group's table of t as the first step's
// RemoveSkippedBlocks leaves it and restore nothing. That first call
// frees the blocks below the walk's top and align's copy source (the
// block behind the boundary, a step after it was crossed); the later
// steps' calls have the same bounds (c is at least one token into its
// block, so c-1 is in it too, and so is every later step's), free
// nothing, and neither does CacheSteady's call at c+k, which therefore
// makes the first step's frees once the stretch is replayed: no step of
// it allocates, so the pool ends as stepping leaves it. Besides,
// AllocateNewBlocks adds nothing (the table ends at c's block),
// CacheBlocks caches nothing before the last step (the blocks before
// c's are cached; the last step may fill c's block, which the caller
// caches as that step would), the step after the frees reads its state
// from the running block, and the running block, the slot the kernels
// read and write, is the table's last. 0 when any group cannot; k with
// no cache mode. The groups' tables have one shape
// (mamba_modes_lockstep.go), so group 0's is read for all.
func (m *KVCacheManager) MambaSteady(t *BlockTable, c, k int) int {
	if len(t.MambaT) == 0 {
		return k
	}
	if m.spec > 0 {
		return 0 // speculative steps move the state columns every step
	}
	if len(m.mamba) == 0 {
		return k
	}
	// The groups share one spec (NewKVCacheManager): its tests, once.
	spec := m.mamba[0].Spec
	b := spec.BlockSize
	cb := c / b // c's block, and c-1's
	if spec.Mode == MambaNone || c == cb*b {
		return 0 // c's step would start a block: the walk's top moves
	}
	mt := &t.MambaT[0]
	n := len(mt.Blocks)
	if !mt.running || n != cb+1 || mt.Blocks[n-1] != t.Mamba[0] || mt.numCached < cb || spec.Mode == MambaAlign && !mt.allocated {
		return 0
	}
	// A copy source is below c's block (the running block is the last),
	// so the first step's call releases it.
	return min(k, (cb+1)*b-c)
}

// CachesNothing reports whether RemoveSkippedBlocks and CacheBlocks of
// t at numComputed tokens would both change nothing, by their first
// tests: the skip bounds are where the last call left them with the
// table unchanged, and every block numComputed fills is cached already.
// After a run of steady steps most rows are so (the run neither filled a
// block nor left one behind), and CacheSteady passes over them.
func (m *KVCacheManager) CachesNothing(t *BlockTable, numComputed int) bool {
	full := numComputed / m.blockSize
	if full > int(t.cachedBlocks) {
		return false
	}
	if m.mamba == nil || t.MambaT == nil {
		return true
	}
	return full <= int(t.mambaCached) && t.skipMemoHolds(numComputed)
}
