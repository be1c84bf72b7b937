package statecache

import "fmt"

// Partial entries (fine-grained hits, #46384): a block can be found
// from a hash boundary inside it, under the chain hash at that boundary
// (BlockPool.cache_partial_block, vllm/v1/core/block_pool.py @
// 6adad0876). A block not cached yet takes the partial key as its
// primary key (its record's Hash and Tokens); a block already cached
// under a longer prefix keeps that and holds the partial key as its one
// extra key (cached_block_hashes_by_block), which goes with it on
// eviction, promotion and a move. Extra keys exist only on a pool with
// fine-grained hits on (EnablePartialEntries), so every other pool pays
// one nil check on eviction.

// partialKeys are the extra keys: key to block and block to key.
type partialKeys struct {
	byKey   map[BlockKey]int32
	byBlock map[int32]BlockKey
}

// EnablePartialEntries readies the pool for partial entries.
func (p *BlockPool) EnablePartialEntries() {
	p.mustCache("EnablePartialEntries")
	if p.pc.extra == nil {
		p.pc.extra = &partialKeys{byKey: map[BlockKey]int32{}, byBlock: map[int32]BlockKey{}}
	}
}

// fineKey is a hash's key in group g for a lookup or an entry made at a
// hash boundary rather than a block position: partial entries are only
// made on hybrid layouts, whose tables key by hash and group (runs need
// one group).
func fineKey(h BlockHash, g int32) BlockKey { return BlockKey{Hash: h, Group: g} }

// lookupAny is the block cached under k, the primary keys' chain head
// first, then an extra key's block; NullBlock when none.
func (c *prefixCache) lookupAny(k BlockKey) int32 {
	if b := c.table.lookup(k); b != NullBlock {
		return b
	}
	if c.extra != nil {
		if b, ok := c.extra.byKey[BlockKey{Hash: k.Hash, Group: k.Group}]; ok {
			return b
		}
	}
	return NullBlock
}

// dropExtra removes b's extra key, if any (on its eviction, promotion
// or move: _remove_cached_block_hashes takes every key of the block).
func (c *prefixCache) dropExtra(b int32) (BlockKey, bool) {
	if c.extra == nil {
		return BlockKey{}, false
	}
	k, ok := c.extra.byBlock[b]
	if ok {
		delete(c.extra.byBlock, b)
		delete(c.extra.byKey, k)
	}
	return k, ok
}

// CachePartialBlock makes block b of group g, held by req, findable from
// the hash boundary tokens tokens into the prefix whose chain hash there
// is h (cache_partial_block): tokens must not be a multiple of the
// block. A block cached under a shorter prefix gives that entry up; a
// block cached under a longer one (a full block that grew past the
// boundary) keeps it and takes h as its one extra key, in place of an
// older extra (vLLM keeps a set; statesim's blocks hold one, which only
// a block given two partial boundaries would tell apart). A new entry
// is stamped with this step, the same-step rule's mark
// (cached_blocks_this_step). It reports false for the null block only,
// where cache_partial_block returns no hash: a key another block already
// holds is still an entry a lookup finds.
func (p *BlockPool) CachePartialBlock(req RequestID, g, b int32, h BlockHash, tokens int) (bool, error) {
	p.mustCache("cache_partial_block")
	c := p.pc
	if b == NullBlock {
		return false, nil
	}
	if c.extra == nil {
		return false, fmt.Errorf("block pool: request %d caches a partial entry on a pool without fine-grained hits", req)
	}
	k := fineKey(h, g)
	r, s := &c.rec[b], &c.st[b]
	if s.cached && r.Hash == h && r.Group == g {
		return true, nil
	}
	if kb, ok := c.extra.byKey[k]; ok && kb == b {
		return true, nil
	}
	if s.cached && int(r.Tokens) < tokens {
		c.uncache(b) // the shorter entry goes (and any extra with it)
	}
	if !s.cached {
		r.Group, r.Hash, r.Tokens, r.Step, r.run = g, h, int32(tokens), c.step, 0
		c.insert(b, k)
		return true, nil
	}
	if _, taken := c.extra.byKey[k]; taken {
		// Another block holds the key as its extra: vLLM would list both
		// under it, and a lookup finds the first; keep that one.
		return true, nil
	}
	c.dropExtra(b)
	c.extra.byKey[k] = b
	c.extra.byBlock[b] = k
	return true, nil
}

