package statecache

import "fmt"

// RequestID identifies a request; ids are assigned in arrival order, as
// vLLM's engine does.
type RequestID int64

// NoRequest marks a block nobody holds or nobody has written.
const NoRequest RequestID = -1

// NullBlock is the reserved block 0: never handed out.
const NullBlock = 0

// noBlock ends a free-queue link.
const noBlock int32 = -1

// FreeBlockQueue is vLLM's FreeKVCacheBlockQueue (vllm/v1/core/
// kv_cache_utils.py): a doubly linked list of free block ids, in eviction
// order, kept in index arrays so that no operation allocates. The backward
// links exist only when the queue is built removable: Remove (a prefix hit
// on a free cached block takes it out of the middle) is the only operation
// that needs them, and without prefix caching nothing calls it.
type FreeBlockQueue struct {
	next       []int32 // next[b]: the block after b, noBlock at the tail
	prev       []int32 // prev[b]: the block before b; nil unless removable
	head, tail int32
	n          int
}

// NewFreeBlockQueue returns a queue over ids 0..size-1 holding first, ...,
// size-1 in that order.
func NewFreeBlockQueue(size int, first int32, removable bool) *FreeBlockQueue {
	q := &FreeBlockQueue{next: make([]int32, size), head: noBlock, tail: noBlock}
	if removable {
		q.prev = make([]int32, size)
	}
	for b := range q.next {
		q.next[b] = noBlock
		if q.prev != nil {
			q.prev[b] = noBlock
		}
	}
	for b := first; int(b) < size; b++ {
		q.Append(b)
	}
	return q
}

// Len is the number of free blocks.
func (q *FreeBlockQueue) Len() int { return q.n }

// Head is the block PopLeft would return, or -1 when empty.
func (q *FreeBlockQueue) Head() int32 { return q.head }

// PopLeft takes the head; the caller checks Len first.
func (q *FreeBlockQueue) PopLeft() int32 {
	b := q.head
	q.head = q.next[b] // b's own link is rewritten when it is queued again
	if q.head == noBlock {
		q.tail = noBlock
	} else if q.prev != nil {
		q.prev[q.head] = noBlock
	}
	q.n--
	return b
}

// PopLeftN fills dst from the head, len(dst) ≤ Len(): PopLeft's blocks in
// PopLeft's order, with one backward link written, not one a block (a
// pop's walk is a chain of dependent reads; the writes between them were
// extra lines to the core).
func (q *FreeBlockQueue) PopLeftN(dst []int32) {
	b := q.head
	for i := range dst {
		dst[i] = b
		b = q.next[b] // each popped block's own link is rewritten when it is queued again
	}
	q.head = b
	if b == noBlock {
		q.tail = noBlock
	} else if q.prev != nil {
		q.prev[b] = noBlock
	}
	q.n -= len(dst)
}

// Remove takes b, which must be queued, out of the middle (a removable
// queue only).
func (q *FreeBlockQueue) Remove(b int32) {
	unlink(q.prev, q.next, &q.head, &q.tail, b)
	q.prev[b], q.next[b] = noBlock, noBlock
	q.n--
}

// unlink takes b out of a doubly linked list kept in index arrays (the
// free queue, and the prefix cache's chains of equal-key blocks).
func unlink(prev, next []int32, head, tail *int32, b int32) {
	p, n := prev[b], next[b]
	if p == noBlock {
		*head = n
	} else {
		next[p] = n
	}
	if n == noBlock {
		*tail = p
	} else {
		prev[n] = p
	}
}

// Append puts b at the tail (evicted last).
func (q *FreeBlockQueue) Append(b int32) {
	q.tail = link(q.next, q.prev, &q.head, q.tail, b)
	q.n++
}

// AppendN appends bs in order (vLLM's append_n), linking them with the
// tail in a local (link): Append re-reads and re-writes the queue's
// fields for each block.
func (q *FreeBlockQueue) AppendN(bs []int32) {
	next, prev, tail := q.next, q.prev, q.tail
	for _, b := range bs {
		tail = link(next, prev, &q.head, tail, b)
	}
	q.tail = tail
	q.n += len(bs)
}

