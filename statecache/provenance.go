package statecache

// Content is what a block's bytes currently hold.
type Content uint8

const (
	Zero  Content = iota // zeroed at start-up, never written
	KV                   // attention keys and values
	State                // Mamba conv + SSM state
)

func (c Content) String() string {
	return [...]string{"zero", "kv", "state"}[c]
}

// Provenance is the history of one block's bytes.
type Provenance struct {
	Writer  RequestID // last writer; NoRequest while Zero
	Content Content
	// leased: the true record lives in the holder's BlockTable (see
	// LeaseState); every accessor settles it first, so no caller sees it.
	leased bool
	// Tokens: for KV, positions of the block filled; for State, the
	// number of the writer's tokens the state has absorbed.
	Tokens int32
	Step   int64 // step of the last write
	// Tainted: the state was computed from bytes that were not the
	// writer's own (a stale read or a clobber upstream).
	Tainted bool
	// Clobber: the last write landed here through a wrong (wrapped)
	// address, meant for slot Intended.
	Clobber  bool
	Intended int32
}

// Provenances tracks every block. Reads are judged against what the reader
// expects the bytes to be.
//
// Two shortcuts keep a decode row O(1) instead of O(context + groups); both
// give the same answers as checking every block every step:
//   - KV: a block a request has verified to hold its own full K/V can only
//     change behind its back through a wrapped state write (the pool never
//     hands a held block to anyone for writing: a prefix hit shares only
//     full blocks, and the sharer starts computing after them), so
//     AccessKV re-reads verified blocks only after a clobber; the partly
//     filled last block is leased like the state (never shared: a block is
//     cached only when the step that fills it is allocated, and a lease is
//     taken only on a block left partly filled). The blocks a request
//     reached by a hit are not its own K/V: AccessKV starts after them
//     (BlockTable.HitBlocks) and the backend checks them once per hit
//     against their PrefixRecord; reading one settles its writer's lease.
//   - State: while only its holder writes them, a request's Mamba slots
//     carry one record, kept in the request's BlockTable (a lease) and
//     advanced there; any other access, and Free, writes it back first.
type Provenances struct {
	// Plain turns both shortcuts off: every access reads and writes every
	// block's record. It is the reference the shortcuts are tested against.
	Plain bool

	// pages hold the records of blocks 1024 at a time, allocated when a
	// block of the page is first accessed: memory follows the blocks a
	// run touches, not the pool size (a pool of 2^28 blocks serving a
	// few thousand requests touches a few pages).
	pages    []*recordPage
	clobbers uint64 // wrapped writes so far: the KV checks' epoch
	sink     bool   // keeps Prefetch's reads alive
}

const recordPageBits = 10

// recordPage is 1024 blocks' provenances, and the lease holding each, if
// any, apart: the hot accesses read and write only the provenance, two to
// a cache line (a record with its owner beside it straddled two lines
// one time in two).
type recordPage struct {
	p     [1 << recordPageBits]Provenance
	owner [1 << recordPageBits]*BlockTable
}

// NewProvenances starts all numBlocks blocks zeroed.
func NewProvenances(numBlocks int) *Provenances {
	const n = 1 << recordPageBits
	return &Provenances{pages: make([]*recordPage, (numBlocks+n-1)/n)}
}

// page is block b's page, allocated on first use.
func (ps *Provenances) page(b int32) *recordPage {
	pg := ps.pages[uint32(b)>>recordPageBits]
	if pg == nil {
		pg = ps.newPage(b)
	}
	return pg
}

// at is block b's provenance record.
func (ps *Provenances) at(b int32) *Provenance {
	return &ps.page(b).p[uint32(b)&(1<<recordPageBits-1)]
}

// ownerOf is where block b's lease holder is kept.
func (ps *Provenances) ownerOf(b int32) **BlockTable {
	return &ps.page(b).owner[uint32(b)&(1<<recordPageBits-1)]
}

