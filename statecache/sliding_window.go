package statecache

import (
	"fmt"
	"slices"
)

// Sliding-window KV cache groups with their own block size: the block
// accounting of vLLM's SlidingWindowManager and the parts of the hybrid
// coordinator that touch it (vllm/v1/core/single_type_kv_cache_manager.py,
// kv_cache_coordinator.py, kv_cache_utils.py and kv_cache_interface.py, all
// @ 6adad0876, cited below as stkcm.py, coordinator.py, utils.py and
// interface.py). Such a group arises when a sliding-window layer (a DFlash
// drafter's, qwen3_dflash.py) takes the backend's smallest kernel block and
// the page unification scales it to the common page, which can leave it
// below the Mamba group's block (docs/model.md, "#53142 / #55600").
//
// KVCacheManager drives one per drafter window group (manager.go,
// addWindow), and its lookup joins the HybridCoordinator built by
// NewHybridCoordinatorAt as SlidingWindowHit; it is tested against vLLM's
// own cases (sliding_window_test.go; docs/model.md, "Sliding-window
// groups").

// SlidingWindowSpec is one sliding-window group's spec as its manager and
// the coordinator see it. Token counts throughout are tokens, never blocks
// of another group: a hit's length, the tokens to cache, the skipped
// tokens.
type SlidingWindowSpec struct {
	// BlockSize is the group's own block (kv_cache_spec.block_size after
	// unify_kv_cache_spec_page_size).
	BlockSize int
	// Window is sliding_window, in tokens (≥ 1).
	Window int
	// ExtraRetainedTokens keeps that many tokens below the window alive
	// (not attended) for multi-module MTP re-prefill
	// (SlidingWindowSpec.extra_retained_tokens, interface.py; #50062,
	// merged 2026-08-13). 0 before it and without that drafter.
	ExtraRetainedTokens int
	// HashBlockSize is block_pool.hash_block_size, the granularity of a
	// request's block hashes: the gcd of the groups' block sizes with
	// prefix caching and every Mamba group in align mode, else the
	// scheduler block (resolve_kv_cache_block_sizes, utils.py). It must
	// divide BlockSize. 0: BlockSize.
	HashBlockSize int
	// SchedulerBlockSize is scheduler_block_size, the lcm of every
	// group's block size (utils.py): the hit alignment the cache mask
	// keeps blocks for (cache_blocks passes it as alignment_tokens). A
	// multiple of BlockSize. 0: BlockSize (one group).
	SchedulerBlockSize int
	// HitAlignment is the alignment_tokens the coordinator gives
	// find_longest_cache_hit: hash_block_size when fine-grained hash hits
	// are on (a Mamba align group with a block above hash_block_size and
	// every other manager at the hash block or fine-grained), else
	// scheduler_block_size (HybridKVCacheCoordinator.
	// _cache_hit_alignment_tokens, coordinator.py); block_size under the
	// unitary coordinator. A multiple of BlockSize (the manager asserts
	// it: no fine-grained sliding-window hits). 0: SchedulerBlockSize.
	HitAlignment int
	// Eagle is the manager's use_eagle: its spec group holds an EAGLE/MTP
	// group (verify_and_split_kv_cache_groups, coordinator.py). The cache
	// mask and the hybrid coordinator's tokens to cache follow it; a
	// lookup's drop is the caller's (drop_eagle_block).
	Eagle bool
	// MaxAdmissionBlocks is max_admission_blocks_per_request (#40946,
	// merged 2026-04-26; MaxAdmission gives vLLM's value): the cap
	// on get_num_blocks_to_allocate under apply_admission_cap. 0: none.
	MaxAdmissionBlocks int
}