// MoveBlockHashes re-points every key of src to dst, which holds none
// (move_block_hashes): a running request keeps writing src, and the
// cache keeps a copy in dst. dst's record then says what src's said,
// its writer's included, stamped with this step: the copy fills dst
// only as the step runs, so a same-step hit on it waits
// (cached_blocks_this_step).
func (p *BlockPool) MoveBlockHashes(src, dst int32) error {
	p.mustCache("move_block_hashes")
	c := p.pc
	if c.st[dst].cached {
		return fmt.Errorf("block pool: moving block %d's entries onto cached block %d", src, dst)
	}
	if !c.st[src].cached {
		return nil
	}
	rs := c.rec[src]
	extra, hasExtra := c.dropExtra(src)
	c.uncache(src)
	r := &c.rec[dst]
	r.Group, r.Hash, r.Tokens, r.Step, r.run, r.Writer = rs.Group, rs.Hash, rs.Tokens, c.step, 0, rs.Writer
	c.insert(dst, fineKey(rs.Hash, rs.Group))
	if hasExtra {
		c.extra.byKey[extra] = dst
		c.extra.byBlock[dst] = extra
	}
	return nil
}

// CachedUnder is the block a lookup of hash h in group g finds, a
// partial entry's included; NullBlock when none.
func (p *BlockPool) CachedUnder(h BlockHash, g int32) int32 {
	if p.pc == nil {
		return NullBlock
	}
	return p.pc.lookupAny(fineKey(h, g))
}

// queued: block b is on the free queue (no reference, no pin), so a hit
// that touches it takes a free block (_get_num_evictable_blocks).
func (c *prefixCache) queued(b int32) bool { s := &c.st[b]; return s.ref == 0 && s.pin == 0 }

// Pin keeps block b, held or free, off the free queue until Unpin: the
// retained ends of a copy-on-write (_free_cow_retained_blocks), which
// vLLM holds by reference count and statesim apart from the tables'
// references, so that the tables' accounting (SharedRefs) stays theirs.
func (p *BlockPool) Pin(b int32) {
	p.mustCache("pin")
	s := &p.pc.st[b]
	if s.ref == 0 && s.pin == 0 {
		p.q.Remove(b)
	}
	s.pin++
}

// Unpin drops one pin of each of bs, in order, as one free of them
// (free_blocks): those left with neither references nor pins are queued
// as a free queues them, cached ones to the tail in order, and under
// FreshToHead fresh ones to the head in order.
func (p *BlockPool) Unpin(bs ...int32) error {
	p.mustCache("unpin")
	c := p.pc
	for i, b := range bs {
		if c.st[b].pin == 0 {
			for _, u := range bs[:i] {
				c.st[u].pin++
			}
			return fmt.Errorf("block pool: unpinning block %d, which is not pinned", b)
		}
		c.st[b].pin--
	}
	fresh := c.fresh[:0]
	for _, b := range bs {
		s := &c.st[b]
		if s.pin != 0 || s.ref != 0 {
			continue
		}
		s.ref = -1 // queued once, though listed twice
		if p.order == FreshToHead && !s.cached {
			fresh = append(fresh, b)
		} else {
			p.q.Append(b)
		}
	}
	for _, b := range bs {
		if c.st[b].ref < 0 {
			c.st[b].ref = 0
		}
	}
	p.q.PrependN(fresh)
	c.fresh = fresh[:0]
	return nil
}
