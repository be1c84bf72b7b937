package statecache

// blockTable is the cached-block table, BlockKey → the head of the chain
// of blocks cached under it: open addressing with linear probing and
// backward-shift deletion over a fixed array of at least twice the pool's
// blocks. It never holds more keys than blocks, so it never grows, and
// with no tombstones it never rehashes: lookups, inserts and deletes
// allocate nothing (a Go map, churned by evictions, occasionally does). It
// is never iterated.
//
// The table is far larger than a CPU cache on a real pool (120k blocks:
// 4 MiB), and keys are hashes, so every operation's first probe is a cache
// miss. A slot is 16 bytes (four to a cache line; the chain's tail lives
// with its blocks, prefix_pool.go), each operation probes once, and the
// pool's batch operations touch a batch's slots before working on them
// (prefetch), so that the misses overlap instead of queueing.
type blockTable struct {
	slots []tableSlot
	mask  uint64
	shift uint8 // 64 − log2(len(slots))
	n     int
}

type tableSlot struct {
	hash  BlockHash
	group int32
	head  int32 // NullBlock (never cached): the slot is empty
}

func newBlockTable(numBlocks int) blockTable {
	size := tableSlots(numBlocks)
	shift := uint8(64)
	for 1<<(64-shift) < size {
		shift--
	}
	return blockTable{slots: make([]tableSlot, size), mask: uint64(size - 1), shift: shift}
}

// tableSlots is the power of two ≥ 2·numBlocks: probe runs stay short at
// a load of at most a half.
func tableSlots(numBlocks int) int {
	size := 1
	for size < 2*numBlocks {
		size <<= 1
	}
	return size
}

// home is k's first slot: Fibonacci hashing, the top bits of one
// multiplication, which every bit of the key reaches. A block hash is
// already a mix's output; a full mix here cost more than the probe.
func (t *blockTable) home(k BlockKey) uint64 {
	return ((uint64(k.Hash) ^ uint64(uint32(k.Group))<<32) * 0x9e3779b97f4a7c15) >> (t.shift & 63) // shift ≤ 63: the table has ≥ 2 slots
}

// probe is k's slot index and true, or the empty slot where k would go
// and false.
func (t *blockTable) probe(k BlockKey) (uint64, bool) {
	for i := t.home(k); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.head == NullBlock {
			return i, false
		}
		if s.hash == k.Hash && s.group == k.Group {
			return i, true
		}
	}
}

// lookup is the head of k's chain, or NullBlock.
func (t *blockTable) lookup(k BlockKey) int32 {
	if i, ok := t.probe(k); ok {
		return t.slots[i].head
	}
	return NullBlock
}

// prefetch reads k's home slot, so that a loop of prefetches issues its
// cache misses together; the caller keeps the result (or the compiler
// drops the read).
func (t *blockTable) prefetch(k BlockKey) int32 { return t.slots[t.home(k)].head }

// prefetchRun reads k's home slot and the slot a cache line on, where a
// deletion's backward shift usually ends.
func (t *blockTable) prefetchRun(k BlockKey) int32 {
	i := t.home(k)
	return t.slots[i].head ^ t.slots[(i+4)&t.mask].head
}

// put sets k's head, adding k when new.
func (t *blockTable) put(k BlockKey, head int32) {
	i, ok := t.probe(k)
	if !ok {
		t.slots[i].hash, t.slots[i].group = k.Hash, k.Group
		t.n++
	}
	t.slots[i].head = head
}

// del removes k, if present.
func (t *blockTable) del(k BlockKey) {
	if i, ok := t.probe(k); ok {
		t.deleteAt(i)
	}
}

// deleteAt empties slot i, shifting later entries of its probe run back
// so that no lookup passes an empty slot before its key.
func (t *blockTable) deleteAt(i uint64) {
	for j := (i + 1) & t.mask; t.slots[j].head != NullBlock; j = (j + 1) & t.mask {
		s := &t.slots[j]
		h := t.home(BlockKey{s.hash, s.group})
		// Entry j may fill hole i when its home is not in (i, j] cyclically.
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = tableSlot{}
	t.n--
}

func (t *blockTable) clear() {
	clear(t.slots)
	t.n = 0
}