func (s SlidingWindowSpec) hashBlock() int { return orDefault(s.HashBlockSize, s.BlockSize) }
func (s SlidingWindowSpec) schedBlock() int {
	return orDefault(s.SchedulerBlockSize, s.BlockSize)
}
func (s SlidingWindowSpec) hitAlignment() int { return orDefault(s.HitAlignment, s.schedBlock()) }

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (s SlidingWindowSpec) validate() error {
	switch {
	case s.BlockSize <= 0:
		return fmt.Errorf("sliding window: block size %d", s.BlockSize)
	case s.Window < 1:
		return fmt.Errorf("sliding window: window %d tokens", s.Window)
	case s.ExtraRetainedTokens < 0:
		return fmt.Errorf("sliding window: %d extra retained tokens", s.ExtraRetainedTokens)
	case s.hashBlock() <= 0 || s.BlockSize%s.hashBlock() != 0:
		return fmt.Errorf("sliding window: block size %d is not a multiple of the hash block size %d", s.BlockSize, s.hashBlock())
	case s.schedBlock() <= 0 || s.schedBlock()%s.BlockSize != 0:
		return fmt.Errorf("sliding window: scheduler block size %d is not a multiple of the block size %d", s.schedBlock(), s.BlockSize)
	case s.hitAlignment() <= 0 || s.hitAlignment()%s.BlockSize != 0:
		// SlidingWindowManager.find_longest_cache_hit asserts
		// alignment_tokens % block_size == 0 (stkcm.py).
		return fmt.Errorf("sliding window: hit alignment %d tokens is not a multiple of the block size %d (no fine-grained sliding-window hits)", s.hitAlignment(), s.BlockSize)
	case s.MaxAdmissionBlocks < 0:
		return fmt.Errorf("sliding window: admission cap %d blocks", s.MaxAdmissionBlocks)
	}
	return nil
}

// NumSkippedTokens is get_num_skipped_tokens (stkcm.py): the tokens before
// the window of the next token once numComputed are computed, less the
// extra retained ones: max(0, numComputed − window + 1 − extra).
func (s SlidingWindowSpec) NumSkippedTokens(numComputed int) int {
	return max(0, numComputed-s.Window+1-s.ExtraRetainedTokens)
}

// ContiguousBlocksForHit is _contiguous_blocks_for_hit (stkcm.py): the
// cached blocks a hit must end with, ⌈(window − 1)/block⌉, one more when
// the lookup drops the EAGLE block.
func (s SlidingWindowSpec) ContiguousBlocksForHit(eagle bool) int {
	n := mambaCeilDiv(s.Window-1, s.BlockSize)
	if eagle {
		n++
	}
	return n
}

// MaxAdmission is SlidingWindowSpec.max_admission_blocks_per_request
// (interface.py): ⌈min(window − 1 + extra + maxInFlightTokens,
// maxModelLen)/block⌉ + 1, the most blocks a request holds at once, since
// skipped blocks are freed before each chunk allocates.
func (s SlidingWindowSpec) MaxAdmission(maxInFlightTokens, maxModelLen int) int {
	n := min(s.Window-1+s.ExtraRetainedTokens+maxInFlightTokens, maxModelLen)
	return mambaCeilDiv(n, s.BlockSize) + 1
}

// CacheMask is SlidingWindowManager.reachable_block_mask with no
// retention interval (VLLM_PREFIX_CACHE_RETENTION_INTERVAL unset, the
// default; stkcm.py, #42258 merged 2026-05-15, the EAGLE shift #44082
// merged 2026-06-02): which of positions [start, end) cache_blocks makes
// findable. A hit ends on a multiple of the scheduler block, and the
// right-to-left scan reads only the ContiguousBlocksForHit blocks before
// that end (one past it under EAGLE), so only those positions of each
// scheduler-block segment are cached. nil: every position.
func (s SlidingWindowSpec) CacheMask(start, end int) []bool {
	need := s.ContiguousBlocksForHit(s.Eagle)
	per := s.schedBlock() / s.BlockSize
	if need >= per || start >= end {
		return nil
	}
	shift := 0
	if s.Eagle {
		shift = 1
	}
	mask := make([]bool, end-start)
	for i := start; i < end; i++ {
		mask[i-start] = i >= shift && (i-shift)%per >= per-need
	}
	return mask
}

// HybridCacheTokens is how many of numComputed tokens (computed plus this
// step's, capped at the request's tokens: allocate_slots) the hybrid
// coordinator has this group cache (HybridKVCacheCoordinator.cache_blocks,
// coordinator.py): rounded down to the scheduler block unless fine-grained
// hash hits are on; under EAGLE one block past that boundary, the block a
// dropping lookup reads. Multi-layer MTP's re-prefillable tokens (#50062)
// are taken as 0. The unitary coordinator caches numComputed as it is.
func (s SlidingWindowSpec) HybridCacheTokens(numComputed int, partialHashHits bool) int {
	sb := s.schedBlock()
	aligned := numComputed
	if !partialHashHits {
		aligned = numComputed / sb * sb
	}
	if s.Eagle && aligned > 0 {
		return min(numComputed, numComputed/sb*sb+s.BlockSize)
	}
	return aligned
}

