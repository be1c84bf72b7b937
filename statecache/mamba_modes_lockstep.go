package statecache

import "slices"

// The Mamba groups of a layout share one MambaSpec (NewKVCacheManagerWith)
// and move in lockstep: the KV cache manager calls every group's manager
// with the same request and token counts (vLLM's coordinator does the
// same, kv_cache_coordinator.py), a hit is one lookup over all of them
// that needs every group cached at its end (MambaHit: cachedAll) and is
// cut alike (the EAGLE drop, the coordinator's rounds), and the
// speculative blocks move alike. So a request's tables have one shape:
// length, null positions, copy source, counts and flags; only the block
// ids differ, and a table's real blocks are distinct (hit blocks have one
// position each, pops come off the free queue), so a block that moves
// (the running block, a speculative one) moves in every group. The
// checks below, syncSlots, MambaSteady and MambaNeedsBlocks read group 0
// and stand for all groups; the per-group work runs only when group 0
// says there is some. syncSlots: a running block never moves in its
// table, so group 0's slot is its running block iff every group's is,
// and the new one is at group 0's position in every group.
// TestMambaGroupsLockstep holds the shape equal and the answers equal to
// asking every group.

// mambaSkipsNothing: RemoveSkippedBlocks with bounds top, src frees
// nothing in any group of t (lockstep: group 0's nulls are every group's).
func (t *BlockTable) mambaSkipsNothing(top, src int, align bool) bool {
	return t.MambaT[0].skipsNothing(top, src, align)
}

// mambaCachesNoBlock: every Mamba group's positions [numCached, full) are
// null (align mode between boundaries), so CacheBlocks' per-group calls
// would only raise num_cached_block; false where CacheFullBlocks would
// refuse the call (too few blocks or hashes).
func (t *BlockTable) mambaCachesNoBlock(full, nHashes int) bool {
	bl := t.MambaT[0].Blocks
	if full > len(bl) || full > nHashes {
		return false
	}
	for _, b := range bl[min(t.MambaT[0].numCached, full):full] {
		if b != NullBlock {
			return false
		}
	}
	return true
}

// MambaCopySourceIndex is the position of every Mamba group's copy
// source in t (align mode; lockstep: group 0's stands for all), −1 when
// none is held: MambaManager.CopySource is each group's block there.
func (m *KVCacheManager) MambaCopySourceIndex(t *BlockTable) int {
	if len(m.mamba) == 0 || len(t.MambaT) == 0 {
		return -1
	}
	return m.mamba[0].copySourceIndex(&t.MambaT[0])
}

// MambaReadsRunning reports whether a step of t from c computed tokens
// reads each Mamba group's state from the group's running block (or
// reads none: c = 0): in align mode there is no copy source still held;
// in all mode the block holding token c−1 is null or the running block.
// Then the backend has no state to restore. True without a Mamba cache
// mode.
func (m *KVCacheManager) MambaReadsRunning(t *BlockTable, c int) bool {
	if len(m.mamba) == 0 || len(t.MambaT) == 0 || c == 0 {
		return true
	}
	mm, mt := m.mamba[0], &t.MambaT[0]
	if mm.Spec.Mode == MambaAlign {
		i := mm.copySourceIndex(mt) // inlined: most rows have none held
		return i < 0 || mt.Blocks[i] == t.Mamba[0]
	}
	held := (c - 1) / mm.Spec.BlockSize
	return held >= len(mt.Blocks) || mt.Blocks[held] == NullBlock || mt.Blocks[held] == t.Mamba[0]
}

