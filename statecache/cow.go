package statecache

import "slices"

// Fine-grained (partial-block) prefix hits copy blocks on write
// (#46384, v0.28 on): a request whose hit ends inside a block gets a
// private copy of it, and a running request that published a partial
// tail keeps its block while the cache's entry moves to a copy. The
// manager queues the copies as it allocates; the worker runs them
// after zeroing new blocks and before the forward
// (copy_kv_cache_blocks_inplace, vllm/v1/worker/utils.py; called from
// gpu_model_runner.py _update_states and gpu/model_runner.py
// update_requests @ 6adad0876).

// CopyKind says why a block was copied.
type CopyKind uint8

const (
	// CopyPartialHit: a new request's hit ends inside Src, which other
	// requests share; its table holds Dst in Src's place from this step
	// (SingleTypeKVCacheManager._apply_cow).
	CopyPartialHit CopyKind = iota
	// CopyProducer: a running Mamba align request published a partial
	// tail in Src and keeps writing it; the cache's entries move to Dst,
	// which the copy fills before the forward overwrites Src
	// (MambaManager.allocate_new_blocks, BlockPool.move_block_hashes).
	CopyProducer
)

// BlockCopy is one copy-on-write (KVCacheBlockCopy, vllm/v1/core/sched/
// output.py @ 6adad0876): block Src's whole page is copied over block
// Dst. The rest says what the copy is meant to carry, for the checks:
// Hash is the cache entry Writer's record of Src stood for when the copy
// was queued; Tokens the prefix the copy must carry (a partial hit's
// length, a published tail's boundary).
type BlockCopy struct {
	Src, Dst int32
	Group    int32 // the KV cache group (its id in the pool)
	Kind     CopyKind
	Req      RequestID // the request whose allocation queued the copy
	Hash     BlockHash
	Tokens   int32
	Writer   RequestID
}

// cowQueue is the manager's copies not yet taken, and the pinned ends
// of every copy not yet released (stamped with the step that took them,
// -1 before).
type cowQueue struct {
	copies []BlockCopy
	pinned []pinnedEnd
	// made counts the copies queued by kind, over the run.
	made [2]int64
}

type pinnedEnd struct {
	b    int32
	step int64
}

// queue adds c and pins both ends, the source unless srcPinned (an
// attention hit's tail, pinned as the hit's blocks left the queue): the
// source keeps the reference a hit or its writer gave it, the
// destination the extra one (_apply_cow and allocate_new_blocks'
// "source_block.ref_cnt += 1").
func (q *cowQueue) queue(p *BlockPool, c BlockCopy, srcPinned bool) {
	q.copies = append(q.copies, c)
	q.made[c.Kind]++
	if !srcPinned {
		p.Pin(c.Src)
	}
	p.Pin(c.Dst)
	q.pinned = append(q.pinned, pinnedEnd{c.Src, -1}, pinnedEnd{c.Dst, -1})
}

// TakeBlockCopies appends the copies queued since the last call to dst
// (KVCacheManager.take_kv_cache_block_copies) and keeps both ends of
// each pinned until ReleaseBlockCopies passes step: the scheduler's
// _free_cow_retained_blocks fences them at the step that runs the
// copies, so a free in the same pass cannot hand either out again.
func (m *KVCacheManager) TakeBlockCopies(step int64, dst []BlockCopy) []BlockCopy {
	if len(m.cow.copies) == 0 {
		return dst
	}
	// Manager by manager, in group order, each in its own order
	// (take_kv_cache_block_copies drains each manager's list in turn).
	old := len(dst)
	dst = append(dst, m.cow.copies...)
	slices.SortStableFunc(dst[old:], func(a, b BlockCopy) int { return int(a.Group) - int(b.Group) })
	m.cow.copies = m.cow.copies[:0]
	// The pins go in the copies' order, each copy's source then its
	// destination (the retained blocks' order).
	kept := m.cow.pinned[:0]
	for _, e := range m.cow.pinned {
		if e.step >= 0 {
			kept = append(kept, e)
		}
	}
	for _, c := range dst[old:] {
		kept = append(kept, pinnedEnd{c.Src, step}, pinnedEnd{c.Dst, step})
	}
	m.cow.pinned = kept
	return dst
}

// ReleaseBlockCopies unpins the ends of copies taken at steps up to
// processed, in the order they were queued, once that step's output is
// processed (the scheduler's deferred frees, drained in
// update_from_output).
func (m *KVCacheManager) ReleaseBlockCopies(processed int64) error {
	if len(m.cow.pinned) == 0 {
		return nil
	}
	kept, free := m.cow.pinned[:0], m.unpinned[:0]
	for _, e := range m.cow.pinned {
		if e.step < 0 || e.step > processed {
			kept = append(kept, e)
			continue
		}
		free = append(free, e.b)
	}
	m.cow.pinned, m.unpinned = kept, free
	return m.Pool.Unpin(free...)
}

// pinnedOnly counts the blocks held by pins alone: held in the pool but
// in no table, which SharedRefs takes off so that the tables' entries
// still sum to the pool's held blocks plus SharedRefs.
func (m *KVCacheManager) pinnedOnly() int {
	n := 0
	for i, e := range m.cow.pinned {
		if s := &m.Pool.pc.st[e.b]; s.ref == 0 && s.pin > 0 && !pinnedBefore(m.cow.pinned[:i], e.b) {
			n++
		}
	}
	return n
}

func pinnedBefore(es []pinnedEnd, b int32) bool {
	for _, e := range es {
		if e.b == b {
			return true
		}
	}
	return false
}

// CopiesOnWrite counts the copies queued so far: for partial hits, and
// for published partial tails moved off a running request's block.
func (m *KVCacheManager) CopiesOnWrite() (partialHit, producer int64) {
	return m.cow.made[CopyPartialHit], m.cow.made[CopyProducer]
}
