package statecache

// Fine-grained lookups (#46384; single_type_kv_cache_manager.py @
// 6adad0876): with enable_partial_hash_hits the alignment is the hash
// block h, below the full-attention and Mamba groups' block B, and both
// finders read the request's hashes at h. Hits are in tokens, multiples
// of h; a hit that ends inside a block holds that block too, to be
// copied on write at allocation.

// fineAttentionHit is FullAttentionManager.find_longest_cache_hit in
// fine-grained mode, over hashes at h (fine) and their view at B: phase
// 1, the run of cached full blocks from the start; phase 2, the first
// block past it probed at its interior hash boundaries, longest first;
// then under drop the EAGLE drop of one hash block ("the tail block's KV
// is append-only, so it still covers the reduced length"), and the
// blocks past the hit's last token trimmed. It returns the hit in tokens.
func fineAttentionHit(p *BlockPool, fine, view []BlockHash, maxLength, h, bs int, groups []int32, dst [][]int32, drop bool) int {
	n := FullAttention{Block: bs}.FindLongestCacheHit(p, view, maxLength, bs, groups, dst)
	hit := n * bs
	scale := bs / h
	first := n * scale
	for u := min(first+scale-1, maxLength/h, len(fine)) - 1; u >= first; u-- {
		if p.fineCachedInto(fine[u], groups, dst) {
			hit = (u + 1) * h
			break
		}
	}
	if drop && hit > 0 {
		hit -= min(h, bs)
	}
	keep := mambaCeilDiv(hit, bs)
	for j := range dst {
		dst[j] = dst[j][:min(keep, len(dst[j]))]
	}
	return hit
}

// fineMambaHit is MambaManager.find_longest_cache_hit in fine-grained
// mode: every hash boundary up to maxLength, right to left; the first
// cached in every group wins, its block at the position holding its last
// token, nulls before it. It returns the hit in tokens.
func fineMambaHit(p *BlockPool, fine []BlockHash, maxLength, h, bs int, groups []int32, dst [][]int32) int {
	for j := range dst {
		dst[j] = dst[j][:0]
	}
	scale := bs / h
	for u := min(maxLength/h, len(fine)) - 1; u >= 0; u-- {
		if !p.fineCachedInto(fine[u], groups, dst) {
			continue
		}
		bi := u / scale
		for j := range dst {
			b := dst[j][0]
			dst[j] = dst[j][:0]
			for range bi {
				dst[j] = append(dst[j], NullBlock)
			}
			dst[j] = append(dst[j], b)
		}
		return (u + 1) * h
	}
	return 0
}

// fineCachedInto appends the block cached under h (partial entries
// included) in each of groups to dst[j], all or nothing.
func (p *BlockPool) fineCachedInto(h BlockHash, groups []int32, dst [][]int32) bool {
	if p.pc == nil {
		return false
	}
	for j, g := range groups {
		b := p.pc.lookupAny(fineKey(h, g))
		if b == NullBlock {
			for i := range j {
				dst[i] = dst[i][:len(dst[i])-1]
			}
			return false
		}
		dst[j] = append(dst[j], b)
	}
	return true
}

// lookUpFine is lookUp for a fine-grained rule above the hash block (full
// attention, a Mamba group in align mode): the hit in tokens, and false
// for any other rule. Under the EAGLE drop full attention looks one hash
// block past the candidate and drops it; the Mamba group gets no margin
// and never drops (kv_cache_coordinator.py @ 6adad0876, "No margin for
// mamba").
func (c *HybridCoordinator) lookUpFine(i int, p *BlockPool, hashes []BlockHash, cur, maxLength int, eagle bool) (int, bool) {
	r := c.rules[i]
	bs := r.Rule.BlockSize()
	if bs == c.hashBlock {
		return 0, false
	}
	dst := c.dst[i]
	for j, g := range r.Groups {
		dst[j] = c.hit[g]
	}
	hit := 0
	switch r.Rule.(type) {
	case FullAttention:
		ceiling := cur
		if eagle {
			ceiling = min(cur+c.hashBlock, maxLength)
		}
		if ceiling > 0 {
			hit = fineAttentionHit(p, hashes, c.view(i, bs, hashes), ceiling, c.hashBlock, bs, r.Groups, dst, eagle)
		} else {
			for j := range dst {
				dst[j] = dst[j][:0]
			}
		}
	case MambaHit:
		hit = fineMambaHit(p, hashes, cur, c.hashBlock, bs, r.Groups, dst)
	default:
		return 0, false
	}
	for j, g := range r.Groups {
		c.hit[g] = dst[j]
	}
	c.looked[i] = true
	c.ruleHit[i] = hit
	return hit, true
}