// BlockHashesAt appends to dst the hashes of blocks of blockSize tokens
// from hashes, a request's hashes of hashBlockSize-token blocks
// (BlockHashListWithBlockSize, utils.py): the hashes chain over the whole
// prefix, so a larger block's hash is the hash of its last small block,
// hashes[(i+1)·k − 1] for k = blockSize/hashBlockSize. A partial large
// block has none.
func BlockHashesAt(dst, hashes []BlockHash, hashBlockSize, blockSize int) []BlockHash {
	k := blockSize / hashBlockSize
	for i := k - 1; i < len(hashes); i += k {
		dst = append(dst, hashes[i])
	}
	return dst
}

// SlidingWindowTable is one request's blocks in one sliding-window group
// (req_to_blocks) and the manager's bookkeeping for it. Positions freed
// as out of the window, or skipped by a hit, are NullBlock. The zero
// value is an empty table; Free empties it and keeps its array.
type SlidingWindowTable struct {
	Blocks    []int32
	numCached int  // num_cached_block
	running   bool // in num_cached_block: takes no new hits
	held      int  // real blocks in Blocks
}

// NumCached is num_cached_block: positions cache_blocks has passed.
func (t *SlidingWindowTable) NumCached() int { return t.numCached }

// Held is how many real (non-null) blocks t holds.
func (t *SlidingWindowTable) Held() int { return t.held }

// SlidingWindowManager is one sliding-window KV cache group's manager
// (vLLM's SlidingWindowManager, stkcm.py) over the shared pool, at the
// group's own block size. Per scheduled request and step the caller does
// what KVCacheManager.allocate_slots (kv_cache_manager.py) does, in its
// order: RemoveSkippedBlocks; BlocksToAllocate, summed over every group
// and checked against the free count; AddHitBlocks for a new request with
// a hit (every group before any group allocates); AllocateNewBlocks;
// CacheBlocks. Free when the request finishes or is preempted.
type SlidingWindowManager struct {
	Pool  *BlockPool
	Spec  SlidingWindowSpec
	Group int32
	freed []int32     // RemoveSkippedBlocks' and Free's scratch
	view  []BlockHash // the hashes at the group's block size
	// sharedRefs: references this group's tables hold past each held
	// block's first (a hit on a block someone holds).
	sharedRefs int
}

// NewSlidingWindowManager manages group g under spec over pool.
func NewSlidingWindowManager(pool *BlockPool, spec SlidingWindowSpec, g int32) (*SlidingWindowManager, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	return &SlidingWindowManager{Pool: pool, Spec: spec, Group: g}, nil
}

// SharedRefs is how many of this group's table entries name a block
// another table also names.
func (m *SlidingWindowManager) SharedRefs() int { return m.sharedRefs }

// RemoveSkippedBlocks frees the blocks wholly before the window once
// processed tokens are computed and committed (remove_skipped_blocks and
// _remove_blocks_in_range, stkcm.py): positions below
// min(NumSkippedTokens(processed)/block, len), walking back from the
// highest to the first null, freed in that order (the later block is
// evicted first). Freed positions become null; a freed block with a hash
// stays findable in the free queue. allocate_slots passes the
// processed-token count, computed tokens less those in flight (#47728,
// merged 2026-07-08: before it, the computed tokens).
func (m *SlidingWindowManager) RemoveSkippedBlocks(req RequestID, t *SlidingWindowTable, processed int) error {
	skipped := m.Spec.NumSkippedTokens(processed)
	if skipped <= 0 {
		return nil
	}
	n := min(skipped/m.Spec.BlockSize, len(t.Blocks))
	m.freed = m.freed[:0]
	for i := n - 1; i >= 0 && t.Blocks[i] != NullBlock; i-- {
		m.freed = append(m.freed, t.Blocks[i])
		t.Blocks[i] = NullBlock
	}
	if err := m.release(req, m.freed); err != nil {
		return err
	}
	t.held -= len(m.freed)
	return nil
}

// release frees blocks (ordered by eviction priority) for req, keeping
// the shared-reference count.
func (m *SlidingWindowManager) release(req RequestID, blocks []int32) error {
	return m.Pool.releaseShared(req, blocks, &m.sharedRefs, "sliding-window group", m.Group)
}

