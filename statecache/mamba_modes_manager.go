package statecache

import (
	"fmt"
	"slices"
)

// MambaTable is one request's blocks in one Mamba group (vLLM's
// req_to_blocks in that group's MambaManager) and the manager's
// bookkeeping for it. Positions the request does not hold are NullBlock.
// The zero value is an empty table; Free empties it and keeps its array.
type MambaTable struct {
	Blocks    []int32
	numCached int // num_cached_block
	// lastState is last_state_block_idx + 1 (0: unset): in align mode
	// the previous step's running block, kept one step as the copy
	// source, or the block a new request's hit restores from.
	lastState int
	allocated bool // in _allocated_block_reqs (align mode)
	running   bool // in num_cached_block: takes no new hits
	// tokens: the state the running block holds once the scheduled step
	// runs covers this many tokens; srcTokens: the copy source's.
	tokens, srcTokens int
	held              int // real blocks in Blocks
	// worker is the model runner's running-state index + 1 (0: none),
	// its mamba_state_idx, kept by the backend (SetWorkerIndex);
	// acceptedReset: the runner set its num_accepted_tokens back to 1
	// after a boundary copy into the running block (ResetAccepted).
	worker        int
	acceptedReset bool
	// runner is the model runner's copy of Blocks (its req_state.
	// block_ids, align mode): a new or resumed request gets the whole
	// table, a running one only the positions an allocation appends
	// (gpu_model_runner.py _update_states: "Append the new blocks to the
	// existing block IDs"), so a position the scheduler nulls (a freed
	// block, a moved speculative block) keeps its old id there.
	runner     []int32
	runnerSent bool
	// freedPrivate: blocks of a private tail freed while the request runs
	// (removeSkipped), perhaps still cached out of the table: a
	// preemption lists those still its (KVCacheManager.Publish).
	freedPrivate []int32
	// partial: a fine-grained partial hit or a published partial tail
	// at position partial−1 (0: none) in block partialSrc, to be copied
	// on write at the next allocation (_partial_hit_reqs), carrying
	// partialTokens tokens' state.
	partial       int
	partialSrc    int32
	partialTokens int
}

// RunnerBlocks is the model runner's view of t: the block ids it was
// sent per position (kept under speculative decoding, K > 0); t.Blocks
// before the first allocation and without speculative blocks.
func (t *MambaTable) RunnerBlocks() []int32 {
	if !t.runnerSent {
		return t.Blocks
	}
	return t.runner
}

// sendRunner gives the runner what allocate_slots returns for t, which
// held prev positions before the allocation: the whole table the first
// time, then the appended tail.
func (t *MambaTable) sendRunner(prev int) {
	if !t.runnerSent {
		t.runner = append(t.runner[:0], t.Blocks...)
		t.runnerSent = true
		return
	}
	if prev < len(t.Blocks) {
		t.runner = append(t.runner, t.Blocks[prev:]...)
	}
}

// WorkerIndex is the model runner's running-state index for t (its
// mamba_state_idx after the last step), -1 when it has none: a new or
// resumed request, or one whose table was freed.
func (t *MambaTable) WorkerIndex() int { return t.worker - 1 }

// SetWorkerIndex records the runner's running-state index.
func (t *MambaTable) SetWorkerIndex(i int) { t.worker = i + 1 }

// ResetAccepted records that the runner set num_accepted_tokens back to 1
// (postprocess_mamba, when the boundary block is the running one): its
// next step reads column 0. TakeAcceptedReset reports it once.
func (t *MambaTable) ResetAccepted() { t.acceptedReset = true }

// TakeAcceptedReset reports and clears ResetAccepted's mark.
func (t *MambaTable) TakeAcceptedReset() bool {
	r := t.acceptedReset
	t.acceptedReset = false
	return r
}

// Holds reports whether block b is one of t's real blocks.
func (t *MambaTable) Holds(b int32) bool {
	return b != NullBlock && slices.Contains(t.Blocks, b)
}

