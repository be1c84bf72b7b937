package statecache

import (
	"fmt"
)

// PrefixRecord is what the cache says a block holds: the provenance a
// reader reached through a prefix hit is checked against. Blocks are
// shared, so it names the writer (the request that took the block off the
// free queue and filled it), not the holders.
type PrefixRecord struct {
	Hash   BlockHash // the token prefix through this block; 0 until cached
	Writer RequestID
	Step   int64 // step it was allocated (Hash 0) or cached
	Group  int32 // KV cache group the block was allocated for; -1 when unknown (Pop)
	Tokens int32 // prefix tokens the hash covers, this block's included; 0 until cached
	Cached bool  // findable by hash now (a private tail's, by its writer: cacheFullBlocksListed)
}

// Serves reports why the block does not hold the prefix a reader needs
// (group g, hash h, covering tokens prefix tokens), or nil when it does.
func (r PrefixRecord) Serves(g int32, h BlockHash, tokens int) error {
	switch {
	case r.Group != g:
		return fmt.Errorf("block of group %d read as group %d", r.Group, g)
	case r.Hash != h || int(r.Tokens) != tokens:
		return fmt.Errorf("block holds prefix %#x of %d tokens (written by request %d at step %d), reader needs %#x of %d",
			uint64(r.Hash), r.Tokens, r.Writer, r.Step, uint64(h), tokens)
	}
	return nil
}

// PrefixCacheStats are vLLM's prefix cache counters (PrefixCacheStats in
// vllm/v1/metrics/stats.py: queries and hits in tokens, preempted requests
// counted apart) plus the pool's own.
type PrefixCacheStats struct {
	Requests, Queries, Hits                            int64
	PreemptedRequests, PreemptedQueries, PreemptedHits int64
	// Evictions: cached blocks whose hash was dropped when the pool
	// popped them for reuse.
	Evictions int64
	// Resets: successful reset_prefix_cache calls.
	Resets int64
}

// Record adds one request's lookup: numTokens queried, numHits served
// from the cache.
func (s *PrefixCacheStats) Record(numTokens, numHits int, preempted bool) {
	if preempted {
		s.PreemptedRequests++
		s.PreemptedQueries += int64(numTokens)
		s.PreemptedHits += int64(numHits)
		return
	}
	s.Requests++
	s.Queries += int64(numTokens)
	s.Hits += int64(numHits)
}

// PrefixCachingHostBytes is what prefix caching adds to a pool of
// numBlocks blocks in host memory, over any number of KV cache groups:
// per block the free queue's backward link, a 64-byte record
// (kvCacheBlock) in place of the 8-byte holder, its 8-byte blockState and
// the table's slot index (blockTable.at), plus the cached-block table's
// slots (8 to 16 a block, tableSlots). TestPrefixCachingHostBytes
// measures it.
func PrefixCachingHostBytes(numBlocks int) int64 {
	const (
		perBlock = 4 + kvCacheBlockBytes - 8 + 8 + 4 // prev; the record, less the holder; blockState; at
		perSlot  = 8                                 // tableSlot: tag, chain head
	)
	return int64(numBlocks)*perBlock + int64(tableSlots(numBlocks))*perSlot
}

// kvCacheBlock is what the pool keeps on one block with prefix caching
// besides its free-queue links and its blockState (vLLM's KVCacheBlock:
// ref_cnt, block_hash), in one 64-byte record: an allocation, an
// eviction or a caching of a block the cache has not seen lately then
// misses once for the record, where separate arrays missed once per
// array. The fields named as PrefixRecord's are the block's PrefixRecord,
// but for Cached (blockState).
type kvCacheBlock struct {
	// Blocks with equal keys (vLLM does not deduplicate: block tables are
	// append-only) form a chain in caching order; a lookup returns the
	// chain's head, as vLLM's BlockHashToBlockMap returns the first
	// inserted of a key's blocks. dupNext ends at noBlock; dupPrev of the
	// head is the tail, so the table keeps only the head.
	dupNext, dupPrev int32
	Group            int32
	Tokens           int32
	Hash             BlockHash
	Writer           RequestID
	Step             int64
	// holder: the request that took it off the free queue, while the
	// block is held (ref > 0); stale once it is free.
	holder RequestID
	run    uint32   // the key's run (keyAt), for a later listing (publish)
	_      [12]byte // to a cache line: records do not straddle lines
}

