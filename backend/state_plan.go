package backend

// StatePlan is what the Mamba cache modes (align, all) make the worker and
// the kernels do with state blocks beyond a row's own slots, as the
// symbolic backend decides it: a numeric backend that sets Symbolic.Plan
// does the same with bytes, so a restore from the wrong block reads the
// wrong numbers and a right one the right numbers. Rows are indices into
// the step's batch; Post holds the copies that follow a step (align
// mode's boundary copy under speculative decoding, PostProcess), in order.
type StatePlan struct {
	Ops  []StateOp
	Post []StateOp
}

// StateOpKind says when a StateOp runs.
type StateOpKind uint8

const (
	// OpCopy copies a state into Dst before the row's kernels run:
	// align mode's preprocess copy (preprocess_mamba), and all mode's
	// read of the block holding the last computed token, which the kernel
	// then continues in Dst (the same numbers as reading Src in place).
	OpCopy StateOpKind = iota
	// OpBoundary stores the state after Tokens tokens into Dst while the
	// row's kernel passes that position: all mode's block boundaries.
	OpBoundary
	// OpColumns names the state columns the row's kernel writes (Cols:
	// the running block, then the K speculative blocks the runner finds
	// from its own count), read from column 0 (after any OpCopy): align
	// mode under speculative decoding.
	OpColumns
)

// StateOp is one state-block operation of Mamba group Group for row Row.
// For OpCopy and post-step copies the recurrent state comes from Src and
// the conv window from ConvSrc at column ConvOff (_copy_mamba_state_block:
// state[bt[src_col], token_bias:] into the destination's first columns,
// vllm/v1/worker/mamba_utils.py @ 00b08dc4), where the kind keeps
// the K − 1 + num_spec conv columns in the first column's block (Mamba2,
// GDN, KDA under speculative decoding); kinds with a window per column
// take it from Src at column 0.
type StateOp struct {
	Kind         StateOpKind
	Row, Group   int
	Src, ConvSrc int32
	ConvOff      int
	Dst          int32
	Tokens       int
	Cols         []int32
}

// record appends op for the row being executed, when a plan is kept.
func (s *Symbolic) record(op StateOp) {
	if s.Plan == nil {
		return
	}
	op.Row = s.planRow
	s.Plan.Ops = append(s.Plan.Ops, op)
}

// recordCopy records a plain copy of block src into dst for group g.
func (s *Symbolic) recordCopy(g int, src, dst int32) {
	if s.Plan != nil && src != dst {
		s.record(StateOp{Kind: OpCopy, Group: g, Src: src, ConvSrc: src, Dst: dst})
	}
}
