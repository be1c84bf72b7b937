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
//     hands a held block to anyone else, and the holder only adds
//     positions), so CheckKV re-reads verified blocks only after a clobber.
//   - State: while only its holder writes them, a request's Mamba slots
//     carry one record, kept in the request's BlockTable (a lease) and
//     advanced there; any other access, and Free, writes it back first.
type Provenances struct {
	p        []Provenance
	owner    []*BlockTable // owner[b]: the lease holding b's record
	clobbers uint64        // wrapped writes so far: the KV checks' epoch
}

// NewProvenances starts all numBlocks blocks zeroed.
func NewProvenances(numBlocks int) *Provenances {
	ps := &Provenances{p: make([]Provenance, numBlocks)}
	for i := range ps.p {
		ps.p[i].Writer = NoRequest
	}
	return ps
}

// touch settles block b's lease, if any, before b is read or written.
func (ps *Provenances) touch(b int32) {
	if ps.p[b].leased {
		ps.Settle(ps.owner[b])
	}
}

// Get returns block b's provenance.
func (ps *Provenances) Get(b int32) Provenance {
	ps.touch(b)
	return ps.p[b]
}

// Clobbers is the number of wrapped writes so far.
func (ps *Provenances) Clobbers() uint64 { return ps.clobbers }

// StateValid reports whether block b holds exactly req's state after
// `computed` tokens: written by req with that many tokens absorbed, or
// still zero when computed is 0 (zero is the correct initial state).
// A tainted state of req's own is valid here: the taint was reported where
// it began and is carried, not re-reported.
func (ps *Provenances) StateValid(b int32, req RequestID, computed int) bool {
	ps.touch(b)
	p := &ps.p[b]
	if computed == 0 && p.Content == Zero {
		return true
	}
	return p.Content == State && p.Writer == req && !p.Clobber && int(p.Tokens) == computed
}

// WriteState records req's state write of `tokens` absorbed tokens.
func (ps *Provenances) WriteState(b int32, req RequestID, tokens int, step int64, tainted bool) {
	ps.touch(b)
	ps.p[b] = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: tainted, Intended: b}
}

// Clobber records a state write meant for slot intended that landed on b.
func (ps *Provenances) Clobber(b, intended int32, req RequestID, tokens int, step int64) {
	ps.touch(b)
	ps.clobbers++
	ps.p[b] = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: true, Clobber: true, Intended: intended}
}

// WriteKV records req writing positions up to `filled` of block b.
func (ps *Provenances) WriteKV(b int32, req RequestID, filled int, step int64) {
	ps.touch(b)
	p := &ps.p[b]
	if p.Content != KV || p.Writer != req {
		*p = Provenance{Writer: req, Content: KV, Step: step, Intended: b}
	}
	if int32(filled) > p.Tokens {
		p.Tokens = int32(filled)
	}
	p.Step = step
}

// KVValid reports whether block b holds req's keys for `need` positions.
func (ps *Provenances) KVValid(b int32, req RequestID, need int) bool {
	ps.touch(b)
	p := &ps.p[b]
	return p.Content == KV && p.Writer == req && int(p.Tokens) >= need
}

// CheckKV is attention group g's read of positions [0, end) of req's K/V
// through t: it returns the index in t.Attn[g] of the first block that does
// not hold them (the read is stale from there), or -1. Blocks verified full
// by an earlier call are skipped unless a wrapped write happened since.
func (ps *Provenances) CheckKV(t *BlockTable, g int, req RequestID, end, blockSize int) int {
	if len(t.kvOK) != len(t.Attn) {
		t.kvOK = make([]int32, len(t.Attn))
	}
	if t.kvEpoch != ps.clobbers {
		clear(t.kvOK)
		t.kvEpoch = ps.clobbers
	}
	blocks := t.Attn[g]
	last := (end - 1) / blockSize
	for bi := int(t.kvOK[g]); bi <= last; bi++ {
		if !ps.KVValid(blocks[bi], req, min(blockSize, end-bi*blockSize)) {
			t.kvOK[g] = int32(bi)
			return bi
		}
	}
	t.kvOK[g] = int32(end / blockSize) // full blocks only: the last may grow
	return -1
}

// lease is a request's Mamba slots' shared provenance record while it
// alone writes them (see Provenances).
type lease struct {
	ps      *Provenances // nil: no lease
	writer  RequestID
	tokens  int32
	step    int64
	tainted bool
}

// LeaseState moves the record of t's Mamba slots, which req has just
// written alike with WriteState(slot, req, tokens, step, tainted), into t,
// so that AdvanceState can update all of them at once.
func (ps *Provenances) LeaseState(t *BlockTable, req RequestID, tokens int, step int64, tainted bool) {
	ps.Settle(t)
	if ps.owner == nil {
		ps.owner = make([]*BlockTable, len(ps.p))
	}
	for _, b := range t.Mamba {
		if b == NullBlock {
			continue
		}
		ps.touch(b)
		ps.p[b].leased = true
		ps.owner[b] = t
	}
	t.st = lease{ps: ps, writer: req, tokens: int32(tokens), step: step, tainted: tainted}
}

// AdvanceState is req's state write of `tokens` absorbed tokens to every
// Mamba slot of t, after a read expecting its state after `computed`. It
// applies only while t holds the lease and the slots hold exactly that
// state (the read is then valid); it returns the taint the state carries
// and whether it applied. Otherwise the caller settles and checks slot by
// slot.
func (ps *Provenances) AdvanceState(t *BlockTable, req RequestID, computed, tokens int, step int64) (tainted, ok bool) {
	st := &t.st
	if st.ps != ps || st.writer != req || int(st.tokens) != computed {
		return false, false
	}
	st.tokens, st.step = int32(tokens), step
	return st.tainted, true
}

// Settle writes t's lease, if any, back to its slots' records.
func (ps *Provenances) Settle(t *BlockTable) {
	st := &t.st
	if st.ps == nil {
		return
	}
	for _, b := range t.Mamba {
		if b != NullBlock && st.ps.owner[b] == t {
			st.ps.p[b] = Provenance{Writer: st.writer, Content: State, Tokens: st.tokens, Step: st.step, Tainted: st.tainted, Intended: b}
			st.ps.owner[b] = nil
		}
	}
	*st = lease{}
}
