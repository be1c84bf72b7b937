package statecache

import (
	"fmt"

	"statesim/model"
)

// BlockTable is one request's blocks in every KV cache group: a growing
// list per attention group and one block (its state slot) per Mamba group.
type BlockTable struct {
	Attn  [][]int32
	Mamba []int32 // 0 (the null block) until allocated

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
		t.kvN = append(t.kvN, kvGroup{})
	}
	return &t.kvN[g-1]
}

// resetKV forgets every verified KV block (leases stay).
func (t *BlockTable) resetKV() {
	t.kv0.ok = 0
	for i := range t.kvN {
		t.kvN[i].ok = 0
	}
}

// Slot is the request's state slot in Mamba group g.
func (t *BlockTable) Slot(g int) int32 { return t.Mamba[g] }

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
}

type groupRef struct {
	mamba bool
	i     int
}

// NewKVCacheManager builds a manager for a layout over numBlocks blocks.
func NewKVCacheManager(l *model.Layout, numBlocks int) *KVCacheManager {
	m := &KVCacheManager{
		Pool:      NewBlockPool(numBlocks),
		blockSize: l.BlockSize,
		nAttn:     l.NumAttnGroups(),
		nMamba:    l.NumMambaGroups(),
	}
	na, nm := 0, 0
	for _, g := range l.Groups {
		if g.Kind == model.Mamba {
			m.order = append(m.order, groupRef{true, nm})
			nm++
		} else {
			m.order = append(m.order, groupRef{false, na})
			na++
		}
	}
	return m
}

// BlockSize is the attention block size in tokens.
func (m *KVCacheManager) BlockSize() int { return m.blockSize }

// NewTable returns an empty block table with this layout's group counts.
func (m *KVCacheManager) NewTable() BlockTable {
	return BlockTable{Attn: make([][]int32, m.nAttn), Mamba: make([]int32, m.nMamba)}
}

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
			n++
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
	t.resetKV()
	t.covered, t.held = 0, 0
	for _, g := range m.order {
		if g.mamba {
			if s := t.Mamba[g.i]; s != NullBlock {
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
	for _, s := range t.Mamba {
		if s != NullBlock {
			n++
		}
	}
	return n
}
