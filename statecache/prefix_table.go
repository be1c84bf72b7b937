package statecache

// blockTable is the cached-block table, BlockKey → the chain of blocks
// cached under it: open addressing with linear probing and backward-shift
// deletion over a fixed array of at least twice the pool's blocks. It
// never holds more keys than blocks, so it never grows, and with no
// tombstones it never rehashes: lookups, inserts and deletes allocate
// nothing (a Go map, churned by evictions, occasionally does). It is never
// iterated.
type blockTable struct {
	slots []tableSlot
	mask  uint64
	n     int
}

type tableSlot struct {
	key   BlockKey
	chain dupChain // chain.head == 0 (the null block, never cached): empty
}

func newBlockTable(numBlocks int) blockTable {
	size := tableSlots(numBlocks)
	return blockTable{slots: make([]tableSlot, size), mask: uint64(size - 1)}
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

func (t *blockTable) home(k BlockKey) uint64 {
	return mix(uint64(k.Hash)^uint64(uint32(k.Group))*0x9e3779b97f4a7c15) & t.mask
}

// find is k's slot index, or -1.
func (t *blockTable) find(k BlockKey) int {
	for i := t.home(k); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.chain.head == NullBlock {
			return -1
		}
		if s.key == k {
			return int(i)
		}
	}
}

func (t *blockTable) get(k BlockKey) (dupChain, bool) {
	if i := t.find(k); i >= 0 {
		return t.slots[i].chain, true
	}
	return dupChain{}, false
}

// put sets k's chain, adding k when new.
func (t *blockTable) put(k BlockKey, c dupChain) {
	i := t.home(k)
	for ; t.slots[i].chain.head != NullBlock; i = (i + 1) & t.mask {
		if t.slots[i].key == k {
			t.slots[i].chain = c
			return
		}
	}
	t.slots[i] = tableSlot{k, c}
	t.n++
}

// del removes k, shifting later entries of its probe run back so that no
// lookup passes an empty slot before its key.
func (t *blockTable) del(k BlockKey) {
	f := t.find(k)
	if f < 0 {
		return
	}
	i := uint64(f)
	for j := (i + 1) & t.mask; t.slots[j].chain.head != NullBlock; j = (j + 1) & t.mask {
		h := t.home(t.slots[j].key)
		// Entry j may fill hole i when its home is not in (i, j] cyclically.
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
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
