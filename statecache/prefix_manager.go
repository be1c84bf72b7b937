package statecache

import (
	"fmt"
	"slices"
)

// PrefixTable is one request's blocks in each attention group (vLLM's
// req_to_blocks) and how many of them are cached (num_cached_block).
type PrefixTable struct {
	Blocks    [][]int32
	numCached []int
	// running: the request has allocated since its last Free, so it
	// takes no new hits (vLLM's "request_id in num_cached_block").
	running bool
}

// NumCached is how many of group g's blocks are findable by hash.
func (t *PrefixTable) NumCached(g int) int { return t.numCached[g] }

// PrefixCacheManager is the attention side of vLLM's KVCacheManager with
// prefix caching (vllm/v1/core/kv_cache_manager.py and the full-attention
// SingleTypeKVCacheManager): lookup, all-or-nothing allocation that takes
// hit blocks off the free queue, caching of full blocks, and free in
// reverse. Every group allocates as full attention does; a sliding
// window's or a Mamba group's own allocation is not modelled here, only
// their hit rules (HitRule).
type PrefixCacheManager struct {
	Pool      *BlockPool
	Coord     *HybridCoordinator
	blockSize int
}

// NewPrefixCacheManager manages every group of coord over pool, which must
// cache by prefix.
func NewPrefixCacheManager(pool *BlockPool, coord *HybridCoordinator) (*PrefixCacheManager, error) {
	if !pool.PrefixCaching() {
		return nil, fmt.Errorf("prefix cache manager: the pool does not cache by prefix")
	}
	return &PrefixCacheManager{Pool: pool, Coord: coord, blockSize: coord.rules[0].Rule.BlockSize()}, nil
}

// NewTable returns an empty table with one list per group.
func (m *PrefixCacheManager) NewTable() PrefixTable {
	n := m.Coord.NumGroups()
	return PrefixTable{Blocks: make([][]int32, n), numCached: make([]int, n)}
}

// GetComputedBlocks is the hit for a waiting request of numTokens tokens
// whose full blocks hash to hashes, in tokens; the blocks are
// Coord.HitBlocks until the next lookup. The hit stops one token short of
// the request so that its last token is computed and sampled from (vLLM's
// max_cache_hit_length = num_tokens − 1). The lookup is counted in the
// stats as vLLM counts it: queries numTokens, hits the hit length.
func (m *PrefixCacheManager) GetComputedBlocks(numTokens int, hashes []BlockHash, preempted bool) int {
	hit := m.Coord.FindLongestCacheHit(m.Pool, hashes, numTokens-1)
	m.Pool.RecordQuery(numTokens, hit, preempted)
	return hit
}

// blocksToAllocate is vLLM's get_num_blocks_to_allocate summed over the
// groups: new blocks, plus the hit blocks that are now free (taking them
// off the queue uses up free blocks just the same).
func (m *PrefixCacheManager) blocksToAllocate(t *PrefixTable, needSlots, hitBlocks int) int {
	want := (needSlots + m.blockSize - 1) / m.blockSize
	n := 0
	for g := range t.Blocks {
		have := len(t.Blocks[g])
		if !t.running {
			hit := m.Coord.HitBlocks(int32(g))[:hitBlocks]
			have += len(hit)
			for _, b := range hit {
				if b != NullBlock && m.Pool.pc.queued(b) {
					n++
				}
			}
		}
		n += max(want-have, 0)
	}
	return n
}

// AllocateSlots gives req room for numNewTokens more tokens after
// numComputed computed ones and, for a request not yet running, the
// hitTokens of its last GetComputedBlocks; it then caches the blocks
// that will be full once those tokens are computed, of a request that
// has numTokens tokens (vLLM's allocate_slots: the blocks are findable
// from this step on, before the step has written them). All or nothing:
// false, with nothing changed, when the pool is short.
func (m *PrefixCacheManager) AllocateSlots(req RequestID, t *PrefixTable, numComputed, hitTokens, numNewTokens, numTokens int, hashes []BlockHash) (bool, error) {
	if t.running && hitTokens != 0 {
		return false, fmt.Errorf("prefix cache manager: running request %d given a %d-token hit", req, hitTokens)
	}
	if hitTokens%m.blockSize != 0 {
		return false, fmt.Errorf("prefix cache manager: request %d's hit of %d tokens is not whole blocks", req, hitTokens)
	}
	computed := numComputed + hitTokens
	needSlots := computed + numNewTokens
	hitBlocks := hitTokens / m.blockSize
	if m.blocksToAllocate(t, needSlots, hitBlocks) > m.Pool.NumFree() {
		return false, nil
	}
	want := (needSlots + m.blockSize - 1) / m.blockSize
	// Every group's hit blocks leave the queue before any group pops new
	// blocks, or a pop could evict a hit block not yet touched.
	for g := range t.Blocks {
		if !t.running {
			hit := m.Coord.HitBlocks(int32(g))[:hitBlocks]
			m.Pool.Touch(req, hit)
			t.Blocks[g] = append(t.Blocks[g], hit...)
			t.numCached[g] = len(t.Blocks[g])
		}
	}
	for g := range t.Blocks {
		if d := want - len(t.Blocks[g]); d > 0 {
			old := len(t.Blocks[g])
			t.Blocks[g] = slices.Grow(t.Blocks[g], d)[:old+d]
			if err := m.Pool.GetNewBlocks(req, int32(g), t.Blocks[g][old:]); err != nil {
				return false, err // counted above: cannot happen
			}
		}
	}
	t.running = true
	return true, m.CacheBlocks(req, t, min(computed+numNewTokens, numTokens), hashes)
}

// CacheBlocks makes req's blocks that numTokens tokens fill findable.
func (m *PrefixCacheManager) CacheBlocks(req RequestID, t *PrefixTable, numTokens int, hashes []BlockHash) error {
	full := numTokens / m.blockSize
	for g := range t.Blocks {
		if t.numCached[g] >= full {
			continue
		}
		if err := m.Pool.CacheFullBlocks(req, int32(g), t.Blocks[g], hashes, t.numCached[g], full, m.blockSize); err != nil {
			return err
		}
		t.numCached[g] = full
	}
	return nil
}

// Free returns req's blocks, group by group, each group's tail first so
// that a later request is likelier to hit the shared head (vLLM's
// SingleTypeKVCacheManager.free), and empties t.
func (m *PrefixCacheManager) Free(req RequestID, t *PrefixTable) error {
	for g := range t.Blocks {
		bs := t.Blocks[g]
		slices.Reverse(bs)
		if err := m.Pool.FreeBlocks(req, bs); err != nil {
			slices.Reverse(bs)
			return fmt.Errorf("free group %d: %w", g, err)
		}
		t.Blocks[g] = bs[:0]
		t.numCached[g] = 0
	}
	t.running = false
	return nil
}