// newPage allocates b's page with every block zeroed, out of page's line
// so that page, and with it at and ownerOf, stay small enough to inline.
func (ps *Provenances) newPage(b int32) *recordPage {
	pg := new(recordPage)
	for i := range pg.p {
		pg.p[i].Writer = NoRequest
	}
	ps.pages[uint32(b)>>recordPageBits] = pg
	return pg
}

// RecordBytes is what the records of the blocks touched so far occupy.
func (ps *Provenances) RecordBytes() int64 {
	var n int64
	for _, pg := range ps.pages {
		if pg != nil {
			n += int64(len(pg.p)) * RecordBytesPerBlock
		}
	}
	return n
}

// touch settles block b's lease, if any, before b is read or written,
// and returns b's record (pages never move: it stays b's through Settle).
func (ps *Provenances) touch(b int32) *Provenance {
	p := ps.at(b)
	if p.leased {
		ps.Settle(*ps.ownerOf(b))
	}
	return p
}

// Get returns block b's provenance.
func (ps *Provenances) Get(b int32) Provenance {
	return *ps.touch(b)
}

// Clobbers is the number of wrapped writes so far.
func (ps *Provenances) Clobbers() uint64 { return ps.clobbers }

// StateValid reports whether block b holds exactly req's state after
// `computed` tokens: written by req with that many tokens absorbed, or
// still zero when computed is 0 (zero is the correct initial state).
// A tainted state of req's own is valid here: the taint was reported where
// it began and is carried, not re-reported.
func (ps *Provenances) StateValid(b int32, req RequestID, computed int) bool {
	p := ps.touch(b)
	if computed == 0 && p.Content == Zero {
		return true
	}
	return p.Content == State && p.Writer == req && !p.Clobber && int(p.Tokens) == computed
}

// WriteState records req's state write of `tokens` absorbed tokens.
func (ps *Provenances) WriteState(b int32, req RequestID, tokens int, step int64, tainted bool) {
	*ps.touch(b) = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: tainted, Intended: b}
}

// WriteStates is WriteState of each block of blocks but NullBlock and
// skip, blocks[j] absorbing firstTokens + j·blockSize tokens: a Mamba
// cache mode's states at the block boundaries a chunk crosses.
func (ps *Provenances) WriteStates(blocks []int32, skip int32, req RequestID, firstTokens, blockSize int, step int64, tainted bool) {
	tokens := firstTokens
	for _, b := range blocks {
		if b != NullBlock && b != skip {
			ps.WriteState(b, req, tokens, step, tainted)
		}
		tokens += blockSize
	}
}

// Prefetch reads the records of blocks (NullBlock and blocks whose page
// is not allocated yet passed over): a loop of Prefetch over several
// Mamba groups' tables issues their cache misses together, where the
// writes that follow, one group at a time, would wait for each.
func (ps *Provenances) Prefetch(blocks []int32) {
	var s bool
	for _, b := range blocks {
		if pg := ps.pages[uint32(b)>>recordPageBits]; b != NullBlock && pg != nil {
			s = s != pg.p[uint32(b)&(1<<recordPageBits-1)].leased
		}
	}
	ps.sink = ps.sink != s
}

// Clobber records a state write meant for slot intended that landed on b.
func (ps *Provenances) Clobber(b, intended int32, req RequestID, tokens int, step int64) {
	p := ps.touch(b)
	ps.clobbers++
	*p = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: true, Clobber: true, Intended: intended}
}

// WriteKV records req writing positions [from, filled) of block b. A write
// that starts mid-block onto bytes that are not req's own K/V (a wrapped
// state write clobbered them) leaves positions before `from` damaged: the
// record is tainted until a read reports it (AdoptKV).
func (ps *Provenances) WriteKV(b int32, req RequestID, from, filled int, step int64) {
	p := ps.touch(b)
	if p.Content != KV || p.Writer != req {
		*p = Provenance{Writer: req, Content: KV, Step: step, Intended: b, Tainted: from > 0}
	}
	if int32(filled) > p.Tokens {
		p.Tokens = int32(filled)
	}
	p.Step = step
}