// allocateLockstep is AllocateNewBlocks of Mamba groups lo..hi−1, which
// are consecutive in the layout's order, without speculative blocks: the
// decisions once, for every group alike (lockstep), and the groups' new
// blocks (align: the running block, one each; all: one a block the
// tokens reach) popped in one call, group after group, as the groups'
// calls one after another pop them (a pop's eviction changes the table,
// not the queue). False, having changed nothing, where it does not
// apply; AllocateNewBlocks then runs.
func (m *KVCacheManager) allocateLockstep(req RequestID, t *BlockTable, lo, hi, numTokens int) bool {
	mm0 := m.mamba[lo]
	if m.spec != 0 || m.Pool.pc == nil || m.noLockstep || m.fine {
		return false // fine-grained hits: each group copies on write alone
	}
	mt0 := &t.MambaT[lo]
	prev, required := len(mt0.Blocks), mambaCeilDiv(numTokens, mm0.Spec.BlockSize)
	align := mm0.Spec.Mode == MambaAlign
	if !align && mm0.Spec.Mode != MambaAll || align && required < prev {
		return false // AllocateNewBlocks' refusal
	}
	if required <= prev {
		for g := lo; g < hi; g++ {
			mt := &t.MambaT[g]
			mt.running, mt.tokens = true, numTokens
		}
		return true
	}
	per := required - prev // all mode: every new position; align: 1
	if align {
		per = 1
	}
	if n := per * (hi - lo); cap(m.lockstepPop) < n {
		m.lockstepPop = make([]int32, n)
	}
	dst := m.lockstepPop[:per*(hi-lo)]
	m.Pool.getNewBlocksEach(req, m.mambaGroups[lo:hi], per, dst)
	if !align {
		for g := lo; g < hi; g++ {
			mt := &t.MambaT[g]
			mt.Blocks = append(mt.Blocks, dst[(g-lo)*per:(g-lo+1)*per]...)
			mt.running, mt.tokens, mt.held = true, numTokens, mt.held+per
		}
		return true
	}
	for g := lo; g < hi; g++ {
		mt := &t.MambaT[g]
		if mt.allocated || prev > 0 {
			mt.lastState = prev // the last block is the copy source
		}
		mt.srcTokens = mt.tokens
		// Nulls up to the running block's position (required−1 ≥ prev),
		// then the running block: a decode's is the next position.
		if n := len(mt.Blocks); n < required-1 {
			mt.Blocks = slices.Grow(mt.Blocks, required-n)[:required-1]
			clear(mt.Blocks[n:]) // NullBlock is 0 (nullIsZero)
		}
		mt.Blocks = append(mt.Blocks, dst[g-lo])
		mt.running, mt.allocated, mt.tokens, mt.held = true, true, numTokens, mt.held+1
	}
	return true
}

// nullIsZero fails to compile unless NullBlock is 0, which clear writes.
var _ = [1]struct{}{}[NullBlock]

// removeSkippedLockstep is RemoveSkippedBlocks' per-group work without
// speculative blocks where no block it frees is shared (a hit's): the
// positions once, from group 0 (lockstep: its nulls are every group's),
// then each group's blocks freed in group order as its removeSkipped
// frees them, the walk's from the top down, then align's copy source.
// That covers the calls that free anything but a hit's blocks: align's
// copy source a step after its copy, all mode's blocks behind the
// boundaries a chunk crossed. False, having changed nothing, where it
// does not apply.
func (m *KVCacheManager) removeSkippedLockstep(req RequestID, t *BlockTable, top, src int, align bool) (bool, error) {
	if m.spec != 0 || m.Pool.pc == nil || m.noLockstep {
		return false, nil
	}
	bl := t.MambaT[0].Blocks
	hi := min(top, len(bl)) // the walk: positions [lo, hi), down to the first null
	lo := hi
	for lo > 0 && bl[lo-1] != NullBlock {
		lo--
	}
	c := t.MambaT[0].lastState - 1 // align's copy source, unless the walk took it
	if !align || c < 0 || c >= src || c >= len(bl) || (c >= lo && c < hi) || bl[c] == NullBlock {
		c = -1
	}
	st := m.Pool.pc.st
	for g := range t.MambaT {
		bl := t.MambaT[g].Blocks
		for _, b := range bl[lo:hi] {
			if st[b].ref != 1 || st[b].pin != 0 {
				return false, nil // shared (a hit's block) or pinned: the general free
			}
		}
		if c >= 0 && (st[bl[c]].ref != 1 || st[bl[c]].pin != 0) {
			return false, nil
		}
	}
	for g, mm := range m.mamba {
		mt := &t.MambaT[g]
		if err := mm.freePositions(req, mt, lo, hi, t.private); err != nil {
			return true, err
		}
		if c >= 0 {
			if err := mm.freePositions(req, mt, c, c+1, t.private); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// cacheLockstep is CacheBlocks' per-group work without speculative
// blocks: the positions to cache once, from group 0's table (lockstep:
// its nulls are every group's), then each group's blocks there, in group
// order, as its cacheBlocks caches them. False, having changed nothing,
// where it does not apply.
func (m *KVCacheManager) cacheLockstep(req RequestID, t *BlockTable, numTokens int, hashes []BlockHash) (bool, error) {
	mm0, mt0 := m.mamba[0], &t.MambaT[0]
	if mm0.Spec.Mode == MambaNone || m.spec != 0 || m.Pool.pc == nil || m.noLockstep {
		return false, nil
	}
	b := mm0.Spec.BlockSize
	full := numTokens / b
	if mt0.numCached >= full {
		return true, nil // cachesNothing, in every group
	}
	bl := mt0.Blocks
	lo := mt0.numCached
	for lo < full && lo < len(bl) && lo < len(hashes) && bl[lo] == NullBlock {
		lo++
	}
	listed := t.listed(full, m.ListAll)
	for g, mm := range m.mamba {
		mt := &t.MambaT[g]
		if err := m.Pool.cacheFullBlocksListed(req, mm.Group, mt.Blocks, hashes, lo, full, b, listed); err != nil {
			return true, err
		}
		mt.numCached = full
	}
	return true, nil
}
