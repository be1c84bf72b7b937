package statecache

import "fmt"

// The KV cache manager's side of fine-grained hits (#46384,
// single_type_kv_cache_manager.py @ 6adad0876): a hit ending inside a
// block hands each group a private copy of that block
// (SingleTypeKVCacheManager._apply_cow, MambaManager.allocate_new_blocks),
// and a prompt's last hash boundary inside a block is cached as a
// partial entry (FullAttentionManager and MambaManager
// _cache_partial_tail_block).

// attnPartial is attention group g's hit block at position hb, the one a
// partial hit ends in; NullBlock when the hit holds none.
func (m *KVCacheManager) attnPartial(g, hb int) int32 {
	if h := m.coord.HitBlocks(m.attnGroup[g]); len(h) > hb {
		return h[hb]
	}
	return NullBlock
}

// attnCopyOnWrite gives attention group g of t, holding the hb full
// blocks of a hitTokens-token hit, a private copy of the shared block the
// hit ends in (allocate_new_blocks' redirect: the copy block first, then
// the rest). The copy pins the shared block and the copy until the step
// that runs it is processed.
func (m *KVCacheManager) attnCopyOnWrite(req RequestID, t *BlockTable, g, hb, hitTokens int) error {
	src := m.attnPartial(g, hb)
	if src == NullBlock {
		return fmt.Errorf("attention group %d: request %d's %d-token hit holds no block at position %d", g, req, hitTokens, hb)
	}
	var dst [1]int32
	if err := m.Pool.GetNewBlocks(req, m.attnGroup[g], dst[:]); err != nil {
		return err // counted: cannot happen
	}
	t.Attn[g] = append(t.Attn[g], dst[0])
	// The entry the block stands for (the hit's prefix, or a longer one
	// the lookup trimmed back to the hit: a full block, a later
	// boundary), and the hit's tokens, which the copy must carry: an
	// entry cached in this step may hold fewer until the forward.
	r := &m.Pool.pc.rec[src]
	m.cow.queue(m.Pool, BlockCopy{Src: src, Dst: dst[0], Group: m.attnGroup[g], Kind: CopyPartialHit, Req: req,
		Hash: r.Hash, Tokens: int32(hitTokens), Writer: r.Writer}, true)
	return nil
}

// attnCachePartialTail caches attention group g's block holding the
// prompt's last hash boundary, when that lies inside a block the table
// holds and numTokens reach it (FullAttentionManager.
// _cache_partial_tail_block; renewed at every caching, a no-op once
// there).
func (m *KVCacheManager) attnCachePartialTail(req RequestID, t *BlockTable, g, numTokens int, hashes []BlockHash) error {
	boundary := t.NumPromptTokens / m.hashBlock * m.hashBlock
	if boundary == 0 || boundary > numTokens || boundary%m.blockSize == 0 || boundary/m.hashBlock > len(hashes) {
		return nil
	}
	bi := boundary / m.blockSize
	if bi >= len(t.Attn[g]) {
		return nil
	}
	_, err := m.Pool.CachePartialBlock(req, m.attnGroup[g], t.Attn[g][bi], hashes[boundary/m.hashBlock-1], boundary)
	return err
}

// partialHit: a new request's hit in this group, of totalComputed
// tokens, ends inside its last block (fine-grained hits only).
func (m *MambaManager) partialHit(hit []int32, totalComputed int) bool {
	return m.kv != nil && m.kv.fine && len(hit) > 0 && totalComputed%m.Spec.BlockSize != 0
}

// copyOnWrite pops the block t's partial entry is copied into, before
// the allocation's other blocks (MambaManager.allocate_new_blocks @
// 6adad0876). A new request's table takes the copy in the shared block's
// place (_apply_cow), the shared block keeping its hit's reference as a
// pin; a running request keeps its block, whose cache entries move to
// the copy (move_block_hashes), which only the pin holds.
func (m *MambaManager) copyOnWrite(req RequestID, t *MambaTable) error {
	i, src := t.partial-1, t.partialSrc
	if i >= len(t.Blocks) || t.Blocks[i] != src {
		return fmt.Errorf("mamba group %d: request %d's partial entry at position %d is block %d, its table holds %d there", m.Group, req, i, src, t.Blocks[min(i, len(t.Blocks)-1)])
	}
	var dst [1]int32
	if err := m.Pool.GetNewBlocks(req, m.Group, dst[:]); err != nil {
		return fmt.Errorf("mamba group %d: %w", m.Group, err)
	}
	r := &m.Pool.pc.rec[src] // the entry, read before a move takes it
	c := BlockCopy{Src: src, Dst: dst[0], Group: m.Group, Kind: CopyPartialHit, Req: req,
		Hash: r.Hash, Tokens: int32(t.partialTokens), Writer: r.Writer}
	st := m.Pool.pc.st
	if t.allocated {
		c.Kind = CopyProducer
		if err := m.Pool.MoveBlockHashes(src, dst[0]); err != nil {
			return err
		}
		m.kv.cow.queue(m.Pool, c, false)
		st[dst[0]].ref-- // the pin alone holds it: the cache's, no table's
	} else {
		m.kv.cow.queue(m.Pool, c, false)
		t.Blocks[i] = dst[0]
		if st[src].ref > 1 {
			m.sharedRefs-- // src leaves the table; the pin keeps it held
		}
		st[src].ref--
	}
	t.partial, t.partialSrc = 0, NullBlock
	return nil
}

