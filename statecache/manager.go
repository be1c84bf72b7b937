package statecache

import (
	"errors"
	"fmt"
	"slices"

	"statesim/model"
)

// BlockTable is one request's blocks in every KV cache group: a growing
// list per attention group and one block (its state slot) per Mamba group.
type BlockTable struct {
	// NumPromptTokens is the request's prompt length, which the caller
	// sets: fine-grained hits cache the prompt's last hash boundary.
	NumPromptTokens int
	Attn            [][]int32
	Mamba           []int32 // 0 (the null block) until allocated
	// Spec are the K speculative state blocks of each Mamba group under
	// speculative decoding (MambaSpec.num_speculative_blocks, mamba cache
	// mode none): Spec[g*K+j-1] is column j of group g, Mamba[g] column 0.
	// Nil without speculative decoding.
	Spec []int32
	// MambaT: with a Mamba cache mode (align, all), each Mamba group's
	// table of blocks; Mamba[g] is then its running block, the one the
	// step's kernels write.
	MambaT []MambaTable
	// Window: each sliding-window group's table, at that group's own
	// block size (a DFlash drafter's; nil without one).
	Window []SlidingWindowTable

	// covered: tokens every group's blocks hold room for (0 until the
	// first allocation, and after Free); held: blocks in the table.
	covered int
	held    int
	// Check caches (see Provenances), inline for the first attention
	// group so that a decode stays within the table: the clobber count
	// the KV checks were made at, per group the verified blocks and the
	// leased last block, and the state lease.
	kvEpoch uint64
	kv0     kvGroup
	kvN     []kvGroup // groups 1..
	st      lease
	// Prefix caching: the leading blocks (in every attention group) that
	// came from a hit, written by another request, and how many leading
	// blocks are findable by hash (vLLM's num_cached_block).
	hitBlocks, cachedBlocks int32
	// attnHitBlocks: how many of the hit blocks the attention groups'
	// hit held; fewer than hitBlocks only when the EAGLE drop cut the
	// attention hit and the Mamba hit did not follow (#53912).
	attnHitBlocks int32
	// hitChecked: the hit blocks' reads have been checked (HitChecked);
	// hitSeen: the step of the last check, −1 before the first.
	hitChecked bool
	hitSeen    int64
	// skipMemo: the last RemoveSkippedBlocks left nothing to free for a
	// numComputed in (lo, hi], one block's span over which the walk's top
	// (and align's copy-source bound, equal to it) stays put, with group
	// 0's table n long and its copy source at last. A call in that span
	// on a table of that shape frees nothing either (most calls: a decode
	// within its block): a table changes only by an allocation, which
	// moves its length or its copy source, or by Free, which clears the
	// memo. Not kept in align mode with speculative blocks, which move in
	// place.
	skipMemo struct{ lo, hi, n, last int }
	// mambaCached: every Mamba group's num_cached_block is at least this
	// (it only grows until Free), so CacheBlocks of no more full blocks
	// skips the loop over the groups (most calls: a decode within a block).
	mambaCached int32
	// private: blocks from position privateFrom on hold tokens no other
	// request can share (SetPrivateFrom), so they are cached unlisted.
	private     bool
	privateFrom int32
}

// SetPrivateFrom says that the request's blocks from position block on
// hold its own tokens only: a prompt tail and output no other request
// has, whose hashes only this request, after a preemption, could look
// up. Until Free they are cached out of the pool's table
// (BlockPool.cacheFullBlocksListed); KVCacheManager.Publish lists them.
func (t *BlockTable) SetPrivateFrom(block int) {
	t.private, t.privateFrom = true, int32(max(block, 0))
}

// listed is where t's unlisted positions start, of full cached ones.
func (t *BlockTable) listed(full int, all bool) int {
	if !t.private || all {
		return full
	}
	return int(t.privateFrom)
}

// HitBlocks is how many leading blocks of each attention group t reached
// through a prefix hit: their K/V was written by another request.
func (t *BlockTable) HitBlocks() int { return int(t.hitBlocks) }

// AttnHitBlocks is how many leading blocks the attention groups' hit
// itself supplied: HitBlocks() unless the Mamba groups' hit ran past the
// attention hit the EAGLE drop left (#53912), the rest being fresh blocks.
func (t *BlockTable) AttnHitBlocks() int { return int(t.attnHitBlocks) }

// HitChecked reports whether a reader has checked t's hit blocks against
// what they hold; MarkHitChecked sets it. Held blocks are written by
// no one once full, so one check per hit suffices, but for a wrapped
// write's, which clears it (resetKV).
func (t *BlockTable) HitChecked() bool { return t.hitChecked }

// MarkHitChecked records that t's hit blocks were checked at step, and
// returns the step of the check before, −1 if none: a block last written
// by then held the same bytes at that check, which reported any damage
// (the reader carries it from there, as with its own blocks).
func (t *BlockTable) MarkHitChecked(step int64) (seen int64) {
	seen = t.hitSeen
	t.hitChecked, t.hitSeen = true, step
	return seen
}

// Covered is how many tokens t's blocks have room for in every group, as
// of its last Allocate (0 when unknown): a schedule of up to that many
// tokens needs no new block.
func (t *BlockTable) Covered() int { return t.covered }

// kvGroup is attention group g's check cache.
func (t *BlockTable) kvGroup(g int) *kvGroup {
	if g == 0 {
		return &t.kv0
	}
	for len(t.kvN) < len(t.Attn)-1 {
		// A group's cache created after a hit starts past the hit blocks,
		// as resetKV leaves the existing ones.
		t.kvN = append(t.kvN, kvGroup{ok: t.hitBlocks})
	}
	return &t.kvN[g-1]
}

// resetKV forgets every verified KV block (leases stay). Hit blocks are
// not the request's own K/V: the KV check starts after them, and they are
// checked against their prefix records instead (HitChecked).
func (t *BlockTable) resetKV() {
	t.kv0.ok = t.hitBlocks
	for i := range t.kvN {
		t.kvN[i].ok = t.hitBlocks
	}
	t.hitChecked = false
}

// Slot is the request's state slot in Mamba group g.
func (t *BlockTable) Slot(g int) int32 { return t.Mamba[g] }

// Column is column j of Mamba group g's 1 + K state blocks (column 0 is
// Slot(g)); k is K.
func (t *BlockTable) Column(g, j, k int) int32 {
	if j == 0 {
		return t.Mamba[g]
	}
	return t.Spec[g*k+j-1]
}