// Held is how many real (non-null) blocks t holds.
func (t *MambaTable) Held() int { return t.held }

// MambaManager is one Mamba KV cache group's manager for one cache mode
// (vLLM's MambaManager, vllm/v1/core/single_type_kv_cache_manager.py @
// 129ab7c6): allocation, the skipped-block frees, hit blocks and caching,
// per request, over the shared pool. vLLM keeps one manager per group;
// so does statesim. The scheduler calls, per scheduled request and group,
// RemoveSkippedBlocks, BlocksToAllocate (all groups summed against the
// free count), AddHitBlocks (every group before any group allocates),
// AllocateNewBlocks and CacheBlocks, as KVCacheManager.allocate_slots
// does; Free when the request finishes or is preempted.
type MambaManager struct {
	Pool  *BlockPool
	Spec  MambaSpec
	Group int32
	freed []int32 // RemoveSkippedBlocks' scratch
	// sharedRefs: references this group's tables hold past each held
	// block's first (a hit on a state block someone holds).
	sharedRefs int
	// kv is the KV cache manager over this group, for fine-grained hits
	// (its hash block and copy queue); nil for a manager on its own.
	kv *KVCacheManager
}

// SharedRefs is how many of this group's table entries name a block
// another table also names.
func (m *MambaManager) SharedRefs() int { return m.sharedRefs }

// release frees blocks (ordered by eviction priority) for req, keeping
// the shared-reference count.
func (m *MambaManager) release(req RequestID, blocks []int32) error {
	return m.Pool.releaseShared(req, blocks, &m.sharedRefs, "mamba group", m.Group)
}

// NewMambaManager manages group g under spec over pool; "align" and
// "all" need a pool that caches by prefix.
func NewMambaManager(pool *BlockPool, spec MambaSpec, g int32) (*MambaManager, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Mode != MambaNone && !pool.PrefixCaching() {
		return nil, fmt.Errorf("mamba cache mode %v needs a pool with prefix caching", spec.Mode)
	}
	return &MambaManager{Pool: pool, Spec: spec, Group: g}, nil
}

// RemoveSkippedBlocks frees the blocks a request no longer needs once
// numComputed tokens are computed (remove_skipped_blocks, with
// get_num_skipped_tokens = numComputed − 1): walking back from the block
// before the one holding the last computed token, up to the first null;
// in align mode also the copy source, one step after it was copied from
// (last_state_block_idx < cdiv(numComputed, B) − 1). Freed positions
// become null; a freed block with a hash stays findable in the free queue.
func (m *MambaManager) RemoveSkippedBlocks(req RequestID, t *MambaTable, numComputed int) error {
	top, src := m.Spec.skipBounds(numComputed)
	return m.removeSkipped(req, t, top, src, false)
}

// skipBounds are RemoveSkippedBlocks' bounds at numComputed: the walk
// starts below position top (the block holding the last skipped token),
// and align's copy source goes once its position is below src.
func (s MambaSpec) skipBounds(numComputed int) (top, src int) {
	if s.Mode == MambaAlign && s.SpecSafeFree {
		// NOTE(tdoublep), #33997: under async scheduling the count may
		// include drafts the step in flight rejects; assume all were.
		numComputed = max(0, numComputed-s.NumSpeculativeBlocks)
	}
	if skipped := numComputed - 1; skipped > 0 {
		top = skipped / s.BlockSize
	}
	return top, mambaCeilDiv(numComputed, s.BlockSize) - 1
}

// skipsNothing: RemoveSkippedBlocks with bounds top, src frees nothing
// from t (most calls: small enough to inline where the KV cache manager
// loops over the groups).
func (t *MambaTable) skipsNothing(top, src int, align bool) bool {
	if i := min(top, len(t.Blocks)) - 1; i >= 0 && t.Blocks[i] != NullBlock {
		return false
	}
	i := t.lastState - 1
	return !align || i < 0 || i >= src || i >= len(t.Blocks) || t.Blocks[i] == NullBlock
}