// cachePartialTail caches t's block holding the prompt's last hash
// boundary when a step ends exactly there, inside a block
// (MambaManager._cache_partial_tail_block); the request keeps writing
// the block, so its next allocation copies it on write. fine holds the
// request's hashes at the hash block.
func (m *MambaManager) cachePartialTail(req RequestID, t *MambaTable, numTokens, numPrompt int, fine []BlockHash) error {
	b, h := m.Spec.BlockSize, m.kv.hashBlock
	if m.Spec.Mode != MambaAlign || b == h || numTokens%b == 0 || numTokens%h != 0 || numTokens != numPrompt/h*h || numTokens/h > len(fine) {
		return nil
	}
	i := numTokens / b
	if i >= len(t.Blocks) || t.Blocks[i] == NullBlock {
		return nil
	}
	ok, err := m.Pool.CachePartialBlock(req, m.Group, t.Blocks[i], fine[numTokens/h-1], numTokens)
	if err != nil || !ok {
		return err
	}
	t.partial, t.partialSrc, t.numCached = i+1, t.Blocks[i], i
	t.partialTokens = numTokens
	return nil
}

// cacheBlocksFine is CacheBlocks with fine-grained hits
// (HybridKVCacheCoordinator.cache_blocks @ 6adad0876): every group
// caches up to numTokens itself, not a multiple of scheduler_block_size
// (an EAGLE group's one block past it reaches as far), then the prompt's
// partial tail. hashes are at the hash block.
func (m *KVCacheManager) cacheBlocksFine(req RequestID, t *BlockTable, numTokens int, hashes []BlockHash) error {
	for i, w := range m.window {
		if err := w.CacheBlocks(req, &t.Window[i], w.Spec.HybridCacheTokens(numTokens, true), hashes); err != nil {
			return err
		}
	}
	view := m.AtBlock(hashes)
	full := numTokens / m.blockSize
	for g, mm := range m.mamba {
		mt := &t.MambaT[g]
		if !mm.cachesNothing(mt, numTokens) {
			if err := mm.cacheBlocks(req, mt, numTokens, view, t.listed(full, m.ListAll)); err != nil {
				return err
			}
		}
		if err := mm.cachePartialTail(req, mt, numTokens, t.NumPromptTokens, hashes); err != nil {
			return err
		}
	}
	t.mambaCached = int32(min(full, t.mambaCachedFloor()))
	for g := range t.Attn {
		if full > int(t.cachedBlocks) {
			if err := m.Pool.cacheFullBlocksListed(req, m.attnGroup[g], t.Attn[g], view, int(t.cachedBlocks), full, m.blockSize, t.listed(full, m.ListAll)); err != nil {
				return err
			}
		}
		if err := m.attnCachePartialTail(req, t, g, numTokens, hashes); err != nil {
			return err
		}
	}
	t.cachedBlocks = int32(max(full, int(t.cachedBlocks)))
	return nil
}

// mambaCachedFloor is the least num_cached_block over t's Mamba groups
// (a partial tail sets its group's back to the tail's position).
func (t *BlockTable) mambaCachedFloor() int {
	n := int(^uint(0) >> 1)
	for g := range t.MambaT {
		n = min(n, t.MambaT[g].numCached)
	}
	return n
}

// CopyOnWritePending reports whether t's next allocation copies a
// block on write (a running request's published partial tail), so that
// it must run even when t's blocks cover the step.
func (m *KVCacheManager) CopyOnWritePending(t *BlockTable) bool {
	if !m.fine {
		return false
	}
	for g := range t.MambaT {
		if t.MambaT[g].partial != 0 {
			return true
		}
	}
	return false
}