// BlocksToAllocate is get_num_blocks_to_allocate (stkcm.py) for a request
// that will hold numTokens tokens, of which totalComputed are computed
// including a new request's hit, whose blocks in this group are hit: a
// running request needs ⌈numTokens/block⌉ less what it holds; a new one
// that less the larger of its skipped blocks and its hit plus held
// blocks, plus the hit's free blocks after the skipped ones (touching
// them uses up free blocks too). admissionCap caps ⌈numTokens/block⌉ at
// Spec.MaxAdmissionBlocks (allocate_slots' full_sequence_must_fit gate
// only). A sliding-window hit is whole blocks, so the partial-hit
// copy-on-write block is never counted here.
func (m *SlidingWindowManager) BlocksToAllocate(t *SlidingWindowTable, numTokens, totalComputed int, hit []int32, admissionCap bool) int {
	required := mambaCeilDiv(numTokens, m.Spec.BlockSize)
	if admissionCap && m.Spec.MaxAdmissionBlocks > 0 {
		required = min(required, m.Spec.MaxAdmissionBlocks)
	}
	if t.running {
		return max(required-len(t.Blocks), 0)
	}
	skippedBlocks := m.Spec.NumSkippedTokens(totalComputed) / m.Spec.BlockSize
	n := max(required-max(skippedBlocks, len(hit)+len(t.Blocks)), 0)
	skipNew := min(max(skippedBlocks-len(t.Blocks), 0), len(hit))
	for _, b := range hit[skipNew:] {
		if b != NullBlock && m.Pool.pc != nil && m.Pool.pc.queued(b) {
			n++
		}
	}
	return n
}

// AddHitBlocks gives a new request its hit in this group, hitTokens long
// (add_local_computed_blocks, stkcm.py): the hit's blocks wholly before
// the window of the hit's end are not taken but stand as nulls, the rest
// are touched. allocate_slots calls it (allocate_new_computed_blocks)
// only when the lookup found blocks in some group, for every group
// before any group allocates, or a pop could evict a hit block not yet
// touched. KV connector tokens are not modelled.
func (m *SlidingWindowManager) AddHitBlocks(req RequestID, t *SlidingWindowTable, hit []int32, hitTokens int) error {
	if t.running {
		return fmt.Errorf("sliding-window group %d: running request %d given a hit", m.Group, req)
	}
	if len(t.Blocks) != 0 {
		return fmt.Errorf("sliding-window group %d: request %d has blocks before its hit", m.Group, req)
	}
	skipped := m.Spec.NumSkippedTokens(hitTokens) / m.Spec.BlockSize
	kept := hit[min(skipped, len(hit)):]
	if len(kept) > 0 {
		if m.Pool.pc == nil {
			return fmt.Errorf("sliding-window group %d: request %d given a hit without prefix caching", m.Group, req)
		}
		for _, b := range kept {
			if b != NullBlock {
				t.held++
				if m.Pool.pc.st[b].ref > 0 {
					m.sharedRefs++
				}
			}
		}
		m.Pool.Touch(req, kept)
	}
	// Every skipped position is null, even past the hit's own blocks.
	for range skipped {
		t.Blocks = append(t.Blocks, NullBlock)
	}
	t.Blocks = append(t.Blocks, kept...)
	t.numCached = len(t.Blocks)
	t.running = true
	return nil
}

// AllocateNewBlocks grows t to ⌈numTokens/block⌉ positions from the head
// of the free queue (allocate_new_blocks, stkcm.py) and returns the new
// positions (t.Blocks' tail, valid until t changes). The caller checked
// BlocksToAllocate against the free count.
func (m *SlidingWindowManager) AllocateNewBlocks(req RequestID, t *SlidingWindowTable, numTokens int) ([]int32, error) {
	n := mambaCeilDiv(numTokens, m.Spec.BlockSize)
	old := len(t.Blocks)
	if n <= old {
		return nil, nil
	}
	t.Blocks = slices.Grow(t.Blocks, n-old)[:n]
	if err := m.Pool.GetNewBlocks(req, m.Group, t.Blocks[old:]); err != nil {
		t.Blocks = t.Blocks[:old]
		return nil, fmt.Errorf("sliding-window group %d: %w", m.Group, err)
	}
	t.held += n - old
	return t.Blocks[old:n], nil
}

