package statecache

// DecodesLeased reports whether req's decodes of positions [computed, end)
// through t, one token per step, would each take both shortcuts: every
// attention group's leased last block (AccessKV) and the leased Mamba
// slots (AdvanceState). Each such call only raises the leased tail's
// tokens and sets its step, and sets the state lease's tokens and step,
// so one AccessKV(computed, end) and one AdvanceState(computed, end) at
// the last step leave exactly the records the per-step calls would: the
// engine's bulk of steady decode steps rests on this. The span must lie
// within one block (a call that fills the block marks it verified, as
// the last per-step call would). It reads and changes nothing.
func (ps *Provenances) DecodesLeased(t *BlockTable, req RequestID, computed, end, blockSize int) bool {
	if ps.Plain || t.kvEpoch != ps.clobbers || end <= computed || computed <= 0 {
		return false
	}
	first, last := computed/blockSize, (end-1)/blockSize
	for g := range t.Attn {
		kg := &t.kv0
		if g > 0 {
			if g-1 >= len(t.kvN) {
				return false
			}
			kg = &t.kvN[g-1]
		}
		if !kg.tail.leased || t.st.ps != ps || !kg.tailServes(req, first, last, end, t.covered) {
			return false
		}
	}
	return len(t.Mamba) == 0 || ps.stateLeased(t, req, computed)
}