const kvCacheBlockBytes = 64 // unsafe.Sizeof(kvCacheBlock{}); TestKVCacheBlockSize

// blockState is the part of a block's state that a free, a touch and the
// eviction check at a pop read: kept apart from the record, 8 bytes a
// block, so that freeing a request's blocks (allocated long ago, their
// records long out of the core's caches) reads no record.
type blockState struct {
	ref    int32 // requests holding the block
	cached bool  // findable by hash (a private tail's, by its writer)
	// unlisted: cached (findable in principle) but kept out of the table,
	// because no request but its writer can ever ask for its key (a
	// private tail, cacheFullBlocksListed); publish lists it.
	unlisted bool
	// pin: references a copy-on-write keeps until the step that runs
	// the copy is processed (BlockPool.Pin): they keep the block off the
	// free queue like ref, but name no table, so ref alone counts a
	// block's table entries.
	pin uint16
}

func (c *prefixCache) record(b int32) PrefixRecord {
	r := &c.rec[b]
	return PrefixRecord{Hash: r.Hash, Writer: r.Writer, Step: r.Step, Group: r.Group, Tokens: r.Tokens, Cached: c.st[b].cached}
}

// prefixCache is the pool's prefix-caching state: the blocks' records
// and the table over them.
type prefixCache struct {
	rec       []kvCacheBlock
	st        []blockState
	table     blockTable
	numCached int
	step      int64
	stats     PrefixCacheStats
	sink      int32   // keeps prefetch reads alive
	fresh     []int32 // FreeBlocks' scratch: blocks for the head
	// privateCached, published: PrivateCounts.
	privateCached, published int64
	// extra: partial entries' extra keys (prefix_partial.go); nil
	// without fine-grained hits.
	extra *partialKeys
}

func newPrefixCache(n, groups int) *prefixCache {
	c := &prefixCache{rec: make([]kvCacheBlock, n), st: make([]blockState, n)}
	c.table = newBlockTable(n, groups, c.rec)
	for b := range c.rec {
		c.rec[b] = kvCacheBlock{Group: -1, Writer: NoRequest, holder: NoRequest}
	}
	return c
}

// freeOne queues block b, held once, as freeBlocks queues a block it
// frees: to the head when fresh under FreshToHead, else to the tail.
func (c *prefixCache) freeOne(q *FreeBlockQueue, order FreeOrder, b int32) {
	c.st[b].ref = 0
	if order == FreshToHead && !c.st[b].cached {
		q.PushFront(b)
	} else {
		q.Append(b)
	}
}

// getNewBlocksEach is GetNewBlocks of per blocks for each of groups in
// turn, into dst (len(groups)·per long), in one pop: the caller has
// counted the free blocks.
func (p *BlockPool) getNewBlocksEach(req RequestID, groups []int32, per int, dst []int32) {
	c := p.pc
	c.popN(&p.q, dst)
	gi, left := 0, per // dst[i] is groups[i/per]'s, without the division
	for _, b := range dst {
		if left == 0 {
			gi, left = gi+1, per
		}
		left--
		c.allocated(b, req, groups[gi])
		p.HighWater = max(p.HighWater, b)
	}
}

// popN fills dst from the head of q (len(dst) ≤ q.n), then touches the
// records of the blocks and the table slots of the cached ones, which the
// caller evicts next: reads that do not depend on each other, so that
// their cache misses overlap instead of queueing.
func (c *prefixCache) popN(q *FreeBlockQueue, dst []int32) {
	q.PopLeftN(dst)
	var s int32
	for _, b := range dst {
		s ^= c.readEviction(b)
	}
	c.sink ^= s
}