// link puts b after tail, the last block of a list kept in index arrays
// (noBlock: the list is empty, and b becomes *head; prev nil: no
// backward links), and returns b, the new last: unlink's counterpart,
// for a loop that keeps the tail in a local and writes the queue's tail
// and length once (AppendN, and prefixCache.freeBlocks' one pass, which
// decides block by block which go to the tail and can cut them off
// again, cutAfter).
func link(next, prev []int32, head *int32, tail, b int32) int32 {
	next[b] = noBlock
	if prev != nil {
		prev[b] = tail
	}
	if tail == noBlock {
		*head = b
	} else {
		next[tail] = b
	}
	return b
}

// cutAfter drops the n blocks linked after oldTail, the tail before them,
// once q.tail and q.n count them (their own links are rewritten when they
// are queued again).
func (q *FreeBlockQueue) cutAfter(oldTail int32, n int) {
	if n == 0 {
		return
	}
	q.tail, q.n = oldTail, q.n-n
	if oldTail == noBlock {
		q.head = noBlock
	} else {
		q.next[oldTail] = noBlock
	}
}

// PushFront puts b at the head (taken first).
func (q *FreeBlockQueue) PushFront(b int32) {
	q.next[b] = q.head
	if q.prev != nil {
		q.prev[b] = noBlock
		if q.head != noBlock {
			q.prev[q.head] = b
		}
	}
	if q.head == noBlock {
		q.tail = b
	}
	q.head = b
	q.n++
}

// PrependN puts bs at the head keeping their order, bs[0] first (vLLM's
// prepend_n).
func (q *FreeBlockQueue) PrependN(bs []int32) {
	for i := len(bs) - 1; i >= 0; i-- {
		q.PushFront(bs[i])
	}
}

// AppendTo appends the queue, head to tail, to dst.
func (q *FreeBlockQueue) AppendTo(dst []int32) []int32 {
	for b := q.head; b != noBlock; b = q.next[b] {
		dst = append(dst, b)
	}
	return dst
}

// FreeOrder is where BlockPool.FreeBlocks puts the blocks it frees. vLLM
// changed it three times in 2026 (docs/model.md, "Prefix caching").
type FreeOrder uint8

const (
	// FreeToTail: every freed block to the tail, in the order given
	// (vLLM before PR #42656; with prefix caching off, also #48017 until
	// #51482).
	FreeToTail FreeOrder = iota
	// FreshToHead: freed blocks without a hash to the head (reused
	// first, their order kept), cached blocks to the tail (PR #42656;
	// with prefix caching off every block is fresh, so this is LIFO
	// reuse, as #51482 restored).
	FreshToHead
)

func (o FreeOrder) String() string {
	switch o {
	case FreeToTail:
		return "to-tail"
	case FreshToHead:
		return "fresh-to-head"
	}
	return fmt.Sprintf("FreeOrder(%d)", uint8(o))
}

// BlockPool is vLLM's block pool (vllm/v1/core/block_pool.py): the free
// queue over block ids 1..n-1 plus the holder of every block, which makes
// conservation ("no block leaked or held twice") checkable in O(1) per
// operation. With prefix caching (PoolOptions) blocks also carry reference
// counts and hashes, and freed cached blocks stay findable until popped
// for reuse (prefix_pool.go).
type BlockPool struct {
	// q is the free queue: its links stay in dense arrays of their own
	// (with prefix caching too), so that popping a run of blocks, a
	// chain of dependent reads, walks memory the core's cache holds.
	q FreeBlockQueue
	// holder[b]: NoRequest exactly when b is queued (or the null block);
	// nil with prefix caching, which keeps it in b's record (with prefix
	// caching it is the request that took b off the queue).
	holder    []RequestID
	numBlocks int
	order     FreeOrder
	pc        *prefixCache // nil: prefix caching off
	// HighWater is the highest block id ever handed out.
	HighWater int32
}

