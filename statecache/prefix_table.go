package statecache

// blockTable is the cached-block table, BlockKey → the head of the chain
// of blocks cached under it: open addressing with linear probing in Robin
// Hood order (a probe run's entries sorted by home) and backward-shift
// deletion over a fixed array of eight or more slots per pool block
// (tableSlots). The order lets a miss stop at the first entry homed past
// the key's, and a deletion at the first entry in its home: where keys
// fill a line (one hash's groups, tag; a run of one group's chain,
// runTag), both stop there instead of walking the run. It never holds more keys than blocks, so it never grows, and with
// no tombstones it never rehashes: lookups, inserts and deletes
// allocate nothing (a Go map, churned by evictions, occasionally does). It
// is never iterated.
//
// The table is larger than a core's cache on a real pool, and keys are
// hashes, so an operation's first probe is usually a cache miss. So a slot
// is 8 bytes, eight to a cache line (120k blocks: 8 MiB): the chain's head
// and a tag whose top bits are the slot's home (deletion re-homes entries
// from the tag alone) and whose others come from the key's hash. The key
// itself is the head's record (rec: a chain's blocks are cached under its
// key), read only when a tag matches. A lookup or an insert probes once, a
// deletion not at all (at), and the pool's batch operations touch a
// batch's slots before working on them (prefetch), so that their misses
// overlap instead of queueing; where a line holds a run, one touch a run.
type blockTable struct {
	slots []tableSlot
	mask  uint64
	shift uint8  // 32 − log2(len(slots)); len(slots) ≤ 2^32: block ids are int32
	gm    uint32 // 1<<shift | 1: a group's multiplier into its tag (tag)
	// runs: homes follow the keys' runs (keyAt), so runLen consecutive
	// blocks of a chain have their homes on one cache line (tag). Set for
	// a table of one group (over several, a hash's groups share the line)
	// of eight lines or more.
	runs bool
	low  uint32 // 1<<shift − 1: a runs tag's bits below the home
	n    int
	rec  []kvCacheBlock
	// at is, per block, 1 + the slot its chain's entry is in when it heads
	// a chain, else 0: an eviction finds the entry without the key (a read
	// of the record, then of the key's home, two misses in a row) and
	// without a probe. Dense (4 bytes a block), so mostly in cache.
	at []uint32
}

type tableSlot struct {
	tag  uint32
	head int32 // NullBlock (never cached): the slot is empty
}

// newBlockTable sizes a table for numBlocks blocks of groups KV cache
// groups whose records are rec.
func newBlockTable(numBlocks, groups int, rec []kvCacheBlock) blockTable {
	size := tableSlots(numBlocks)
	bits := uint8(0)
	for 1<<bits < size {
		bits++
	}
	return blockTable{slots: make([]tableSlot, size), mask: uint64(size - 1), shift: 32 - bits, gm: uint32(1)<<(32-bits) | 1,
		runs: groups <= 1 && size >= 8*runLen, low: uint32(1)<<(32-bits) - 1, rec: rec, at: make([]uint32, numBlocks)}
}

// tableSlots is the power of two ≥ 8·numBlocks: at a load of at most an
// eighth, probe runs and deletion's backward shifts stay short although
// keys come a line at a time. Over several groups one hash's keys fill a
// line (tag), on one group a run's (runTag); with fewer lines full, fewer
// adjoin. Eight did better than four and as well as sixteen at half the
// table (docs/performance.md, "Design choices measured"). Block ids are int32,
// so a pool has fewer than 2^31 blocks and 2^32 slots, the most a 32-bit
// tag homes, keep the load under a half.
func tableSlots(numBlocks int) int {
	size := 1
	for size < 8*numBlocks && size < 1<<32 {
		size <<= 1
	}
	return size
}

// tag is Fibonacci hashing's product of the key's hash, top 32 bits (one
// multiplication that every bit of the hash reaches: a block hash is
// already a mix's output), XOR the group times 2^shift + 1:
//   - g·2^shift puts groups 0–7 in the home's low three bits, so one
//     hash's keys in up to eight groups have their homes on one cache
//     line (eight slots), one each. A hybrid caches, looks up and evicts
//     a boundary's blocks in every group together (the coordinator's
//     groups in turn; the free queue's run of one boundary's blocks), and
//     those probes share a line instead of missing once per group
//     (fewer misses for a few more instructions: docs/performance.md,
//     "Design choices measured").
//   - g itself, below the home, keeps the groups' tags apart (2^shift of
//     them fit, 4096 on a pool of 100k blocks; past that two tags may
//     agree and the record still tells the keys apart), so a probe reads
//     no other group's record.
//
// One multiplication for the group, so the tag's callers stay small
// enough to inline.
func (t *blockTable) tag(k BlockKey) uint32 {
	p := uint32((uint64(k.Hash) * 0x9e3779b97f4a7c15) >> 32)
	if t.runs {
		return t.runTag(k.run, p)
	}
	return p ^ uint32(k.Group)*t.gm
}