// prefetchHead reads the records of the next n blocks the queue hands
// out, and the table slots of the cached ones, as popN does for one
// call's blocks: for an allocation over several groups, each popping a
// few blocks. It changes nothing.
func (c *prefixCache) prefetchHead(q *FreeBlockQueue, n int) {
	var s int32
	for b := q.head; n > 0 && b != noBlock; n-- {
		s ^= c.readEviction(b)
		b = q.next[b]
	}
	c.sink ^= s
}

// readEviction reads block b's record and, when b heads a chain in the
// table, the slots its eviction will change: popN's and prefetchHead's
// read of a block about to leave the queue. The two reads do not depend
// on each other, so their misses overlap.
func (c *prefixCache) readEviction(b int32) int32 {
	return c.rec[b].Group ^ c.table.prefetchEntry(b)
}

// freeBlocks is BlockPool.FreeBlocks with prefix caching: every reference
// is dropped (all or nothing), then the blocks left unheld are queued, to
// the tail, or under FreshToHead the cached ones to the tail in order and
// the fresh ones (a request's partial last block, mostly) to the head in
// order. tailFirst takes blocks in reverse (a group's table, which vLLM
// frees reversed) without reversing them in place. It returns the
// references dropped from blocks other requests still hold.
//
// One pass takes the blocks up to the first with another reference (most
// of a table: all of it on a trace that shares nothing): each reference
// drops and the block is linked at the tail as it goes (or set aside for
// the head). That is the two passes' order, because a block listed twice
// has two references at its first listing, so none of these comes again
// but as an error, which cuts them off the tail again and restores them.
// From the first shared block on, two passes: drop every reference, then
// queue each block left unheld at its first listing, after the one
// pass's.
func (c *prefixCache) freeBlocks(q *FreeBlockQueue, order FreeOrder, req RequestID, blocks []int32, tailFirst bool) (int, error) {
	st := c.st
	if len(blocks) == 1 {
		// One block held once (align's copy source, a Mamba table's
		// block): the one pass, without its scratch.
		if b := blocks[0]; b != NullBlock && uint(b) < uint(len(st)) && st[b].ref == 1 && st[b].pin == 0 {
			c.freeOne(q, order, b)
			return 0, nil
		}
	}
	n, last := len(blocks), len(blocks)-1
	at := func(k int) int32 {
		if tailFirst {
			return blocks[last-k]
		}
		return blocks[k]
	}
	fresh := c.fresh[:0]
	start := 0
	i, step := 0, 1
	if tailFirst {
		i, step = last, -1
	}
	toHead := order == FreshToHead
	// The tail in a local (link); oldTail and linked undo it on an error
	// (cutAfter).
	next, prev := q.next, q.prev
	oldTail, tail, linked := q.tail, q.tail, 0
	for ; start < n; start, i = start+1, i+step {
		b := blocks[i]
		if b == NullBlock {
			continue // a Mamba table's skipped positions: most of a long one
		}
		if uint(b) >= uint(len(st)) || st[b].ref != 1 || st[b].pin != 0 {
			break
		}
		s := &st[b]
		s.ref = 0
		if toHead && !s.cached {
			fresh = append(fresh, b)
			continue
		}
		tail = link(next, prev, &q.head, tail, b)
		linked++
	}
	q.tail, q.n = tail, q.n+linked
	shared := 0
	for k := start; k < n; k++ {
		b := at(k)
		if b == NullBlock {
			continue
		}
		if uint(b) < uint(len(st)) && st[b].ref > 0 {
			if st[b].ref > 1 {
				shared++
			}
			st[b].ref--
			continue
		}
		var err error
		if uint(b) >= uint(len(st)) {
			err = fmt.Errorf("block pool: request %d frees invalid block %d", req, b)
		} else {
			err = fmt.Errorf("block pool: request %d frees block %d, which no request holds", req, b)
		}
		// Undo: the one pass's blocks off the tail (their own links are
		// rewritten when they are queued again), the references already
		// dropped back (the holders were never touched).
		q.cutAfter(oldTail, linked)
		for j := range k {
			if u := at(j); u != NullBlock {
				st[u].ref++
			}
		}
		c.fresh = fresh[:0]
		return 0, err
	}
	// Queue each block left unheld at its first listing; a reference of
	// -1 marks one queued in this call (listed twice), until the end.
	for k := start; k < n; k++ {
		b := at(k)
		if b == NullBlock || st[b].ref != 0 || st[b].pin != 0 {
			continue
		}
		st[b].ref = -1
		if toHead && !st[b].cached {
			fresh = append(fresh, b)
		} else {
			q.Append(b)
		}
	}
	for k := start; k < n; k++ {
		if b := at(k); b != NullBlock && st[b].ref < 0 {
			st[b].ref = 0
		}
	}
	q.PrependN(fresh)
	c.fresh = fresh[:0]
	return shared, nil
}

