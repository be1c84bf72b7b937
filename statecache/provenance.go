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
type Provenances struct{ p []Provenance }

// NewProvenances starts all numBlocks blocks zeroed.
func NewProvenances(numBlocks int) *Provenances {
	ps := &Provenances{p: make([]Provenance, numBlocks)}
	for i := range ps.p {
		ps.p[i].Writer = NoRequest
	}
	return ps
}

// Get returns block b's provenance.
func (ps *Provenances) Get(b int32) Provenance { return ps.p[b] }

// StateValid reports whether block b holds exactly req's state after
// `computed` tokens: written by req with that many tokens absorbed, or
// still zero when computed is 0 (zero is the correct initial state).
// A tainted state of req's own is valid here: the taint was reported where
// it began and is carried, not re-reported.
func (ps *Provenances) StateValid(b int32, req RequestID, computed int) bool {
	p := &ps.p[b]
	if computed == 0 && p.Content == Zero {
		return true
	}
	return p.Content == State && p.Writer == req && !p.Clobber && int(p.Tokens) == computed
}

// WriteState records req's state write of `tokens` absorbed tokens.
func (ps *Provenances) WriteState(b int32, req RequestID, tokens int, step int64, tainted bool) {
	ps.p[b] = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: tainted, Intended: b}
}

// Clobber records a state write meant for slot intended that landed on b.
func (ps *Provenances) Clobber(b, intended int32, req RequestID, tokens int, step int64) {
	ps.p[b] = Provenance{Writer: req, Content: State, Tokens: int32(tokens), Step: step, Tainted: true, Clobber: true, Intended: intended}
}

// WriteKV records req writing positions up to `filled` of block b.
func (ps *Provenances) WriteKV(b int32, req RequestID, filled int, step int64) {
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
	p := &ps.p[b]
	return p.Content == KV && p.Writer == req && int(p.Tokens) >= need
}
