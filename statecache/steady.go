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
// leave every Mamba group's table of t as it is and restore nothing:
// RemoveSkippedBlocks frees nothing (the position below the walk's top is
// null already and the top stays put: c is at least two tokens into its
// block, so c-1 is in it too), AllocateNewBlocks adds nothing (the table
// ends at c's block), CacheBlocks caches nothing before the last step (the
// blocks before c's are cached; the last step may fill c's block, which
// the caller caches as that step would), align's copy source is already
// released, and the running block, the slot the kernels read and write,
// is the table's last. 0 when any group cannot; k with no cache mode.
// The groups' tables have one shape (mamba_modes_lockstep.go), so group
// 0's is read for all.
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
	cb, top := c/b, (c-1)/b // c's and c-1's blocks
	if spec.Mode == MambaNone || c-cb*b < 2 {
		return 0
	}
	mt := &t.MambaT[0]
	n := len(mt.Blocks)
	if !mt.running || n != cb+1 || mt.Blocks[n-1] != t.Mamba[0] || mt.numCached < cb {
		return 0
	}
	if spec.Mode == MambaAlign {
		i := mt.lastState - 1
		if !mt.allocated || (i >= 0 && i < n-1 && mt.Blocks[i] != NullBlock) {
			return 0
		}
	}
	if top > 0 && mt.Blocks[top-1] != NullBlock { // top ≤ cb < n
		return 0
	}
	return min(k, (cb+1)*b-c)
}