// removeSkipped is RemoveSkippedBlocks with its bounds (skipBounds).
// private: the blocks belong to a private tail (BlockTable.SetPrivateFrom)
// and are remembered in t.freedPrivate, cached unlisted as they may be.
func (m *MambaManager) removeSkipped(req RequestID, t *MambaTable, top, src int, private bool) error {
	if top > 0 {
		m.freed = m.freed[:0]
		for i := min(top, len(t.Blocks)) - 1; i >= 0 && t.Blocks[i] != NullBlock; i-- {
			m.freed = append(m.freed, t.Blocks[i])
			t.Blocks[i] = NullBlock
		}
		if private {
			t.freedPrivate = append(t.freedPrivate, m.freed...)
		}
		if err := m.release(req, m.freed); err != nil {
			return err
		}
		t.held -= len(m.freed)
	}
	if m.Spec.Mode == MambaAlign && t.lastState > 0 {
		i := t.lastState - 1
		if i < src && i < len(t.Blocks) && t.Blocks[i] != NullBlock {
			one := [1]int32{t.Blocks[i]}
			if private {
				t.freedPrivate = append(t.freedPrivate, one[0])
			}
			if err := m.release(req, one[:]); err != nil {
				return err
			}
			t.Blocks[i] = NullBlock
			t.held--
		}
	}
	return nil
}

// freePositions frees t's blocks at positions [lo, hi), none null and
// each held once by this table, from the top down as removeSkipped's walk
// frees them (the pool's free, tail first): removeSkippedLockstep's free
// of one group.
func (m *MambaManager) freePositions(req RequestID, t *MambaTable, lo, hi int, private bool) error {
	if lo >= hi {
		return nil
	}
	bl := t.Blocks[lo:hi]
	if private {
		for i := len(bl) - 1; i >= 0; i-- {
			t.freedPrivate = append(t.freedPrivate, bl[i])
		}
	}
	if _, err := m.Pool.pc.freeBlocks(&m.Pool.q, m.Pool.order, req, bl, true); err != nil {
		return fmt.Errorf("mamba group %d: %w", m.Group, err)
	}
	clear(bl) // NullBlock is 0 (nullIsZero)
	t.held -= len(bl)
	return nil
}

// mainTokens is the tokens a table is sized for: align mode drops the
// lookahead (num_tokens_main_model), the other modes keep it.
func (m *MambaManager) mainTokens(numTokens, lookahead int) int {
	if m.Spec.Mode == MambaAlign {
		return numTokens - lookahead
	}
	return numTokens
}

// BlocksToAllocate is get_num_blocks_to_allocate for a request that will
// hold numTokens tokens (main model only: draft models have no Mamba
// layers), of which totalComputed are computed including a new request's
// hit, whose blocks in this group are hit. A hit whose state block was
// cached in this very step costs more than the pool holds: the state is
// not written until the step runs, so the request waits a step (PR
// #29387, cached_blocks_this_step).
func (m *MambaManager) BlocksToAllocate(t *MambaTable, numTokens, totalComputed int, hit []int32) int {
	if m.sameStepHit(hit) {
		return m.Pool.NumBlocks() + 1
	}
	b, k := m.Spec.BlockSize, m.Spec.NumSpeculativeBlocks
	if m.Spec.Mode == MambaAlign {
		n := mambaCeilDiv(numTokens, b) + k - len(hit) - len(t.Blocks)
		cow := 0 // the block a partial hit or tail is copied into
		if t.partial != 0 || m.partialHit(hit, totalComputed) {
			cow = 1
			n = max(n, 0) + 1
		}
		if n > 0 {
			n = 1 + k + cow // a first allocation: running block and spec blocks
			if t.allocated {
				n = 1 + cow // the spec blocks move forward, one new block at most
			}
		}
		return max(n, 0) + m.evictable(hit)
	}
	required := mambaCeilDiv(numTokens+b*k, b)
	if t.running {
		return max(required-len(t.Blocks), 0)
	}
	skippedBlocks := 0
	if totalComputed > 1 {
		skippedBlocks = (totalComputed - 1) / b
	}
	n := max(required-max(skippedBlocks, len(hit)+len(t.Blocks)), 0)
	return n + m.evictable(hit[min(max(skippedBlocks-len(t.Blocks), 0), len(hit)):])
}