// KVValid reports whether block b holds req's keys for `need` positions.
func (ps *Provenances) KVValid(b int32, req RequestID, need int) bool {
	p := ps.touch(b)
	return p.Content == KV && p.Writer == req && !p.Tainted && int(p.Tokens) >= need
}

// AdoptKV records that req's read of block b, reported stale, now carries
// the damage: b counts as req's K/V for `filled` positions from here on, so
// one corruption is reported once, as a tainted state is.
func (ps *Provenances) AdoptKV(b int32, req RequestID, filled int, step int64) {
	*ps.touch(b) = Provenance{Writer: req, Content: KV, Tokens: int32(filled), Step: step, Intended: b}
}

// AccessKV is attention group g's access for one row of req through t:
// write K/V for positions [computed, end), then read [0, end). It returns
// the index in t.Attn[g] of the first block that does not hold req's K/V
// for the read (the read is stale from there), or -1; MissingBlock when t
// holds too few blocks. Blocks verified full by an earlier access are not
// re-read unless a wrapped write happened since, and the partly filled
// last block stays leased to t while only req writes it, so a decode
// touches no block record at all.
func (ps *Provenances) AccessKV(t *BlockTable, g int, req RequestID, computed, end, blockSize int, step int64) int {
	if t.kvEpoch != ps.clobbers || ps.Plain {
		t.resetKV()
		t.kvEpoch = ps.clobbers
	}
	kg := &t.kv0
	if g > 0 {
		kg = t.kvGroup(g)
	}
	first, last := computed/blockSize, (end-1)/blockSize
	if tl := &kg.tail; tl.leased && t.st.ps == ps {
		if kg.tailServes(req, first, last, end, t.covered) {
			// Only req has written the leased block: it holds req's
			// positions up to tl.tokens, and now up to end.
			tl.tokens = max(tl.tokens, int32(end-first*blockSize))
			tl.step = step
			if end == (last+1)*blockSize {
				kg.ok = int32(last + 1)
			}
			return -1
		}
		ps.settleTail(t, kg, g)
	}
	blocks := t.Attn[g]
	if last >= len(blocks) {
		return MissingBlock
	}
	for bi := first; bi <= last; bi++ {
		ps.WriteKV(blocks[bi], req, max(0, computed-bi*blockSize), min(blockSize, end-bi*blockSize), step)
	}
	for bi := int(kg.ok); bi <= last; bi++ {
		if !ps.KVValid(blocks[bi], req, min(blockSize, end-bi*blockSize)) {
			kg.ok = int32(bi)
			return bi
		}
	}
	kg.ok = int32(end / blockSize) // full blocks only: the last may grow
	if b := blocks[last]; end%blockSize != 0 && !ps.Plain && ps.at(b).isKVOf(req) {
		// Lease the partly filled block, whose record req just verified.
		ps.leaseOf(t)
		p := ps.at(b)
		kg.tail = kvTail{leased: true, idx: int32(last), writer: p.Writer, tokens: p.Tokens, step: p.Step}
		p.leased = true
		*ps.ownerOf(b) = t
	}
	return -1
}

// tailServes: the leased last block alone takes positions [first's
// start, end) for req, which only req has written (AccessKV's shortcut).
func (kg *kvGroup) tailServes(req RequestID, first, last, end, covered int) bool {
	tl := &kg.tail
	return int(tl.idx) == first && first == last && int(kg.ok) == first && tl.writer == req && end <= covered
}

// isKVOf: the record is req's own undamaged K/V, the only kind a lease
// can write back.
func (p *Provenance) isKVOf(req RequestID) bool {
	return p.Content == KV && p.Writer == req && !p.Tainted && !p.Clobber && !p.leased
}

// MissingBlock is AccessKV's answer when the table lacks a block to access.
const MissingBlock = -2