// CacheBlocks makes t's blocks that numTokens tokens fill findable
// (SingleTypeKVCacheManager.cache_blocks with the sliding window's mask,
// stkcm.py, and BlockPool.cache_full_blocks): positions
// [num_cached_block, numTokens/block) that CacheMask keeps and that are
// not null get the hash at the group's block size, from hashes at the
// hash block size (BlockHashesAt). numTokens is the coordinator's
// (HybridCacheTokens under the hybrid coordinator). Without prefix
// caching it records nothing.
func (m *SlidingWindowManager) CacheBlocks(req RequestID, t *SlidingWindowTable, numTokens int, hashes []BlockHash) error {
	full := numTokens / m.Spec.BlockSize
	if !m.Pool.PrefixCaching() || t.numCached >= full {
		return nil
	}
	view := m.hashesAt(hashes)
	if full > len(t.Blocks) || full > len(view) {
		return fmt.Errorf("sliding-window group %d: request %d caches %d full blocks with %d blocks and %d hashes of %d tokens", m.Group, req, full, len(t.Blocks), len(view), m.Spec.BlockSize)
	}
	mask := m.Spec.CacheMask(t.numCached, full)
	for lo := t.numCached; lo < full; {
		if mask != nil && !mask[lo-t.numCached] {
			lo++
			continue
		}
		hi := lo + 1
		for mask != nil && hi < full && mask[hi-t.numCached] {
			hi++
		}
		if mask == nil {
			hi = full
		}
		if err := m.Pool.CacheFullBlocks(req, m.Group, t.Blocks, view, lo, hi, m.Spec.BlockSize); err != nil {
			return fmt.Errorf("sliding-window group %d: %w", m.Group, err)
		}
		lo = hi
	}
	t.numCached = full
	t.running = true
	return nil
}

// hashesAt is hashes at the group's block size, in m's scratch.
func (m *SlidingWindowManager) hashesAt(hashes []BlockHash) []BlockHash {
	if m.Spec.hashBlock() == m.Spec.BlockSize {
		return hashes
	}
	m.view = BlockHashesAt(m.view[:0], hashes, m.Spec.hashBlock(), m.Spec.BlockSize)
	return m.view
}

// Free returns t's blocks, tail first (free), and empties t.
func (m *SlidingWindowManager) Free(req RequestID, t *SlidingWindowTable) error {
	m.freed = appendHeldTailFirst(m.freed[:0], t.Blocks, t.held)
	if err := m.release(req, m.freed); err != nil {
		return err
	}
	*t = SlidingWindowTable{Blocks: t.Blocks[:0]}
	return nil
}

// FindLongestCacheHit is SlidingWindowManager.find_longest_cache_hit
// (stkcm.py) over groups, this group and its siblings of the same spec:
// hashes are the request's at the hash block size, viewed at the group's
// block; scanning right to left from ⌊maxLength/block⌋, the first run of
// ContiguousBlocksForHit(drop) blocks cached in every group ends the
// hit, a run starting only where the hit (after the EAGLE drop, when
// drop) would end on a multiple of Spec.HitAlignment; failing that, the
// run reaching position 0 is the hit, cut to the alignment. Under drop
// the last block is then dropped and the hit cut to the alignment again.
// dst[i] gets groups[i]'s blocks, NullBlock before the run. It returns
// the hit in tokens, a multiple of the alignment (the unit the
// coordinator agrees hits in across block sizes, coordinator.py).
func (m *SlidingWindowManager) FindLongestCacheHit(hashes []BlockHash, maxLength int, drop bool, groups []int32, dst [][]int32) int {
	return m.findLongestCacheHitView(m.Pool, m.hashesAt(hashes), maxLength, m.Spec.hitAlignment(), drop, groups, dst) * m.Spec.BlockSize
}

// findLongestCacheHitView is FindLongestCacheHit over view, the hashes
// already at the group's block size, in p with alignment align (the
// coordinator's); it returns the hit in blocks.
func (m *SlidingWindowManager) findLongestCacheHitView(p *BlockPool, view []BlockHash, maxLength, align int, drop bool, groups []int32, dst [][]int32) int {
	s := m.Spec
	bs := s.BlockSize
	need := s.ContiguousBlocksForHit(drop)
	n := min(max(maxLength, 0)/bs, len(view))
	for i := range groups {
		dst[i] = dst[i][:0]
		for range n {
			dst[i] = append(dst[i], NullBlock)
		}
	}
	hit, run, found := 0, 0, false
	for i := n - 1; i >= 0; i-- {
		if !p.cachedAll(view, i, groups) {
			run = 0
			continue
		}
		if run == 0 && bs != align {
			end := i + 1
			if drop {
				end = i
			}
			if end*bs%align != 0 {
				continue
			}
		}
		for j, g := range groups {
			dst[j][i] = p.cachedBlock(view, i, g)
		}
		run++
		if run >= need {
			hit, found = i+run, true
			break
		}
	}
	if !found {
		hit = run
		for hit > 0 && hit*bs%align != 0 {
			hit--
		}
	}
	if drop && hit > 0 {
		hit--
		for hit > 0 && hit*bs%align != 0 {
			hit--
		}
	}
	for j := range groups {
		dst[j] = dst[j][:hit]
	}
	return hit
}
