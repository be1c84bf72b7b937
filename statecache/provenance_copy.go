package statecache

// A copy-on-write (BlockCopy) moves a whole page: the destination's
// record becomes the source's. Either end may be leased: the source by
// its writer's table (a producer's running block, a partly filled KV
// tail), the destination by whatever table last leased it. Both are
// settled first, so the copy reads the true record and no lease goes on
// describing bytes the copy replaced.
//
// Verified full KV blocks (the check cache of AccessKV) are not leases
// and are not invalidated here: a copy's destination comes off the free
// queue (get_new_blocks in _apply_cow and allocate_new_blocks,
// single_type_kv_cache_manager.py @ 6adad0876), so no table holds it.

// CopyBlock copies block src's record over block dst's at step.
func (ps *Provenances) CopyBlock(src, dst int32, step int64) {
	ps.PutCopy(dst, ps.Get(src), step)
}

// PutCopy makes block dst hold p, a record read (Get) from a copy's
// source, as written by a copy at step: the worker gathers every
// source's page before it writes any destination
// (copy_kv_cache_blocks_inplace, vllm/v1/worker/utils.py @ 6adad0876:
// blocks[dst] = blocks[src]), so a step's copies read their sources
// first and put them afterwards.
func (ps *Provenances) PutCopy(dst int32, p Provenance, step int64) {
	d := ps.touch(dst)
	if !p.Clobber {
		// Intended names the slot a wrapped write was meant for; the
		// copy of clobbered bytes still names it.
		p.Intended = dst
	}
	p.leased = false
	p.Step = step
	*d = p
}