// KVCacheManager allocates and frees block tables against one pool, in
// vLLM's order: groups in layout order, blocks from the queue head; on free,
// each group's blocks reversed to the tail.
type KVCacheManager struct {
	Pool      *BlockPool
	blockSize int
	nAttn     int
	nMamba    int
	// order is the layout's group order as (kind, index within kind):
	// allocation and free follow it, so slot ids match vLLM's.
	order []groupRef
	// With prefix caching: the hit lookup over every group (a Mamba
	// mode joins as one more HitGroup), and each attention group's id in
	// the pool's table (its place in the layout).
	coord     *HybridCoordinator
	attnGroup []int32
	// blockwiseFree: free through Pool.FreeBlocks, group by group, so
	// that the free order (FreshToHead) sees a group's blocks at once.
	blockwiseFree bool
	// spec is num_speculative_blocks (K): each Mamba group holds 1 + K
	// blocks per request.
	spec int
	// specFree: freeBlockwise's scratch for one Mamba group's 1 + K
	// blocks, so that a finishing request allocates nothing.
	specFree []int32
	// sharedRefs: table entries beyond each held block's first (a hit on
	// a block someone holds), so that the tables' sum of blocks equals
	// the pool's held blocks plus this.
	sharedRefs int
	// mamba: with a Mamba cache mode, one manager per Mamba group (vLLM
	// keeps one MambaManager per KV cache group); nil otherwise.
	mamba []*MambaManager
	// window: one manager per sliding-window group, at its own block
	// size; hashBlock is hash_block_size, the granularity of the hashes
	// the callers pass (the gcd of the groups' blocks), which the other
	// groups read at blockSize (atBlock, viewB its scratch).
	window    []*SlidingWindowManager
	hashBlock int
	viewB     []BlockHash
	// lockstepPop: allocateLockstep's scratch; mambaGroups: each Mamba
	// group's id in the pool.
	lockstepPop []int32
	mambaGroups []int32
	// noLockstep turns the lockstep shortcuts that allocate, cache and
	// free (mamba_modes_lockstep.go) off: each group on its own, the
	// reference the tests hold them to.
	noLockstep bool
	// dropped: attention hit tokens the lookups gave up because no Mamba
	// state was cached at their end (VLLM-FACTS-CURRENT §2.3, known
	// limits of align).
	dropped int64
	// ListAll lists every cached block in the table, private tails too
	// (SetPrivateFrom ignored): vLLM's table as it is, the reference the
	// tests hold the shortcut to.
	ListAll bool
	// fine: fine-grained (partial-block) hits are on (#46384,
	// enable_partial_hash_hits); cow holds their copies-on-write.
	fine bool
	cow  cowQueue
	// unpinned: ReleaseBlockCopies' scratch.
	unpinned []int32
	// uncached: the last lookup's num_uncached_common_prefix_tokens.
	uncached int
}

// SharedRefs is how many table entries name a block another table also
// names (the references past each held block's first): with prefix
// caching, the blocks in every table sum to Pool.NumHeld() + SharedRefs().
func (m *KVCacheManager) SharedRefs() int {
	n := m.sharedRefs
	for _, mm := range m.mamba {
		n += mm.sharedRefs
	}
	for _, w := range m.window {
		n += w.SharedRefs()
	}
	if len(m.cow.pinned) > 0 {
		n -= m.pinnedOnly()
	}
	return n
}

// ManagerOptions are vLLM's cache switches the manager follows.
type ManagerOptions struct {
	EnablePrefixCaching bool
	FreeOrder           FreeOrder
	// NumSpeculativeBlocks is K under speculative decoding: a request
	// holds 1 + K state blocks in each Mamba group (vLLM's MambaSpec
	// num_speculative_blocks, mamba_cache_mode none).
	NumSpeculativeBlocks int
	// MambaCacheMode is the Mamba groups' mode with prefix caching on
	// (align or all; see ResolveMambaCacheMode).
	MambaCacheMode MambaCacheMode
	// SpecSafeFree: align mode frees on num_computed_tokens − K (#33997).
	SpecSafeFree bool
	// UseEagle: MTP or EAGLE drafts (speculative_config.use_eagle()), so
	// the hit lookup drops the last matched attention block; EagleMamba
	// is how the Mamba groups' lookup treats that drop (#53912).
	UseEagle   bool
	EagleMamba EagleMamba
	// KeepAttentionOnMiss: closed PR #47491 (never merged): a Mamba
	// group's miss leaves the attention hit standing.
	KeepAttentionOnMiss bool
	// ConnectorMaxHit: a KV connector on a hybrid whose local hit is the
	// maximum over groups with no external tokens behind it (#44243
	// without #48425; sched.ConnectorHit).
	ConnectorMaxHit bool
	// SlidingWindow is the sliding-window groups' window in tokens (a
	// DFlash drafter's layers, model.Group.BlockSize their block);
	// HashBlockSize and SchedulerBlockSize are hash_block_size and
	// scheduler_block_size (model.HashBlockSize, SchedulerBlockSize), 0
	// for the layout's block.
	SlidingWindow      int
	HashBlockSize      int
	SchedulerBlockSize int
	// PartialHashHits: the release has fine-grained hits (#46384), which
	// the coordinator then turns on where the layout allows
	// (enable_partial_hash_hits); without it every hit is a multiple of
	// scheduler_block_size.
	PartialHashHits bool
}

// ErrHybridPrefixCaching is the refusal for a hybrid model with prefix
// caching and no Mamba cache mode: vLLM never runs that pair
// (VLLM-FACTS-CURRENT §2.1: prefix caching on resolves to align or all).
var ErrHybridPrefixCaching = errors.New("prefix caching on a hybrid model needs mamba_cache_mode align or all")

// ErrSpecMambaPrefixCaching: speculative blocks in all mode are not
// modelled; vLLM treats all + spec decode as broken (#39809) and resolves
// a spec run's mode to align since #40454.
var ErrSpecMambaPrefixCaching = errors.New("speculative decoding with mamba_cache_mode all is not modelled (vLLM picks align for spec decode since #40454; all + MTP was broken, #39809): use mamba_cache_mode align")

type groupRef struct {
	mamba  bool
	window bool // a sliding-window group (mamba false)
	i      int
}

// NewKVCacheManager builds a manager for a layout over numBlocks blocks,
// without prefix caching, freeing to the tail.
func NewKVCacheManager(l *model.Layout, numBlocks int) *KVCacheManager {
	m, _ := NewKVCacheManagerWith(l, numBlocks, ManagerOptions{})
	return m
}