// settleTail writes t's lease of attention group g's last block back.
func (ps *Provenances) settleTail(t *BlockTable, kg *kvGroup, g int) {
	tl := &kg.tail
	if !tl.leased {
		return
	}
	b := t.Attn[g][tl.idx]
	*ps.at(b) = Provenance{Writer: tl.writer, Content: KV, Tokens: tl.tokens, Step: tl.step, Intended: b}
	*ps.ownerOf(b) = nil
	tl.leased = false
}

// leaseOf readies t to hold leases over ps's records.
func (ps *Provenances) leaseOf(t *BlockTable) *lease {
	st := &t.st
	if st.ps != ps {
		ps.Settle(t)
		st.ps = ps
	}
	return st
}

// lease holds the record of t's Mamba slots while t's request alone
// writes them (see Provenances); ps is set while t holds any lease.
type lease struct {
	ps      *Provenances
	state   bool // the Mamba slots are leased
	tainted bool
	tokens  int32
	writer  RequestID
	step    int64
	// spec: the state columns under speculative decoding are leased,
	// one record per column in cols (see spec_lease.go); specK is K.
	spec  bool
	specK int
	cols  []colRecord
}

// kvGroup is one attention group's check cache: ok leading blocks are
// verified full, and tail is the leased partly filled block.
type kvGroup struct {
	ok   int32
	tail kvTail
}

// kvTail is a leased KV block, t.Attn[g][idx].
type kvTail struct {
	leased      bool
	idx, tokens int32
	writer      RequestID
	step        int64
}

// LeaseState moves the record of t's Mamba slots, which req has just
// written alike with WriteState(slot, req, tokens, step, tainted), into t,
// so that AdvanceState can update all of them at once.
func (ps *Provenances) LeaseState(t *BlockTable, req RequestID, tokens int, step int64, tainted bool) {
	if ps.Plain {
		return
	}
	for _, b := range t.Mamba {
		if b != NullBlock {
			ps.touch(b)
		}
	}
	st := ps.leaseOf(t)
	for _, b := range t.Mamba {
		if b != NullBlock {
			ps.at(b).leased = true
			*ps.ownerOf(b) = t
		}
	}
	st.state, st.writer, st.tokens, st.step, st.tainted = true, req, int32(tokens), step, tainted
}

// AdvanceState is req's state write of `tokens` absorbed tokens to every
// Mamba slot of t, after a read expecting its state after `computed`. It
// applies only while t holds the lease and the slots hold exactly that
// state (the read is then valid); it returns the taint the state carries
// and whether it applied. Otherwise the caller settles and checks slot by
// slot.
func (ps *Provenances) AdvanceState(t *BlockTable, req RequestID, computed, tokens int, step int64) (tainted, ok bool) {
	st := &t.st
	if !ps.stateLeased(t, req, computed) {
		return false, false
	}
	st.tokens, st.step = int32(tokens), step
	return st.tainted, true
}

// stateLeased: t's Mamba slots are leased to req and hold its state
// after computed tokens (AdvanceState's shortcut).
func (ps *Provenances) stateLeased(t *BlockTable, req RequestID, computed int) bool {
	st := &t.st
	return st.ps == ps && st.state && st.writer == req && int(st.tokens) == computed
}

// SettleState writes t's Mamba state lease, if any, back to its slots.
func (ps *Provenances) SettleState(t *BlockTable) {
	st := &t.st
	if st.ps == nil {
		return
	}
	st.ps.settleColumns(t)
	if !st.state {
		return
	}
	for _, b := range t.Mamba {
		if b != NullBlock && *st.ps.ownerOf(b) == t {
			*st.ps.at(b) = Provenance{Writer: st.writer, Content: State, Tokens: st.tokens, Step: st.step, Tainted: st.tainted, Intended: b}
			*st.ps.ownerOf(b) = nil
		}
	}
	st.state = false
}

// Settle writes every lease t holds back to its blocks' records.
func (ps *Provenances) Settle(t *BlockTable) {
	st := &t.st
	if st.ps == nil {
		return
	}
	ps = st.ps
	ps.SettleState(t)
	for g := range t.Attn {
		ps.settleTail(t, t.kvGroup(g), g)
	}
	st.ps = nil
}