// PoolOptions are the pool's switches; the zero value is a pool without
// prefix caching, freeing to the tail (free queue 1, 2, ..., numBlocks-1).
type PoolOptions struct {
	EnablePrefixCaching bool
	FreeOrder           FreeOrder
	// Groups is the KV cache groups that cache blocks by hash in the
	// pool (0: one); it lays the cached-block table out (newBlockTable).
	Groups int
}

// NewBlockPoolWith returns a pool with the given options.
func NewBlockPoolWith(numBlocks int, o PoolOptions) *BlockPool {
	if numBlocks < 2 {
		numBlocks = 2
	}
	p := &BlockPool{numBlocks: numBlocks, order: o.FreeOrder}
	p.q = *NewFreeBlockQueue(numBlocks, 1, o.EnablePrefixCaching)
	if o.EnablePrefixCaching {
		p.pc = newPrefixCache(numBlocks, o.Groups)
		return p
	}
	p.holder = make([]RequestID, numBlocks)
	for i := range p.holder {
		p.holder[i] = NoRequest
	}
	return p
}

// NumBlocks is the pool size including the null block.
func (p *BlockPool) NumBlocks() int { return p.numBlocks }

// NumFree is the free-queue length (with prefix caching, evictable cached
// blocks included, as vLLM's get_num_free_blocks).
func (p *BlockPool) NumFree() int { return p.q.n }

// NumHeld is the number of blocks held by requests.
func (p *BlockPool) NumHeld() int { return p.numBlocks - 1 - p.q.n }

// Holder is the request holding block b, or NoRequest. With prefix caching
// a block can be held by several requests; Holder is the one that took it
// off the free queue.
func (p *BlockPool) Holder(b int32) RequestID {
	if p.pc != nil {
		if p.pc.st[b].ref == 0 {
			return NoRequest
		}
		return p.pc.rec[b].holder
	}
	return p.holder[b]
}

// FreeOrder is where freed blocks go.
func (p *BlockPool) FreeOrder() FreeOrder { return p.order }

// Pop takes the block at the head of the free queue for req (with prefix
// caching, evicting its hash).
func (p *BlockPool) Pop(req RequestID) (int32, error) {
	if p.q.n == 0 {
		return 0, fmt.Errorf("block pool: free queue empty")
	}
	b := p.q.head
	if p.pc != nil {
		if h := p.Holder(b); h != NoRequest {
			return 0, fmt.Errorf("block pool: block %d on the free queue is held by request %d", b, h)
		}
		p.q.PopLeft()
		p.take(req, b, -1)
		return b, nil
	}
	if h := p.holder[b]; h != NoRequest {
		return 0, fmt.Errorf("block pool: block %d on the free queue is held by request %d", b, h)
	}
	p.q.PopLeft()
	p.holder[b] = req // take, inlined by hand: the hot path
	if b > p.HighWater {
		p.HighWater = b
	}
	return b, nil
}

// take records b, just off the queue, as req's.
func (p *BlockPool) take(req RequestID, b int32, group int32) {
	if b > p.HighWater {
		p.HighWater = b
	}
	if p.pc != nil {
		p.pc.allocated(b, req, group)
	} else {
		p.holder[b] = req
	}
}

// Push returns block b, held by req, to the free queue (the tail unless
// the free order says otherwise). With prefix caching it drops one
// reference and b is queued when none is left.
func (p *BlockPool) Push(req RequestID, b int32) error {
	if b <= NullBlock || int(b) >= p.numBlocks {
		return fmt.Errorf("block pool: request %d frees invalid block %d", req, b)
	}
	if p.pc == nil { // the path every run without prefix caching takes
		if h := p.holder[b]; h != req {
			return fmt.Errorf("block pool: request %d frees block %d held by %d", req, b, h)
		}
		p.holder[b] = NoRequest
		if p.order == FreshToHead {
			p.q.PushFront(b)
		} else {
			p.q.Append(b)
		}
		return nil
	}
	one := [1]int32{b}
	return p.FreeBlocks(req, one[:])
}