// NewKVCacheManagerWith builds a manager with vLLM's cache switches.
// Prefix caching covers attention groups only; a layout with Mamba groups
// is refused (ErrHybridPrefixCaching).
func NewKVCacheManagerWith(l *model.Layout, numBlocks int, o ManagerOptions) (*KVCacheManager, error) {
	m := &KVCacheManager{
		Pool:      NewBlockPoolWith(numBlocks, PoolOptions{EnablePrefixCaching: o.EnablePrefixCaching, FreeOrder: o.FreeOrder, Groups: len(l.Groups)}),
		blockSize: l.BlockSize,
		nAttn:     l.NumAttnGroups(),
		nMamba:    l.NumMambaGroups(),
		spec:      o.NumSpeculativeBlocks,
	}
	m.hashBlock = m.blockSize
	if o.HashBlockSize > 0 {
		m.hashBlock = o.HashBlockSize
	}
	na, nm := 0, 0
	for gi, g := range l.Groups {
		switch g.Kind {
		case model.Mamba:
			m.order = append(m.order, groupRef{mamba: true, i: nm})
			nm++
		case model.SlidingWindow:
			if err := m.addWindow(l, gi, o); err != nil {
				return nil, err
			}
		default:
			m.order = append(m.order, groupRef{i: na})
			m.attnGroup = append(m.attnGroup, int32(len(m.order)-1))
			na++
		}
	}
	if m.hashBlock != m.blockSize && (m.blockSize%m.hashBlock != 0 || !o.EnablePrefixCaching || nm+len(m.window) == 0 || nm > 0 && o.MambaCacheMode != MambaAlign) {
		// resolve_kv_cache_block_sizes (kv_cache_utils.py @ 6adad0876):
		// a hash block below the block only with prefix caching over
		// several groups, every Mamba group in align mode, dividing
		// every group's block.
		return nil, fmt.Errorf("hash block size %d with block size %d: needs prefix caching, align mode and another group (a Mamba group or a sliding window)", m.hashBlock, m.blockSize)
	}
	m.blockwiseFree = o.EnablePrefixCaching || o.FreeOrder != FreeToTail
	if !o.EnablePrefixCaching {
		return m, nil
	}
	if nm > 0 && o.MambaCacheMode == MambaNone {
		return nil, ErrHybridPrefixCaching
	}
	if nm > 0 && o.NumSpeculativeBlocks > 0 && o.MambaCacheMode == MambaAll {
		return nil, ErrSpecMambaPrefixCaching
	}
	if na == 0 {
		return nil, fmt.Errorf("prefix caching needs an attention group")
	}
	rules := []HitGroup{{Rule: FullAttention{Block: m.blockSize}, Groups: m.attnGroup}}
	if nm > 0 {
		// Page unification gives the Mamba groups the attention block
		// size in align and all mode: one hash list serves every group.
		spec := MambaSpec{Mode: o.MambaCacheMode, BlockSize: m.blockSize, NumSpeculativeBlocks: o.NumSpeculativeBlocks, SpecSafeFree: o.SpecSafeFree}
		var ids []int32
		for i, g := range m.order {
			if !g.mamba {
				continue
			}
			mm, err := NewMambaManager(m.Pool, spec, int32(i))
			if err != nil {
				return nil, err
			}
			mm.kv = m
			m.mamba = append(m.mamba, mm)
			ids = append(ids, int32(i))
		}
		m.mambaGroups = ids
		rules = append(rules, HitGroup{Rule: MambaHit{Mode: o.MambaCacheMode, Block: m.blockSize}, Groups: ids})
	}
	var coord *HybridCoordinator
	var err error
	if len(m.window) > 0 || m.hashBlock != m.blockSize {
		// Groups of other block sizes, or a finer hash block: the lookup
		// over hashes at the hash block, each rule reading them at its
		// own (NewHybridCoordinatorAt).
		for _, w := range m.window {
			rules = append(rules, HitGroup{Rule: SlidingWindowHit{Manager: w}, Groups: []int32{w.Group}})
		}
		fine := o.PartialHashHits && FineGrainedHits(rules, m.hashBlock)
		if fine {
			for _, w := range m.window {
				w.Spec.HitAlignment = m.hashBlock // alignment_tokens: the hash block
			}
		}
		if coord, err = newHybridCoordinator(len(m.order), m.hashBlock, rules, true, !fine); err != nil {
			return nil, err
		}
		// No group is flagged is_eagle_group at 6adad0876 but DeepSeek
		// V4's (_annotate_eagle_groups_deepseek_v4, kv_cache_utils.py), so
		// under use_eagle every group takes the drop
		// (KVCacheCoordinator.__init__, kv_cache_coordinator.py, lines
		// 106-111), the drafter's window group and the target's alike.
		if o.UseEagle {
			if err := coord.EnableEagle(o.EagleMamba); err != nil {
				return nil, err
			}
		}
	} else if coord, err = NewHybridCoordinator(len(m.order), rules); err != nil {
		return nil, err
	} else if o.UseEagle {
		coord.SetEagle(o.EagleMamba)
	}
	if coord.FineGrained() {
		// enable_partial_hash_hits (kv_cache_coordinator.py @ 6adad0876):
		// hits at the hash block, partial blocks copied on write.
		if o.KeepAttentionOnMiss || o.ConnectorMaxHit {
			return nil, fmt.Errorf("fine-grained prefix-cache hits with closed PR #47491 or a connector's per-group hit are not modelled")
		}
		m.fine = true
		m.Pool.EnablePartialEntries()
	}
	if o.KeepAttentionOnMiss {
		coord.SetKeepAttentionOnMiss()
	}
	if o.ConnectorMaxHit && nm > 0 {
		coord.SetMaxOverGroups()
	}
	m.coord = coord
	return m, nil
}

