package statecache

// Under speculative decoding each Mamba group holds 1 + K state columns
// and a decode writes up to 1 + K of them per row. While only the holder
// writes them, column j of every group carries the same record (the
// kernels treat the groups alike), so the column lease keeps one record
// per column in the table instead of one per column per group: a clean
// spec decode then touches no block record. Every accessor of a leased
// slot settles the whole table first, as for the plain state lease.

// colRecord is the record every group's slot in one column shares while
// the column is leased: the holder's state after tokens, written at step.
type colRecord struct {
	leased  bool
	tainted bool
	tokens  int32
	step    int64
}

// LeaseColumns leases, for req's table t under K = k speculative blocks,
// every column whose slots all hold the same undamaged state of req's;
// called after a row's slot-by-slot accesses, so that the next decodes
// can take SpecDecode's shortcut.
func (ps *Provenances) LeaseColumns(t *BlockTable, req RequestID, k int) {
	if ps.Plain || len(t.Mamba) == 0 {
		return
	}
	ps.SettleState(t)
	// Decide first, then mark: a Get settles whatever lease holds the
	// block, so none may run once this table's marks are going in.
	var want uint64
	for j := 0; j <= k && j < 64; j++ {
		if ps.columnAlike(t, req, j, k) {
			want |= 1 << j
		}
	}
	st := ps.leaseOf(t)
	if cap(st.cols) < k+1 {
		st.cols = make([]colRecord, k+1)
	}
	st.cols = st.cols[:k+1]
	clear(st.cols)
	for j := 0; want>>j != 0; j++ {
		if want&(1<<j) == 0 {
			continue
		}
		p := ps.at(t.Column(0, j, k))
		st.cols[j] = colRecord{leased: true, tainted: p.Tainted, tokens: p.Tokens, step: p.Step}
		for g := range t.Mamba {
			b := t.Column(g, j, k)
			ps.at(b).leased, *ps.ownerOf(b) = true, t
		}
	}
	st.writer, st.specK = req, k
	st.spec = true
}

// columnAlike: every group's slot in column j holds the same undamaged
// state of req's.
func (ps *Provenances) columnAlike(t *BlockTable, req RequestID, j, k int) bool {
	var first Provenance
	for g := range t.Mamba {
		b := t.Column(g, j, k)
		if b == NullBlock {
			return false
		}
		p := ps.Get(b)
		if g == 0 {
			first = p
		}
		if p.Content != State || p.Writer != req || p.Clobber ||
			p.Tokens != first.Tokens || p.Step != first.Step || p.Tainted != first.Tainted {
			return false
		}
	}
	return true
}

// SpecDecode is req's spec-decode state access through t's leased
// columns: read column acc, which must hold req's state after computed
// tokens, and write the state after each of the q query positions to
// columns 0..min(q, k+1)-1, every group alike. It applies only when the
// read column and every written column are leased to req; it returns the
// taint the read state carries and whether it applied. Otherwise the
// caller settles and goes slot by slot.
func (ps *Provenances) SpecDecode(t *BlockTable, req RequestID, computed, acc, q, k int, step int64) (tainted, ok bool) {
	st := &t.st
	if st.ps != ps || !st.spec || st.writer != req || st.specK != k || acc > k {
		return false, false
	}
	cols := st.cols
	if c := &cols[acc]; !c.leased || int(c.tokens) != computed {
		return false, false
	}
	n := min(q, k+1)
	for j := 0; j < n; j++ {
		if !cols[j].leased {
			return false, false
		}
	}
	tainted = cols[acc].tainted
	for j := 0; j < n; j++ {
		cols[j] = colRecord{leased: true, tainted: tainted, tokens: int32(computed + 1 + j), step: step}
	}
	return tainted, true
}

// settleColumns writes t's column lease back to its slots.
func (ps *Provenances) settleColumns(t *BlockTable) {
	st := &t.st
	if !st.spec {
		return
	}
	k := st.specK
	for j := range st.cols {
		c := &st.cols[j]
		if !c.leased {
			continue
		}
		for g := range t.Mamba {
			b := t.Column(g, j, k)
			if o := ps.ownerOf(b); *o == t {
				*ps.at(b) = Provenance{Writer: st.writer, Content: State, Tokens: c.tokens, Step: c.step, Tainted: c.tainted, Intended: b}
				*o = nil
			}
		}
		c.leased = false
	}
	st.spec = false
}