// evictable counts the free (reference 0) real blocks of hit: touching
// them takes them off the free queue.
func (m *MambaManager) evictable(hit []int32) int {
	n := 0
	for _, b := range hit {
		if b != NullBlock && m.Pool.pc != nil && m.Pool.pc.queued(b) {
			n++
		}
	}
	return n
}

func (m *MambaManager) sameStepHit(hit []int32) bool {
	if len(hit) == 0 || m.Pool.pc == nil {
		return false
	}
	b := hit[len(hit)-1]
	return b != NullBlock && m.Pool.pc.st[b].cached && m.Pool.pc.rec[b].Step == m.Pool.pc.step
}

// AddHitBlocks gives a request that is not running yet its hit in this
// group, covering hitTokens tokens (allocate_new_computed_blocks): the
// blocks before the one holding the last hit token are skipped (null),
// that one is touched. Call it for every new request, hit or not, and for
// every group before any group allocates, or a pop could evict a hit
// block not yet touched.
func (m *MambaManager) AddHitBlocks(req RequestID, t *MambaTable, hit []int32, hitTokens int) error {
	if t.running {
		if len(hit) != 0 {
			return fmt.Errorf("mamba group %d: running request %d given a hit", m.Group, req)
		}
		return nil
	}
	if len(t.Blocks) != 0 {
		return fmt.Errorf("mamba group %d: request %d has blocks before its hit", m.Group, req)
	}
	skipped := 0
	if hitTokens > 1 {
		skipped = min((hitTokens-1)/m.Spec.BlockSize, len(hit))
	}
	if len(hit) > 0 {
		for _, b := range hit[skipped:] {
			if b != NullBlock {
				t.held++
				if m.Pool.pc.st[b].ref > 0 {
					m.sharedRefs++
				}
			}
		}
		m.Pool.Touch(req, hit[skipped:])
	}
	for range skipped {
		t.Blocks = append(t.Blocks, NullBlock)
	}
	t.Blocks = append(t.Blocks, hit[skipped:]...)
	t.numCached = len(t.Blocks)
	t.running = true
	t.tokens = hitTokens
	if m.partialHit(hit, hitTokens) {
		// The hit ends inside its block: copied on write at allocation
		// (add_local_computed_blocks' _partial_hit_reqs entry).
		i := hitTokens / m.Spec.BlockSize
		if i >= len(t.Blocks) || t.Blocks[i] == NullBlock {
			return fmt.Errorf("mamba group %d: request %d's %d-token partial hit holds no block at position %d", m.Group, req, hitTokens, i)
		}
		t.partial, t.partialSrc, t.partialTokens, t.numCached = i+1, t.Blocks[i], hitTokens, i
	}
	return nil
}