// addWindow adds layout group gi, a sliding-window group at its own block
// size, with its manager. Only with prefix caching in align mode (or no
// Mamba groups): the hash block is then the groups' gcd, which every
// group's block divides (resolve_kv_cache_block_sizes, kv_cache_utils.py
// @ 6adad0876); block accounting without prefix caching is not modelled.
func (m *KVCacheManager) addWindow(l *model.Layout, gi int, o ManagerOptions) error {
	g := l.Groups[gi]
	if !o.EnablePrefixCaching || (l.NumMambaGroups() > 0 && o.MambaCacheMode != MambaAlign) {
		return fmt.Errorf("a sliding-window group of its own block size is modelled with prefix caching in align mode only")
	}
	spec := SlidingWindowSpec{BlockSize: g.BlockSize, Window: o.SlidingWindow, HashBlockSize: o.HashBlockSize,
		SchedulerBlockSize: o.SchedulerBlockSize, Eagle: o.UseEagle}
	w, err := NewSlidingWindowManager(m.Pool, spec, int32(gi))
	if err != nil {
		return err
	}
	m.order = append(m.order, groupRef{window: true, i: len(m.window)})
	m.window = append(m.window, w)
	return nil
}

// HashBlockSize is hash_block_size: the granularity of the hashes the
// manager's callers pass (the block size but with sliding-window groups
// of their own block).
func (m *KVCacheManager) HashBlockSize() int { return m.hashBlock }

// AtBlock is hashes (at HashBlockSize) read at the layout's block size,
// as the attention and Mamba groups cache and look them up
// (BlockHashListWithBlockSize, kv_cache_utils.py @ 6adad0876): hashes
// itself when the two agree, else a view in m's scratch, valid until the
// next call.
func (m *KVCacheManager) AtBlock(hashes []BlockHash) []BlockHash {
	if m.hashBlock == m.blockSize {
		return hashes
	}
	m.viewB = BlockHashesAt(m.viewB[:0], hashes, m.hashBlock, m.blockSize)
	return m.viewB
}

// MambaMode is the Mamba groups' cache mode: none without prefix caching
// (or without Mamba groups).
func (m *KVCacheManager) MambaMode() MambaCacheMode {
	if len(m.mamba) == 0 {
		return MambaNone
	}
	return m.mamba[0].Spec.Mode
}

// MambaManagerOf is Mamba group g's manager (nil in mode none).
func (m *KVCacheManager) MambaManagerOf(g int) *MambaManager {
	if g >= len(m.mamba) {
		return nil
	}
	return m.mamba[g]
}

// MambaPoolGroup is Mamba group g's id in the pool's cached-block table.
func (m *KVCacheManager) MambaPoolGroup(g int) int32 { return m.mamba[g].Group }

// PrefixCaching reports whether the manager caches blocks by prefix.
func (m *KVCacheManager) PrefixCaching() bool { return m.coord != nil }

// PoolGroup is attention group g's id in the pool's cached-block table
// (its PrefixRecord.Group).
func (m *KVCacheManager) PoolGroup(g int) int32 { return m.attnGroup[g] }

// GetComputedBlocks is vLLM's get_computed_blocks for a request of
// numTokens tokens, waiting with an empty table, whose full blocks hash to
// hashes: the hit in tokens, at most numTokens - 1 (the last token is
// always computed, so that it can be sampled from), and counted in the
// stats as vLLM counts it (preempted requests apart). The hit's blocks
// wait in the coordinator for AllocateSlots.
func (m *KVCacheManager) GetComputedBlocks(t *BlockTable, hashes []BlockHash, numTokens int, preempted bool) int {
	if m.coord == nil || len(t.Attn[0]) != 0 {
		return 0
	}
	if t.private && t.privateFrom == 0 && !preempted && !m.ListAll {
		// Every hash is the request's own and it has cached none yet
		// (a preemption would have listed them): the lookup can only
		// miss. On a trace that shares nothing, that is every lookup.
		m.coord.Miss()
		m.Pool.RecordQuery(numTokens, 0, preempted)
		m.uncached = 0
		return 0
	}
	hit := m.coord.FindLongestCacheHit(m.Pool, hashes, numTokens-1)
	m.uncached = 0
	if m.mamba != nil {
		m.uncached = max(m.coord.FirstRuleHit()-hit, 0)
	}
	m.Pool.RecordQuery(numTokens, hit, preempted)
	if m.mamba != nil {
		m.dropped += int64(max(m.coord.FirstRuleHit()-hit, 0))
	}
	return hit
}

// UncachedCommonPrefix is the last GetComputedBlocks' uncached common
// prefix on a hybrid: how far the longest single group's hit (full
// attention's) ran past the hit every group serves, a shared prefix the
// Mamba groups hold no state for yet (num_uncached_common_prefix_tokens,
// HybridKVCacheCoordinator.find_longest_cache_hit @ 6adad0876, #37898).
func (m *KVCacheManager) UncachedCommonPrefix() int { return m.uncached }

// DroppedHitTokens is how many attention hit tokens the lookups so far
// gave up for want of a Mamba state at their end (0 without Mamba modes).
func (m *KVCacheManager) DroppedHitTokens() int64 { return m.dropped }

// AllocateSlots is vLLM's allocate_slots with prefix caching, in its
// order (kv_cache_manager.py @ 003df296): the blocks the numComputed
// computed tokens (a running request's; 0 for a waiting one) no longer
// need are freed; then, all or nothing, the hit of hitTokens from the last
// GetComputedBlocks (0 for a running request) joins the table in every
// group before any group takes new blocks, and room for numTokens tokens
// in all is allocated; then the blocks that min(numTokens, numKnown)
// tokens fill are cached, before the step writes them. False when the
// pool is short, the free hit blocks counting as allocations.
func (m *KVCacheManager) AllocateSlots(req RequestID, t *BlockTable, numComputed, hitTokens, numTokens, numKnown int, hashes []BlockHash) (bool, error) {
	return m.AllocateSlotsLookahead(req, t, numComputed, hitTokens, numTokens, 0, numKnown, hashes)
}