// FreeBlocks frees blocks, ordered by eviction priority (the first is
// evicted first; a request frees its blocks tail first), as vLLM's
// free_blocks: every reference is dropped, then the blocks no one holds go
// to the queue by the pool's FreeOrder. Null blocks are skipped. Without
// prefix caching each block must be held by req; on an error nothing
// changes.
func (p *BlockPool) FreeBlocks(req RequestID, blocks []int32) error {
	if p.pc != nil {
		_, err := p.pc.freeBlocks(&p.q, p.order, req, blocks, false)
		return err
	}
	if err := p.release(req, blocks); err != nil {
		return err
	}
	if p.order == FreshToHead {
		for i := len(blocks) - 1; i >= 0; i-- {
			if b := blocks[i]; p.freeable(b) {
				p.queue(b, true)
			}
		}
	}
	for _, b := range blocks {
		if p.freeable(b) {
			p.queue(b, false)
		}
	}
	return nil
}

// release drops req's reference to every block, all or nothing (no
// prefix caching: each block must be req's).
func (p *BlockPool) release(req RequestID, blocks []int32) error {
	const releasing RequestID = -2 // marks a block already released in this call
	for i, b := range blocks {
		var err error
		switch {
		case b == NullBlock:
			continue
		case b < 0 || int(b) >= len(p.holder):
			err = fmt.Errorf("block pool: request %d frees invalid block %d", req, b)
		case p.holder[b] != req:
			err = fmt.Errorf("block pool: request %d frees block %d held by %d", req, b, p.holder[b])
		default:
			p.holder[b] = releasing
			continue
		}
		// Undo the references already dropped.
		for _, u := range blocks[:i] {
			if u != NullBlock {
				p.holder[u] = req
			}
		}
		return err
	}
	return nil
}

// freeable: b was released by this FreeBlocks call, not queued yet.
func (p *BlockPool) freeable(b int32) bool {
	return b != NullBlock && p.holder[b] != NoRequest
}

func (p *BlockPool) queue(b int32, front bool) {
	p.holder[b] = NoRequest
	if front {
		p.q.PushFront(b)
	} else {
		p.q.Append(b)
	}
}

// FreeQueue returns the free queue from head to tail (for tests and plots).
func (p *BlockPool) FreeQueue() []int32 {
	return p.q.AppendTo(make([]int32, 0, p.q.n))
}

// releaseCounting frees blocks (ordered by eviction priority) for req
// and returns how many references it dropped from blocks other requests
// still hold (a group manager's shared-reference count; 0 without prefix
// caching, where no block is shared).
func (p *BlockPool) releaseCounting(req RequestID, blocks []int32) (shared int, err error) {
	if len(blocks) == 0 {
		return 0, nil // most steps free nothing
	}
	if p.pc == nil {
		return 0, p.FreeBlocks(req, blocks)
	}
	return p.pc.freeBlocks(&p.q, p.order, req, blocks, false)
}

// releaseShared frees blocks for req and takes the references it drops
// from blocks still held off *sharedRefs, a group manager's count of
// table entries past each block's first (a table's real blocks are
// distinct, so each is one table entry); errors name the group.
func (p *BlockPool) releaseShared(req RequestID, blocks []int32, sharedRefs *int, kind string, g int32) error {
	shared, err := p.releaseCounting(req, blocks)
	if err != nil {
		return fmt.Errorf("%s %d: %w", kind, g, err)
	}
	*sharedRefs -= shared
	return nil
}

// appendHeldTailFirst appends the real (non-null) blocks of a table to
// dst, last first, stopping once held of them are gathered: a finishing
// request's free, tail first, of a table that is nulls but for its last
// few blocks.
func appendHeldTailFirst(dst, blocks []int32, held int) []int32 {
	for i, n := len(blocks)-1, 0; i >= 0 && n < held; i-- {
		if b := blocks[i]; b != NullBlock {
			dst = append(dst, b)
			n++
		}
	}
	return dst
}