// AllocateNewBlocks grows t so that it holds numTokens tokens
// (allocate_new_blocks). "none" and "all" take cdiv(numTokens + B·K, B)
// blocks; "align" takes cdiv(numTokens, B) + K positions, all null but
// the running block and the K speculative blocks: it records the previous
// running block (or a hit's block) as the copy source, pads with nulls to
// the new running position, moves the speculative blocks forward and pops
// the rest (at most one block for a running request). The caller checked
// BlocksToAllocate against the free count.
func (m *MambaManager) AllocateNewBlocks(req RequestID, t *MambaTable, numTokens int) error {
	b, k := m.Spec.BlockSize, m.Spec.NumSpeculativeBlocks
	t.running = true
	if m.Spec.Mode != MambaAlign {
		t.tokens = numTokens
		return m.grow(req, t, mambaCeilDiv(numTokens+b*k, b))
	}
	required := mambaCeilDiv(numTokens, b) + k
	prev := len(t.Blocks)
	if k > 0 {
		defer t.sendRunner(prev) // only the speculative path addresses by it
	}
	partial := t.partial != 0
	if required == prev && !partial {
		t.tokens = numTokens
		return nil
	}
	if required < prev && !partial {
		// vLLM asserts num_required_blocks > len(req_blocks) here, before
		// and after #33997 (whose NOTE only says the count may include
		// drafts since rejected): the engine core stops. The count shrinks
		// only when a row gets fewer tokens than the drafts the step
		// before it rejected (a budget-clipped decode), which no search
		// here has produced (docs/model.md).
		return fmt.Errorf("mamba group %d: request %d needs %d blocks, holds %d: vLLM's MambaManager.allocate_new_blocks asserts num_required_blocks > len(req_blocks) (an AssertionError that stops the engine core: a crash, not silent corruption)", m.Group, req, required, prev)
	}
	switch {
	case t.allocated:
		t.lastState = prev - k // index prev-1-K, plus one
	case prev > 0:
		t.lastState = prev // a hit: its block is the last one
	}
	t.srcTokens = t.tokens
	run := required - k - 1
	for len(t.Blocks) < run {
		t.Blocks = append(t.Blocks, NullBlock)
	}
	if t.allocated {
		for i := prev - k; i < prev && i < run; i++ {
			t.Blocks = append(t.Blocks, t.Blocks[i])
			t.Blocks[i] = NullBlock
		}
	}
	if partial {
		// The copy's block comes first (new_blocks[0]).
		if err := m.copyOnWrite(req, t); err != nil {
			return err
		}
	}
	if err := m.grow(req, t, required); err != nil {
		return err
	}
	t.allocated = true
	t.tokens = numTokens
	return nil
}

// grow pops blocks until t holds n positions.
func (m *MambaManager) grow(req RequestID, t *MambaTable, n int) error {
	d := n - len(t.Blocks)
	if d <= 0 {
		return nil
	}
	old := len(t.Blocks)
	t.Blocks = slices.Grow(t.Blocks, d)[:n]
	if err := m.Pool.GetNewBlocks(req, m.Group, t.Blocks[old:]); err != nil {
		t.Blocks = t.Blocks[:old]
		return fmt.Errorf("mamba group %d: %w", m.Group, err)
	}
	t.held += d
	return nil
}

// CacheBlocks makes t's real blocks that numTokens tokens fill findable
// (cache_blocks, at allocation: before the step writes them). Nulls are
// passed over, so in align mode a state is cached only when the step ends
// exactly on a boundary and the running block is the boundary's. "none"
// caches nothing.
func (m *MambaManager) CacheBlocks(req RequestID, t *MambaTable, numTokens int, hashes []BlockHash) error {
	return m.cacheBlocks(req, t, numTokens, hashes, numTokens/m.Spec.BlockSize)
}

// cacheBlocks is CacheBlocks with positions listed and on cached out of
// the table (BlockTable.SetPrivateFrom).
func (m *MambaManager) cacheBlocks(req RequestID, t *MambaTable, numTokens int, hashes []BlockHash, listed int) error {
	if m.cachesNothing(t, numTokens) {
		return nil
	}
	full := numTokens / m.Spec.BlockSize
	// Nulls cache nothing: start at the first real block (an align
	// table past a prefill chunk is nulls but for two or three blocks,
	// and CacheFullBlocks reads ahead every position's key).
	lo := t.numCached
	for lo < full && lo < len(t.Blocks) && lo < len(hashes) && t.Blocks[lo] == NullBlock {
		lo++
	}
	if err := m.Pool.cacheFullBlocksListed(req, m.Group, t.Blocks, hashes, lo, full, m.Spec.BlockSize, listed); err != nil {
		return err
	}
	t.numCached = full
	return nil
}

// cachesNothing: CacheBlocks(t, numTokens) has nothing to cache (most
// calls: small enough to inline where the KV cache manager loops over
// the groups).
func (m *MambaManager) cachesNothing(t *MambaTable, numTokens int) bool {
	return m.Spec.Mode == MambaNone || t.numCached >= numTokens/m.Spec.BlockSize
}