// AllocateSlotsLookahead is AllocateSlots whose numTokens include
// lookahead slots for the drafter (num_lookahead_tokens): align mode's
// Mamba groups size their tables by the main model's tokens only
// (num_tokens_main_model: draft models have no Mamba layers, and the
// lookahead would break the alignment); what is cached leaves the
// lookahead out too.
func (m *KVCacheManager) AllocateSlotsLookahead(req RequestID, t *BlockTable, numComputed, hitTokens, numTokens, lookahead, numKnown int, hashes []BlockHash) (bool, error) {
	if m.coord == nil {
		return m.Allocate(req, t, numTokens)
	}
	hb := hitTokens / m.blockSize
	// partial: a fine-grained hit ends inside block hb, which each
	// attention group copies on write (_has_partial_local_hit).
	partial := hitTokens != hb*m.blockSize
	if partial && (!m.fine || hitTokens%m.hashBlock != 0) || hitTokens > 0 && len(t.Attn[0]) != 0 {
		return false, fmt.Errorf("prefix caching: request %d given a %d-token hit with %d blocks held", req, hitTokens, len(t.Attn[0]))
	}
	computed := numComputed + hitTokens
	if err := m.RemoveSkippedBlocks(req, t, computed); err != nil {
		return false, err
	}
	want := (numTokens + m.blockSize - 1) / m.blockSize
	need := 0
	for i, w := range m.window {
		need += w.BlocksToAllocate(&t.Window[i], numTokens, computed, m.windowHit(i, hitTokens), false)
	}
	// Under the EAGLE drop the attention hit may end a block short of
	// the hit (the Mamba group's, #53912): the request still starts at
	// hitTokens and the missing position gets a fresh block.
	for g := range t.Attn {
		hit := m.attnHit(g, hb)
		for _, b := range hit {
			if m.Pool.pc.queued(b) {
				need++ // a free cached block leaves the queue just the same
			}
		}
		if partial {
			// The shared tail block too, and the block it is copied into.
			if src := m.attnPartial(g, hb); src != NullBlock && m.Pool.pc.queued(src) {
				need++
			}
			need += max(want-len(t.Attn[g])-len(hit)-1, 0) + 1
			continue
		}
		need += max(want-len(t.Attn[g])-len(hit), 0)
	}
	need += m.mambaNeed(t, numTokens, lookahead, computed, hitTokens)
	if need > m.Pool.NumFree() {
		return false, nil
	}
	if need > 1 && need <= prefetchBlocks && m.mamba != nil {
		// The groups pop one at a time, a block or a few each at a
		// boundary: read every group's blocks first so that their misses
		// overlap. A long prefill chunk's pops (Mooncake: ~45 blocks a
		// group) overlap within each call already, and reading hundreds
		// ahead only pushes the first out of L1 (slower, measured).
		m.Pool.pc.prefetchHead(&m.Pool.q, need)
	}
	if hb > 0 || partial {
		// Every group's hit blocks leave the queue before any pop, or a
		// pop could evict a hit block not yet touched.
		ah := hb
		for g := range t.Attn {
			hit := m.attnHit(g, hb)
			for _, b := range hit {
				if m.Pool.pc.st[b].ref > 0 {
					m.sharedRefs++
				}
			}
			m.Pool.Touch(req, hit)
			t.Attn[g] = append(t.Attn[g], hit...)
			ah = min(ah, len(hit))
			if partial {
				// The tail block leaves the queue too; the copy pins it.
				m.Pool.Pin(m.attnPartial(g, hb))
			}
		}
		// num_cached_block counts the attention hit only: a position the
		// hit lacks is cached by this request's allocation below, under
		// the prefix's hash, before anything writes it.
		t.hitBlocks, t.cachedBlocks, t.attnHitBlocks = int32(hb), int32(ah), int32(ah)
		t.hitSeen = -1
		t.resetKV()
	}
	if hitTokens > 0 {
		for i, w := range m.window {
			if err := w.AddHitBlocks(req, &t.Window[i], m.windowHit(i, hitTokens), hitTokens); err != nil {
				return false, err
			}
		}
	}
	if len(t.MambaT) > 0 && !t.MambaT[0].running { // one group running: all are (lockstep)
		for g, mm := range m.mamba {
			if mt := &t.MambaT[g]; !mt.running {
				if err := mm.AddHitBlocks(req, mt, m.mambaHit(g, hitTokens), hitTokens); err != nil {
					return false, err
				}
			}
		}
	}
	for oi := 0; oi < len(m.order); oi++ {
		g := m.order[oi]
		if g.window {
			if _, err := m.window[g.i].AllocateNewBlocks(req, &t.Window[g.i], numTokens); err != nil {
				return false, err // counted above: cannot happen
			}
			continue
		}
		if g.mamba {
			if m.mamba == nil {
				continue
			}
			mainTokens := m.mamba[g.i].mainTokens(numTokens, lookahead)
			n := 1 // the Mamba groups from here on in the layout's order
			for oi+n < len(m.order) && m.order[oi+n].mamba {
				n++
			}
			if m.allocateLockstep(req, t, g.i, g.i+n, mainTokens) {
				oi += n - 1
				continue
			}
			if err := m.mamba[g.i].AllocateNewBlocks(req, &t.MambaT[g.i], mainTokens); err != nil {
				return false, err // counted above: cannot happen
			}
			continue
		}
		if partial && len(t.Attn[g.i]) == hb {
			if err := m.attnCopyOnWrite(req, t, g.i, hb, hitTokens); err != nil {
				return false, err
			}
		}
		if d := want - len(t.Attn[g.i]); d > 0 {
			old := len(t.Attn[g.i])
			t.Attn[g.i] = slices.Grow(t.Attn[g.i], d)[:old+d]
			if err := m.Pool.GetNewBlocks(req, m.attnGroup[g.i], t.Attn[g.i][old:]); err != nil {
				return false, err // counted above: cannot happen
			}
		}
	}
	m.syncSlots(t)
	t.held = t.countHeld()
	t.covered = max(t.covered, want*m.blockSize)
	// num_tokens_to_cache: the computed and scheduled tokens, capped at
	// the request's known tokens, never the lookahead slots
	// (kv_cache_manager.py @ 6adad0876 allocate_slots).
	return true, m.CacheBlocks(req, t, min(numTokens-lookahead, numKnown), hashes)
}

// mambaNeed is the blocks the Mamba groups' allocation takes, their
// BlocksToAllocate summed, once RemoveSkippedBlocks has run. Without a
// hit a group's count depends on its table's shape only, every group's
// (lockstep): group 0's, times the groups (a running request's every
// allocation).
func (m *KVCacheManager) mambaNeed(t *BlockTable, numTokens, lookahead, computed, hitTokens int) int {
	if len(m.mamba) == 0 {
		return 0
	}
	if hitTokens == 0 {
		mm := m.mamba[0]
		return len(m.mamba) * mm.BlocksToAllocate(&t.MambaT[0], mm.mainTokens(numTokens, lookahead), computed, nil)
	}
	need := 0
	for g, mm := range m.mamba {
		need += mm.BlocksToAllocate(&t.MambaT[g], mm.mainTokens(numTokens, lookahead), computed, m.mambaHit(g, hitTokens))
	}
	return need
}