// allocated: b left the free queue for req; a cached b is evicted (vLLM's
// _maybe_evict_cached_block).
func (c *prefixCache) allocated(b int32, req RequestID, group int32) {
	if c.st[b].cached {
		c.uncache(b)
		c.stats.Evictions++
	}
	c.st[b].ref = 1
	r := &c.rec[b]
	r.holder = req
	r.Group, r.Writer, r.Step, r.Hash, r.Tokens = group, req, c.step, 0, 0
}

func (c *prefixCache) uncache(b int32) {
	if c.extra != nil {
		c.dropExtra(b)
	}
	s := &c.st[b]
	if s.unlisted {
		s.cached, s.unlisted = false, false
		c.numCached--
		return
	}
	r := &c.rec[b]
	next := r.dupNext
	if a := c.table.at[b]; a != 0 { // b heads its chain
		if next == noBlock {
			c.table.deleteAt(uint64(a - 1))
		} else {
			c.rec[next].dupPrev = r.dupPrev // the tail
			c.table.slots[a-1].head = next
			c.table.at[next], c.table.at[b] = a, 0
		}
	} else {
		prev := r.dupPrev
		c.rec[prev].dupNext = next
		if next != noBlock {
			c.rec[next].dupPrev = prev
		} else { // b was the tail: the head's dupPrev names it
			head := prev
			for c.table.at[head] == 0 {
				head = c.rec[head].dupPrev
			}
			c.rec[head].dupPrev = prev
		}
	}
	s.cached = false
	c.numCached--
}

// keyOf is the key block b was cached under, run included.
func (c *prefixCache) keyOf(b int32) BlockKey {
	r := &c.rec[b]
	return BlockKey{Hash: r.Hash, Group: r.Group, run: r.run}
}

func (c *prefixCache) insert(b int32, k BlockKey) {
	c.list(b, k)
	c.st[b].cached = true
	c.numCached++
}

// list enters b under k in the table, at the end of k's chain; b's
// record already names k (cacheFullBlocksListed).
func (c *prefixCache) list(b int32, k BlockKey) {
	r := &c.rec[b]
	r.dupNext = noBlock
	if i, ok := c.table.probe(k); ok {
		head := c.table.slots[i].head
		tail := c.rec[head].dupPrev
		c.rec[tail].dupNext = b
		r.dupPrev = tail
		c.rec[head].dupPrev = b
	} else {
		r.dupPrev = b
		c.table.set(i, k, b) // b's record names k (CacheFullBlocks)
	}
}

func (p *BlockPool) mustCache(op string) {
	if p.pc == nil {
		panic("block pool: " + op + " needs prefix caching") // a caller's bug, not bad input
	}
}

// PrefixCaching reports whether the pool caches blocks by hash.
func (p *BlockPool) PrefixCaching() bool { return p.pc != nil }

// NewStepStarts sets the step that records made from now on carry.
func (p *BlockPool) NewStepStarts(step int64) {
	if p.pc != nil {
		p.pc.step = step
	}
}