// Free returns t's blocks, tail first (free), and empties t.
func (m *MambaManager) Free(req RequestID, t *MambaTable) error {
	// Only the real blocks, gathered in one pass that ends at the last
	// of them (held counts them): a finished request's table is nulls
	// but for its last block or two.
	m.freed = appendHeldTailFirst(m.freed[:0], t.Blocks, t.held)
	if err := m.release(req, m.freed); err != nil {
		return err
	}
	*t = MambaTable{Blocks: t.Blocks[:0], runner: t.runner[:0], freedPrivate: t.freedPrivate[:0]}
	return nil
}

// MambaState is what a request's table holds in one Mamba group, for
// provenance checks: the running state's block, and in align mode the
// block the step copies it from.
type MambaState struct {
	// Running is the block the running state is in (after the scheduled
	// step, one covering RunningTokens tokens); NullBlock before the
	// first allocation. RunningIndex is its table position.
	Running       int32
	RunningIndex  int
	RunningTokens int
	// CopySource is, in align mode, the block the worker copies the state
	// from into Running before the step (the previous step's running
	// block, or a hit's block), holding CopySourceTokens tokens' state;
	// NullBlock when the step copies nothing that is still held.
	CopySource       int32
	CopySourceIndex  int
	CopySourceTokens int
	Held             int // real blocks in the table
}

// State reads t.
func (m *MambaManager) State(t *MambaTable) MambaState {
	s := MambaState{Running: NullBlock, CopySource: NullBlock, RunningIndex: -1, CopySourceIndex: -1, Held: t.held}
	if i := m.runningIndex(t); i >= 0 {
		s.Running, s.RunningIndex, s.RunningTokens = t.Blocks[i], i, t.tokens
	}
	if i := m.copySourceIndex(t); i >= 0 {
		s.CopySource, s.CopySourceIndex, s.CopySourceTokens = t.Blocks[i], i, t.srcTokens
	}
	return s
}

// runningIndex is State's RunningIndex, and copySourceIndex its
// CopySourceIndex, without the rest: small enough to inline where the
// backend and the lockstep checks ask per row and group.
func (m *MambaManager) runningIndex(t *MambaTable) int {
	// In align mode a hit alone is not a running block yet: the running
	// block is the fresh one the first allocation pops.
	if i := len(t.Blocks) - 1 - m.Spec.NumSpeculativeBlocks; i >= 0 && (t.allocated || m.Spec.Mode != MambaAlign) {
		return i
	}
	return -1
}

func (m *MambaManager) copySourceIndex(t *MambaTable) int {
	i := t.lastState - 1
	if m.Spec.Mode != MambaAlign || i < 0 || i >= len(t.Blocks) || t.Blocks[i] == NullBlock || i == m.runningIndex(t) {
		return -1
	}
	return i
}

// CopySource is State's CopySource: the block an align-mode step copies
// t's state from, NullBlock when none is held.
func (m *MambaManager) CopySource(t *MambaTable) int32 {
	if i := m.copySourceIndex(t); i >= 0 {
		return t.Blocks[i]
	}
	return NullBlock
}

// MambaSnapshot is a cached state block: which group, which token prefix
// (by hash) and how many tokens the cache says it holds.
type MambaSnapshot struct {
	Block  int32
	Index  int // position in the request's table
	Group  int32
	Hash   BlockHash
	Tokens int32
}

// Snapshots appends the boundary snapshots t holds to dst.
func (m *MambaManager) Snapshots(t *MambaTable, dst []MambaSnapshot) []MambaSnapshot {
	if m.Pool.pc == nil {
		return dst
	}
	for i, b := range t.Blocks {
		if r := m.Pool.pc.rec[b]; b != NullBlock && m.Pool.pc.st[b].cached {
			dst = append(dst, MambaSnapshot{b, i, r.Group, r.Hash, r.Tokens})
		}
	}
	return dst
}