// windowHit is sliding-window group i's part of the last hit, nil
// without one.
func (m *KVCacheManager) windowHit(i, hitTokens int) []int32 {
	if hitTokens == 0 {
		return nil
	}
	return m.coord.HitBlocks(m.window[i].Group)
}

// attnHit is attention group g's part of the last hit, at most hb blocks.
func (m *KVCacheManager) attnHit(g, hb int) []int32 {
	h := m.coord.HitBlocks(m.attnGroup[g])
	return h[:min(hb, len(h))]
}

// mambaHit is Mamba group g's part of the last hit, nil without one.
func (m *KVCacheManager) mambaHit(g, hitTokens int) []int32 {
	if hitTokens == 0 {
		return nil
	}
	return m.coord.HitBlocks(m.mamba[g].Group)
}

// skipMemoHolds: a RemoveSkippedBlocks of t at numComputed frees nothing
// by the memo of its last call (skipMemo): the same span, the same table.
func (t *BlockTable) skipMemoHolds(numComputed int) bool {
	mt0, sm := &t.MambaT[0], &t.skipMemo
	return numComputed > sm.lo && numComputed <= sm.hi && len(mt0.Blocks) == sm.n && mt0.lastState == sm.last
}

// RemoveSkippedBlocks frees the Mamba blocks a request with numComputed
// computed tokens no longer needs (vLLM's remove_skipped_blocks, called
// by allocate_slots on every scheduled request, whether or not it needs
// new blocks): in align mode the copy source one step after its copy.
// Full attention skips nothing; a sliding-window group frees the blocks
// before its window.
func (m *KVCacheManager) RemoveSkippedBlocks(req RequestID, t *BlockTable, numComputed int) error {
	if len(t.Window) > 0 {
		// A sliding window frees what fell out of it.
		held := t.countHeld()
		for i, w := range m.window {
			if err := w.RemoveSkippedBlocks(req, &t.Window[i], numComputed); err != nil {
				return err
			}
		}
		if n := t.countHeld(); n != held {
			t.held = n
		}
	}
	if m.mamba == nil || t.MambaT == nil {
		return nil
	}
	mt0 := &t.MambaT[0]
	if t.skipMemoHolds(numComputed) {
		return nil
	}
	// The groups share one spec (NewKVCacheManager): bound once.
	spec := &m.mamba[0].Spec
	top, src := spec.skipBounds(numComputed)
	if !t.mambaSkipsNothing(top, src, spec.Mode == MambaAlign) {
		if spec.Mode == MambaAll {
			m.prefetchSkipped(t, top)
		}
		freed, err := m.removeSkippedLockstep(req, t, top, src, spec.Mode == MambaAlign)
		if err != nil {
			return err
		}
		if !freed { // it did not apply: group by group
			for g, mm := range m.mamba {
				mt := &t.MambaT[g]
				if mt.skipsNothing(top, src, spec.Mode == MambaAlign) {
					continue
				}
				h := mt.held
				if err := mm.removeSkipped(req, mt, top, src, t.private); err != nil {
					return err
				}
				freed = freed || mt.held != h
			}
		}
		if freed {
			t.held = t.countHeld()
		}
	}
	if numComputed > 0 && (spec.Mode == MambaAll || spec.NumSpeculativeBlocks == 0) {
		// For numComputed ≥ 1 the walk's top is (numComputed−1)/B, and in
		// align mode without speculative blocks src equals it.
		b := spec.BlockSize
		t.skipMemo.lo, t.skipMemo.hi = top*b, (top+1)*b
		t.skipMemo.n, t.skipMemo.last = len(mt0.Blocks), mt0.lastState
	}
	return nil
}

// prefetchBlocks bounds the blocks read ahead of the per-group pool work
// (prefetchHead, prefetchSkipped, prefetchMambaCache): about what L1
// holds of their records and slots.
const prefetchBlocks = 64

// prefetchSkipped reads the states and free-queue links of the blocks
// RemoveSkippedBlocks frees in all mode, every group's together (a
// group frees a block or a few per call, whose misses alone would not
// overlap).
func (m *KVCacheManager) prefetchSkipped(t *BlockTable, top int) {
	c, q := m.Pool.pc, &m.Pool.q
	var s int32
	n := prefetchBlocks
	for g := range m.mamba {
		bl := t.MambaT[g].Blocks
		for i := min(top, len(bl)) - 1; i >= 0 && bl[i] != NullBlock; i-- {
			if n--; n < 0 {
				c.sink ^= s
				return // a long run overlaps its misses in its own free
			}
			b := bl[i]
			s ^= c.st[b].ref ^ q.next[b] ^ q.prev[b]
		}
	}
	c.sink ^= s
}

// MambaNeedsBlocks reports whether a Mamba group's table must grow for
// a request to hold numTokens main-model tokens, when its attention
// blocks (sized with the lookahead) already do.
func (m *KVCacheManager) MambaNeedsBlocks(t *BlockTable, numTokens int) bool {
	if len(m.mamba) == 0 {
		return false
	}
	// Lockstep: the groups' tables have one length.
	mm := m.mamba[0]
	return mm.Spec.Mode == MambaAlign && mambaCeilDiv(numTokens, mm.Spec.BlockSize)+mm.Spec.NumSpeculativeBlocks > len(t.MambaT[0].Blocks)
}

// syncSlots points each Mamba group's slot at its running block, and
// under speculative decoding its columns 1..K at the K blocks after it
// (align mode: the table's last 1 + K positions). A lease over the old
// slots is written back first: it covers the blocks it was taken on.
func (m *KVCacheManager) syncSlots(t *BlockTable) {
	if len(m.mamba) == 0 {
		return
	}
	mt0 := &t.MambaT[0]
	ri := m.mamba[0].runningIndex(mt0)
	if ri >= 0 && mt0.Blocks[ri] == t.Mamba[0] || ri < 0 && t.Mamba[0] == NullBlock {
		return // most calls: no group's running block moved (lockstep)
	}
	if m.spec > 0 {
		for g := range m.mamba {
			bl := t.MambaT[g].Blocks
			for j := 1; j <= m.spec; j++ {
				t.Spec[g*m.spec+j-1] = bl[len(bl)-1-m.spec+j]
			}
		}
	}
	if t.st.ps != nil {
		t.st.ps.SettleState(t)
	}
	// Every group's running block is at group 0's position (lockstep).
	for g := range m.mamba {
		t.Mamba[g] = NullBlock
		if ri >= 0 {
			t.Mamba[g] = t.MambaT[g].Blocks[ri]
		}
	}
}