// GetNewBlocks fills dst with len(dst) blocks from the head of the free
// queue for req's group g, evicting the cached ones (vLLM's
// get_new_blocks). It fails, changing nothing, when too few are free.
func (p *BlockPool) GetNewBlocks(req RequestID, g int32, dst []int32) error {
	if len(dst) > p.q.n {
		return fmt.Errorf("block pool: request %d needs %d blocks, %d free", req, len(dst), p.q.n)
	}
	if p.pc == nil {
		p.q.PopLeftN(dst)
		for _, b := range dst {
			p.take(req, b, g)
		}
		return nil
	}
	c := p.pc
	c.popN(&p.q, dst)
	for _, b := range dst {
		c.allocated(b, req, g)
		p.HighWater = max(p.HighWater, b)
	}
	return nil
}

// Touch takes one more reference to each block a prefix hit found for
// req, taking free ones off the queue (vLLM's touch). Null blocks (a
// sliding window's skipped positions) are passed over.
func (p *BlockPool) Touch(req RequestID, blocks []int32) {
	p.mustCache("touch")
	for _, b := range blocks {
		if b == NullBlock {
			continue
		}
		s := &p.pc.st[b]
		if s.ref == 0 && s.pin == 0 {
			p.q.Remove(b)
			p.pc.rec[b].holder = req
		}
		s.ref++
	}
}

// RefCount is how many requests hold b (prefix caching only).
func (p *BlockPool) RefCount(b int32) int {
	p.mustCache("RefCount")
	return int(p.pc.st[b].ref)
}

// GetCachedBlock looks hashes[pos] up in every group of groups, writing the
// blocks found to dst[i]; it reports false when any group misses (vLLM's
// get_cached_block).
func (p *BlockPool) GetCachedBlock(hashes []BlockHash, pos int, groups []int32, dst []int32) bool {
	if p.pc == nil {
		return false
	}
	for i, g := range groups {
		head := p.pc.table.lookup(keyAt(hashes, pos, g))
		if head == NullBlock {
			return false
		}
		dst[i] = head
	}
	return true
}

// CacheFullBlocks makes blocks[numCached:numFull] of req's group g
// findable: block i gets hashes[i], covering (i+1)·blockSize tokens
// (vLLM's cache_full_blocks). A block that came from a hit keeps its hash,
// which must be the one its position needs; null blocks are passed over.
func (p *BlockPool) CacheFullBlocks(req RequestID, g int32, blocks []int32, hashes []BlockHash, numCached, numFull, blockSize int) error {
	return p.cacheFullBlocksListed(req, g, blocks, hashes, numCached, numFull, blockSize, numFull)
}

// cacheFullBlocksListed is CacheFullBlocks with the blocks at positions
// listed and on cached but left out of the table: a request's private
// tail, whose keys (its own tokens' hashes) no other request can ask for.
// vLLM lists them; a lookup cannot tell the difference, since only the
// writer could ever find them, and it finds them again after a
// preemption because publish lists them first. What it saves is the
// table's insert now and its delete at eviction: on a trace that shares
// nothing, every block's.
func (p *BlockPool) cacheFullBlocksListed(req RequestID, g int32, blocks []int32, hashes []BlockHash, numCached, numFull, blockSize, listed int) error {
	p.mustCache("cache_full_blocks")
	if numCached >= numFull {
		return nil
	}
	if numFull > len(blocks) || numFull > len(hashes) {
		return fmt.Errorf("block pool: request %d caches %d full blocks with %d blocks and %d hashes", req, numFull, len(blocks), len(hashes))
	}
	if lo, hi := numCached, min(numFull, listed); hi-lo > 1 {
		var s int32
		for i := lo; i < hi; i += p.pc.table.stride(i) {
			s ^= p.pc.table.prefetch(keyAt(hashes, i, g))
		}
		p.pc.sink ^= s
	}
	c := p.pc
	for i := numCached; i < numFull; i++ {
		b := blocks[i]
		if b == NullBlock {
			continue
		}
		r := &c.rec[b]
		if c.st[b].cached && c.extra != nil && int(r.Tokens) < (i+1)*blockSize && r.Group == g {
			// A partial entry's block, now full: promoted to the full
			// block's key, its partial entry dropped (cache_full_blocks).
			c.uncache(b)
		}
		if c.st[b].cached {
			if r.Hash != hashes[i] || r.Group != g {
				return fmt.Errorf("block pool: request %d's block %d at position %d is cached as %#x in group %d, position needs %#x in group %d (a wrong block from the prefix cache)",
					req, b, i, uint64(r.Hash), r.Group, uint64(hashes[i]), g)
			}
			continue
		}
		k := keyAt(hashes, i, g)
		// The run too: publish lists an unlisted block by its record.
		r.Group, r.Hash, r.Tokens, r.Step, r.run = g, k.Hash, int32((i+1)*blockSize), c.step, k.run
		if i >= listed {
			c.st[b].cached, c.st[b].unlisted = true, true
			c.numCached++
			c.privateCached++
			continue
		}
		c.insert(b, k)
	}
	return nil
}