// runTag is a runs table's tag for a key of run r whose hash's product
// has top bits p: the home is the line the run's top bits name, at the
// key's offset in the run; below the home, p's bits.
//
// A chain is cached, looked up and (freed tail first) evicted in order,
// so on a single group's table, where every key once had a home of its
// own anywhere, one line now serves runLen of them (docs/performance.md,
// "Design choices measured"). Runs
// that meet on a line interleave there and push past it, so the table
// has eight slots a block (tableSlots).
func (t *blockTable) runTag(r, p uint32) uint32 {
	s := t.shift & 31
	home := (r>>s)&^(runLen-1) | r&(runLen-1)
	return home<<s | p&t.low
}

// stride is how many positions from i on a prefetch of i's home covers:
// the rest of its run on a runs table, else one.
func (t *blockTable) stride(i int) int {
	if t.runs {
		return runLen - i&(runLen-1)
	}
	return 1
}

// home is the first slot of keys with tag tg: its top bits.
func (t *blockTable) home(tg uint32) uint64 { return uint64(tg >> (t.shift & 31)) }

// holds: the chain at head is cached under k.
func (t *blockTable) holds(head int32, k BlockKey) bool {
	r := &t.rec[head]
	return r.Hash == k.Hash && r.Group == k.Group
}

// probe is k's slot index and true, or the slot where k would go (set)
// and false: an empty one, or the first whose entry is homed past k's
// home.
func (t *blockTable) probe(k BlockKey) (uint64, bool) {
	tg := t.tag(k)
	i := t.home(tg)
	for d := uint64(0); ; d++ {
		s := t.slots[i]
		if s.head == NullBlock {
			return i, false
		}
		if s.tag == tg && t.holds(s.head, k) {
			return i, true
		}
		if t.dist(i, s.tag) < d {
			return i, false
		}
		i = (i + 1) & t.mask
	}
}

// dist is how far slot i is past the home of an entry tagged tg.
func (t *blockTable) dist(i uint64, tg uint32) uint64 { return (i - t.home(tg)) & t.mask }

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
func (t *blockTable) prefetch(k BlockKey) int32 { return t.slots[t.home(t.tag(k))].head }

// prefetchEntry reads the slot of the entry block b heads, if any, and
// the next, where a deletion's backward shift looks first and mostly
// ends: on the same cache line but for the line's last slot. (A slot a
// whole line on costs a second miss per eviction: docs/performance.md,
// "Design choices measured".)
func (t *blockTable) prefetchEntry(b int32) int32 {
	if a := uint64(t.at[b]); a != 0 {
		return t.slots[a-1].head ^ t.slots[a&t.mask].head
	}
	return 0
}

// set puts k, headed by head, whose record must already name k, at slot
// i, probe's answer for a missing k: the entries from i to the run's end
// move one slot on (the load stays under a half: there is an empty slot).
func (t *blockTable) set(i uint64, k BlockKey, head int32) {
	s := tableSlot{t.tag(k), head}
	for t.slots[i].head != NullBlock { // most inserts: at a load of a quarter, none
		s, t.slots[i] = t.slots[i], s
		t.at[t.slots[i].head] = uint32(i + 1)
		i = (i + 1) & t.mask
	}
	t.slots[i] = s
	t.at[s.head] = uint32(i + 1)
	t.n++
}

// put sets k's head, adding k when new; head's record must name k.
func (t *blockTable) put(k BlockKey, head int32) {
	if i, ok := t.probe(k); ok {
		t.at[t.slots[i].head] = 0
		t.slots[i].head = head
		t.at[head] = uint32(i + 1)
	} else {
		t.set(i, k, head)
	}
}

// del removes k, if present.
func (t *blockTable) del(k BlockKey) {
	if i, ok := t.probe(k); ok {
		t.deleteAt(i)
	}
}

// deleteAt empties slot i, moving the entries after it back one slot up
// to the first empty slot or entry in its home, so that no lookup passes
// an empty slot before its key and the run stays in home order.
func (t *blockTable) deleteAt(i uint64) {
	t.at[t.slots[i].head] = 0
	for {
		j := (i + 1) & t.mask
		s := t.slots[j]
		if s.head == NullBlock || t.dist(j, s.tag) == 0 {
			break
		}
		t.slots[i] = s
		t.at[s.head] = uint32(i + 1)
		i = j
	}
	t.slots[i] = tableSlot{}
	t.n--
}

func (t *blockTable) clear() {
	clear(t.slots)
	clear(t.at)
	t.n = 0
}