// CacheBlocks makes t's blocks that numTokens tokens fill findable by
// hash (vLLM's cache_blocks), in every attention group.
func (m *KVCacheManager) CacheBlocks(req RequestID, t *BlockTable, numTokens int, hashes []BlockHash) error {
	full := numTokens / m.blockSize
	if m.coord == nil {
		return nil
	}
	if m.fine {
		return m.cacheBlocksFine(req, t, numTokens, hashes)
	}
	if len(m.window) > 0 {
		// The hybrid coordinator caches every group up to a multiple of
		// scheduler_block_size, where hits can end; an EAGLE group one
		// block past it (HybridKVCacheCoordinator.cache_blocks,
		// kv_cache_coordinator.py @ 6adad0876; fine-grained hits, which
		// cache at the hash block, are not modelled).
		for i, w := range m.window {
			if err := w.CacheBlocks(req, &t.Window[i], w.Spec.HybridCacheTokens(numTokens, false), hashes); err != nil {
				return err
			}
		}
		hashes = m.AtBlock(hashes)
		sb := m.window[0].Spec.schedBlock()
		aligned := numTokens / sb * sb
		if m.window[0].Spec.Eagle && aligned > 0 {
			// Every group is an EAGLE group: one block past the boundary.
			aligned = min(numTokens, aligned+m.blockSize)
		}
		numTokens = aligned
		full = numTokens / m.blockSize
	}
	if m.mamba != nil && full > int(t.mambaCached) && t.mambaCachesNoBlock(full, len(hashes)) {
		// Align mode between boundaries, every group alike (lockstep):
		// only the counts move.
		for g := range t.MambaT {
			mt := &t.MambaT[g]
			mt.numCached = max(mt.numCached, full)
		}
		t.mambaCached = int32(full)
	}
	if m.mamba != nil && full > int(t.mambaCached) {
		m.prefetchMambaCache(t, full, hashes)
		if ok, err := m.cacheLockstep(req, t, numTokens, hashes); err != nil {
			return err
		} else if !ok {
			for g, mm := range m.mamba {
				if mt := &t.MambaT[g]; !mm.cachesNothing(mt, numTokens) {
					if err := mm.cacheBlocks(req, mt, numTokens, hashes, t.listed(numTokens/mm.Spec.BlockSize, m.ListAll)); err != nil {
						return err
					}
				}
			}
		}
		t.mambaCached = int32(full)
	}
	if full <= int(t.cachedBlocks) {
		return nil
	}
	for g := range t.Attn {
		if err := m.Pool.cacheFullBlocksListed(req, m.attnGroup[g], t.Attn[g], hashes, int(t.cachedBlocks), full, m.blockSize, t.listed(full, m.ListAll)); err != nil {
			return err
		}
	}
	t.cachedBlocks = int32(full)
	return nil
}

// prefetchMambaCache reads the records of the blocks every Mamba group
// caches next and the table slots of their keys, all groups together:
// one group's CacheFullBlocks has a block or a few to cache, whose misses
// alone would not overlap.
func (m *KVCacheManager) prefetchMambaCache(t *BlockTable, full int, hashes []BlockHash) {
	c := m.Pool.pc
	if full-int(t.mambaCached) > prefetchBlocks/len(m.mamba) {
		return // each group's CacheFullBlocks overlaps a long run's misses
	}
	var s int32
	listed := t.listed(full, m.ListAll)
	for g, mm := range m.mamba {
		mt := &t.MambaT[g]
		hi := min(full, len(mt.Blocks), len(hashes))
		for i := mt.numCached; i < hi; i++ {
			if b := mt.Blocks[i]; b != NullBlock {
				s ^= c.rec[b].Group
				if i < listed {
					s ^= c.table.prefetch(keyAt(hashes, i, mm.Group))
				}
			}
		}
	}
	c.sink ^= s
}

// Publish lists t's unlisted cached blocks in the pool's table, group by
// group in the layout's order: a request is giving its blocks back and
// will look its prefix up again (a preemption). Later blocks are listed
// as vLLM lists them, at caching.
func (m *KVCacheManager) Publish(req RequestID, t *BlockTable) {
	if !t.private || m.coord == nil {
		return
	}
	for _, g := range m.order {
		if g.window {
			continue // cached listed (SlidingWindowManager.CacheBlocks)
		}
		if g.mamba {
			if m.mamba != nil {
				mt := &t.MambaT[g.i]
				m.Pool.pc.publish(req, mt.freedPrivate)
				mt.freedPrivate = mt.freedPrivate[:0]
				m.Pool.pc.publish(req, mt.Blocks)
			}
			continue
		}
		m.Pool.pc.publish(req, t.Attn[g.i])
	}
	t.private = false
}

// BlockSize is the attention block size in tokens.
func (m *KVCacheManager) BlockSize() int { return m.blockSize }

// NewTable returns an empty block table with this layout's group counts.
func (m *KVCacheManager) NewTable() BlockTable {
	t := BlockTable{Attn: make([][]int32, m.nAttn), Mamba: make([]int32, m.nMamba)}
	if m.spec > 0 {
		t.Spec = make([]int32, m.nMamba*m.spec)
	}
	if m.mamba != nil {
		t.MambaT = make([]MambaTable, m.nMamba)
	}
	if len(m.window) > 0 {
		t.Window = make([]SlidingWindowTable, len(m.window))
	}
	return t
}

// NumSpeculativeBlocks is K: the state blocks each Mamba group holds per
// request beyond the first.
func (m *KVCacheManager) NumSpeculativeBlocks() int { return m.spec }

// BlocksNeeded is how many new blocks t needs to hold numTokens tokens.
func (m *KVCacheManager) BlocksNeeded(t *BlockTable, numTokens int) int {
	if numTokens <= t.covered {
		return 0 // a decode: the last block still has room
	}
	n := 0
	want := (numTokens + m.blockSize - 1) / m.blockSize
	for g := range t.Attn {
		if d := want - len(t.Attn[g]); d > 0 {
			n += d
		}
	}
	for _, s := range t.Mamba {
		if s == NullBlock {
			n += 1 + m.spec
		}
	}
	return n
}