// publish lists req's unlisted cached blocks among blocks in the table,
// in order: req is giving them back (a preemption) and will look its own
// prefix up again. A block req freed earlier may since have been evicted
// and cached again by another request as its own tail: that one stays
// unlisted (listing it would change no lookup, only cost a table entry).
func (c *prefixCache) publish(req RequestID, blocks []int32) {
	for _, b := range blocks {
		if b == NullBlock {
			continue
		}
		if r := &c.rec[b]; c.st[b].unlisted && r.Writer == req {
			c.st[b].unlisted = false
			c.list(b, c.keyOf(b))
			c.published++
		}
	}
}

// ResetPrefixCache forgets every hash when no request holds a block, and
// reports whether it did (vLLM's reset_prefix_cache, used by RL flows
// after a weight update). The free queue keeps its order.
func (p *BlockPool) ResetPrefixCache() bool {
	p.mustCache("reset_prefix_cache")
	if p.NumHeld() != 0 {
		return false
	}
	p.pc.table.clear()
	if p.pc.extra != nil {
		clear(p.pc.extra.byKey)
		clear(p.pc.extra.byBlock)
	}
	for b := range p.pc.rec {
		p.pc.rec[b].Hash, p.pc.rec[b].Tokens = 0, 0
		p.pc.st[b].cached, p.pc.st[b].unlisted = false, false
	}
	p.pc.numCached = 0
	p.pc.stats.Resets++
	return true
}

// PrivateCounts are how many blocks were cached out of the table as a
// private tail's (cacheFullBlocksListed) and how many of those were
// listed later (KVCacheManager.Publish), over the pool's life: tests check with them
// that a run exercised the shortcut.
func (p *BlockPool) PrivateCounts() (cached, published int64) {
	if p.pc == nil {
		return 0, 0
	}
	return p.pc.privateCached, p.pc.published
}

// NumCachedBlocks is how many blocks are findable by hash, held or free.
func (p *BlockPool) NumCachedBlocks() int {
	if p.pc == nil {
		return 0
	}
	return p.pc.numCached
}

// Record is what block b holds by the cache's account.
func (p *BlockPool) Record(b int32) PrefixRecord {
	p.mustCache("Record")
	return p.pc.record(b)
}

// Stats are the prefix cache counters so far.
func (p *BlockPool) Stats() PrefixCacheStats {
	if p.pc == nil {
		return PrefixCacheStats{}
	}
	return p.pc.stats
}

// RecordQuery adds one request's lookup to the stats (the KV cache
// manager's get_computed_blocks does, once per scheduled request).
func (p *BlockPool) RecordQuery(numTokens, numHits int, preempted bool) {
	if p.pc != nil {
		p.pc.stats.Record(numTokens, numHits, preempted)
	}
}