// Allocate grows t so it holds numTokens tokens (vLLM's allocate_slots).
// It allocates all or nothing and reports false when the pool is short,
// which makes the scheduler preempt.
func (m *KVCacheManager) Allocate(req RequestID, t *BlockTable, numTokens int) (bool, error) {
	need := m.BlocksNeeded(t, numTokens)
	if need == 0 && numTokens <= t.covered {
		return true, nil
	}
	if need > m.Pool.NumFree() {
		return false, nil
	}
	if t.held == 0 {
		t.held = t.countHeld() // a table filled by hand, or empty
	}
	want := (numTokens + m.blockSize - 1) / m.blockSize
	for _, g := range m.order {
		if g.mamba {
			if t.Mamba[g.i] == NullBlock {
				b, err := m.Pool.Pop(req)
				if err != nil {
					return false, err
				}
				t.Mamba[g.i] = b
				t.held++
				// The group's K speculative blocks come in the same
				// get_new_blocks call, after column 0.
				for j := 0; j < m.spec; j++ {
					if t.Spec[g.i*m.spec+j], err = m.Pool.Pop(req); err != nil {
						return false, err
					}
					t.held++
				}
			}
			continue
		}
		for len(t.Attn[g.i]) < want {
			b, err := m.Pool.Pop(req)
			if err != nil {
				return false, err
			}
			t.Attn[g.i] = append(t.Attn[g.i], b)
			t.held++
		}
	}
	t.covered = want * m.blockSize
	return true, nil
}

// Free returns all of t's blocks to the pool and empties t (keeping its
// backing arrays for reuse).
func (m *KVCacheManager) Free(req RequestID, t *BlockTable) error {
	// The slots' records must be in place before anyone else can get them.
	if t.st.ps != nil {
		t.st.ps.Settle(t)
	}
	t.hitBlocks, t.cachedBlocks, t.attnHitBlocks = 0, 0, 0
	t.resetKV()
	t.covered, t.held, t.mambaCached = 0, 0, 0
	t.skipMemo.hi = 0
	t.private, t.privateFrom = false, 0
	if m.blockwiseFree {
		return m.freeBlockwise(req, t)
	}
	for _, g := range m.order {
		if g.mamba {
			if s := t.Mamba[g.i]; s != NullBlock {
				// A group's blocks go back last first (reversed), the
				// speculative columns before column 0.
				for j := m.spec - 1; j >= 0; j-- {
					if err := m.Pool.Push(req, t.Spec[g.i*m.spec+j]); err != nil {
						return fmt.Errorf("free mamba group %d column %d: %w", g.i, j+1, err)
					}
					t.Spec[g.i*m.spec+j] = NullBlock
				}
				if err := m.Pool.Push(req, s); err != nil {
					return fmt.Errorf("free mamba group %d: %w", g.i, err)
				}
				t.Mamba[g.i] = NullBlock
			}
			continue
		}
		bs := t.Attn[g.i]
		for i := len(bs) - 1; i >= 0; i-- {
			if err := m.Pool.Push(req, bs[i]); err != nil {
				return fmt.Errorf("free attention group %d: %w", g.i, err)
			}
		}
		t.Attn[g.i] = bs[:0]
	}
	return nil
}

// freeBlockwise frees each group's blocks, tail first, in one
// Pool.FreeBlocks call per group (vLLM's SingleTypeKVCacheManager.free):
// under FreshToHead, pushing block by block would reverse vLLM's order.
func (m *KVCacheManager) freeBlockwise(req RequestID, t *BlockTable) error {
	for _, g := range m.order {
		if g.window {
			if err := m.window[g.i].Free(req, &t.Window[g.i]); err != nil {
				return err
			}
			continue
		}
		if g.mamba && m.mamba != nil {
			if err := m.mamba[g.i].Free(req, &t.MambaT[g.i]); err != nil {
				return err
			}
			t.Mamba[g.i] = NullBlock
			continue
		}
		if g.mamba {
			if s := t.Mamba[g.i]; s != NullBlock {
				one := [1]int32{s}
				blocks := one[:]
				if m.spec > 0 {
					// Columns K..1, then 0: the group's blocks reversed.
					blocks = m.specFree[:0]
					for j := m.spec - 1; j >= 0; j-- {
						blocks = append(blocks, t.Spec[g.i*m.spec+j])
						t.Spec[g.i*m.spec+j] = NullBlock
					}
					blocks = append(blocks, s)
					m.specFree = blocks
				}
				if err := m.Pool.FreeBlocks(req, blocks); err != nil {
					return fmt.Errorf("free mamba group %d: %w", g.i, err)
				}
				t.Mamba[g.i] = NullBlock
			}
			continue
		}
		bs := t.Attn[g.i]
		if pc := m.Pool.pc; pc != nil {
			// Tail first, as vLLM's free reverses the table; the
			// references dropped from shared blocks counted on the way.
			shared, err := pc.freeBlocks(&m.Pool.q, m.Pool.order, req, bs, true)
			if err != nil {
				return fmt.Errorf("free attention group %d: %w", g.i, err)
			}
			m.sharedRefs -= shared
			t.Attn[g.i] = bs[:0]
			continue
		}
		slices.Reverse(bs)
		if err := m.Pool.FreeBlocks(req, bs); err != nil {
			slices.Reverse(bs)
			return fmt.Errorf("free attention group %d: %w", g.i, err)
		}
		t.Attn[g.i] = bs[:0]
	}
	return nil
}

// StateBlocksHeld counts t's Mamba state blocks: its slots (and
// speculative columns), or with a Mamba cache mode every real block of
// its groups' tables.
func (t *BlockTable) StateBlocksHeld() int {
	if t.MambaT == nil {
		return len(t.Mamba) + len(t.Spec)
	}
	return t.mambaHeld()
}

// mambaHeld is the real blocks of t's Mamba tables: group 0's times the
// groups, which hold alike (mamba_modes_lockstep.go).
func (t *BlockTable) mambaHeld() int {
	if len(t.MambaT) == 0 {
		return 0
	}
	return t.MambaT[0].held * len(t.MambaT)
}

// NumHeld counts the blocks in t.
func (t *BlockTable) NumHeld() int {
	if t.held > 0 {
		return t.held // maintained by Allocate and Free
	}
	return t.countHeld()
}

func (t *BlockTable) countHeld() int {
	n := 0
	for _, g := range t.Attn {
		n += len(g)
	}
	for i := range t.Window {
		n += t.Window[i].Held()
	}
	if t.MambaT != nil {
		return n + t.mambaHeld()
	}
	for _, s := range t.Mamba {
		if s != NullBlock {
			n++
		}
	}
	for _, s := range t.Spec {
		if s != NullBlock {
			n++
		}
	}
	return n
}
