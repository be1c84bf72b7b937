package backend

import (
	"fmt"

	"statesim/invariant"
	"statesim/model"
	"statesim/report"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
	"statesim/step"
)

// Stats are the symbolic backend's counters for reports and plots.
type Stats struct {
	// Misclassified counts rows of new requests (no computed tokens) that
	// the reorder put in the decode region or the split on the decode
	// path. In an attention-only model they are harmless and reported for
	// information only.
	Misclassified int64
	// MambaDecodeRows / MambaPrefillRows count rows per kernel path.
	MambaDecodeRows, MambaPrefillRows int64
	// StateBytesMoved is the state traffic of the Mamba kernels (read +
	// write), for the step-time model.
	StateBytesMoved int64
	// HighestSlot is the highest state slot index any kernel addressed.
	HighestSlot int32
	// CorruptedRequests counts requests whose state became corrupt.
	CorruptedRequests int64
	// Imposters counts rows that were bug A with a stale read.
	Imposters int64
}

// maxImposters bounds the list; the count in Stats is exact.
const maxImposters = 100

// Symbolic performs cache accesses without arithmetic.
type Symbolic struct {
	Prov  *statecache.Provenances
	Pool  *statecache.BlockPool
	Index statecache.StateIndex
	Rec   *invariant.Recorder
	Stats Stats
	// Imposters are the first imposter rows, in order.
	Imposters []report.Imposter
	// Out, when set, is the record of the step being executed: rows in
	// the batch's order, to which Execute adds what the kernels did
	// (wrapped writes, imposters, and with Detail Reads each state read).
	Out    *step.Record
	Detail step.Detail
	// KV, when it caches by prefix, names the pool's groups for the check
	// of KV reads through a hit (checkHits).
	KV      *statecache.KVCacheManager
	hitRows []int // rows whose hit blocks are checked once all rows wrote
	// copied: the records of the step's copy sources, read before any
	// copy writes (blockCopies).
	copied []statecache.Provenance
	// stateCopyRead: readers whose state copy this step was reported.
	stateCopyRead []statecache.RequestID
	// postRows: align-mode rows whose boundary copy runs after the batch
	// (async scheduling); now: the time of the step last executed.
	postRows []*sched.Row
	now      sim.Time
	// AcceptedAtSchedule: rows carry their acceptances when executed
	// (async scheduling draws them at schedule), so align mode's boundary
	// copy runs in Execute; otherwise the engine calls PostProcess once
	// the step's output is applied.
	AcceptedAtSchedule bool
	// Plan, when set, receives the Mamba cache modes' state copies (a
	// numeric backend's to perform); planRow is the row being executed.
	Plan    *StatePlan
	planRow int
	// SeedBlockSize divides a new or resumed request's running column in
	// align mode under speculative decoding: Model Runner V2's
	// add_request divides by cache_config.block_size as the engine core
	// left it (MambaHybridModelState.add_request,
	// vllm/v1/worker/gpu/model_states/mamba_hybrid.py @ 6adad0876), V1's
	// preprocess_mamba by the Mamba spec's block (vllm/v1/worker/
	// mamba_utils.py); 0: the layout's block.
	SeedBlockSize int
	layout        model.Layout
	bs            int
	stateRW       int64 // bytes one Mamba layer moves to read+write a state
	nMamba        int   // Mamba layers
	step          int64
}

// NewSymbolic builds the symbolic backend over a pool and its layout.
func NewSymbolic(shape *model.Shape, layout model.Layout, pool *statecache.BlockPool, bits uint, rec *invariant.Recorder) *Symbolic {
	return &Symbolic{
		Prov: statecache.NewProvenances(pool.NumBlocks()),
		Pool: pool,
		Index: statecache.StateIndex{
			Stride: layout.StateStrideElems,
			Bits:   shape.IndexBits(int(bits)), // 32-bit only where that kind's kernel was
			Elems:  shape.SSMStateElems(),
			Offset: stateOffsetElems(shape),
		},
		Rec:     rec,
		layout:  layout,
		bs:      layout.BlockSize,
		stateRW: 2 * shape.MambaPageBytes(),
		nMamba:  shape.NumMambaLayers(),
	}
}

// stateOffsetElems is where the SSM state starts in a page: after the conv
// state, in SSM-state elements.
func stateOffsetElems(s *model.Shape) int64 { return s.StateOffsetElems() }

func (s *Symbolic) Name() string { return "symbolic" }

// Execute performs every row's accesses for one step.
func (s *Symbolic) Execute(out *sched.Output, now sim.Time) error {
	s.step, s.now = out.Step, now
	if len(out.BlockCopies) > 0 {
		if err := s.blockCopies(out, now); err != nil {
			return err
		}
	}
	clobbers := s.Prov.Clobbers()
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		s.planRow = i
		if row.NumComputed == 0 && (row.Region == sched.RegionDecode || row.Path == sched.PathDecode) {
			s.Stats.Misclassified++
		}
		if err := s.attention(row, now); err != nil {
			return err
		}
		if r.Blocks.HitBlocks() > 0 && !r.Blocks.HitChecked() {
			s.hitRows = append(s.hitRows, i)
		}
		if len(r.Blocks.Mamba) > 0 {
			if s.Out != nil && s.Detail&step.Reads != 0 && i < len(s.Out.Rows) {
				s.reads(&s.Out.Rows[i], row)
			}
			s.mamba(row, now)
		}
	}
	for _, row := range s.postRows {
		s.PostProcess(row)
	}
	s.postRows = s.postRows[:0]
	if s.Prov.Clobbers() != clobbers {
		// A wrapped write in this step may have hit blocks that rows
		// before it had read already: every hit row is checked again
		// after all of the step's writes, as the plain checks do.
		s.hitRows = s.hitRows[:0]
		for i := range out.Rows {
			if out.Rows[i].Req.Blocks.HitBlocks() > 0 {
				s.hitRows = append(s.hitRows, i)
			}
		}
	}
	if len(s.hitRows) > 0 {
		s.checkHits(out, now)
	}
	return nil
}

// checkHits checks the KV reads of rows that reached blocks through a
// prefix hit, after every row's writes: within a layer all K/V writes
// precede attention, so a block another row of this step fills (cached at
// allocation, before the step) serves a hit in the same step, as in vLLM.
// A hit block must be what its prefix record says (the reader's group,
// hash and token count: PrefixRecord.Serves) and hold that record's
// writer's full K/V.
func (s *Symbolic) checkHits(out *sched.Output, now sim.Time) {
	for _, i := range s.hitRows {
		r := out.Rows[i].Req
		t := &r.Blocks
		seen := t.MarkHitChecked(s.step)
		hashes := s.blockHashes(r)
		for g := range t.Attn {
			pg := s.KV.PoolGroup(g)
			// The blocks the attention hit itself held, checked in place;
			// from the first that does not serve (or past them: the EAGLE
			// gap), block by block with the message.
			first := statecache.FirstHitMismatch(s.Pool, s.Prov, pg, t.Attn[g][:min(t.HitBlocks(), t.AttnHitBlocks())], hashes, s.bs)
			for bi := first; bi < t.HitBlocks(); bi++ {
				b := t.Attn[g][bi]
				rec := s.Pool.Record(b)
				p := s.Prov.Get(b)
				var why string
				switch {
				case bi >= t.AttnHitBlocks():
					why = s.eagleGap(r, g, bi)
				case bi >= len(hashes):
					why = fmt.Sprintf("reader has no hash for block position %d", bi)
				case rec.Serves(pg, hashes[bi], (bi+1)*s.bs) != nil:
					why = rec.Serves(pg, hashes[bi], (bi+1)*s.bs).Error()
				case p.Content != statecache.KV || p.Writer != rec.Writer || p.Tainted || int(p.Tokens) < s.bs:
					why = fmt.Sprintf("the cache says request %d wrote it (prefix %#x, %d tokens), the bytes hold %s",
						rec.Writer, uint64(rec.Hash), rec.Tokens, describe(p))
				default:
					continue
				}
				if p.Step <= seen {
					continue // reported at an earlier check
				}
				s.corrupt(r)
				s.add(invariant.StaleSlotRead, r, now, b, rec.Writer, func() string {
					return fmt.Sprintf("attention group %d reads KV block %d at position %d through a prefix hit: %s", g, b, bi, why)
				})
				break
			}
		}
	}
	s.hitRows = s.hitRows[:0]
}

// eagleGap explains attention group g's block at hit position bi, past
// what the attention hit itself held: the EAGLE drop cut the attention
// hit, the Mamba groups' lookup kept the boundary (#53912), and the
// request starts past a block nobody wrote for its prefix.
func (s *Symbolic) eagleGap(r *sched.Request, g, bi int) string {
	t := &r.Blocks
	b := t.Attn[g][bi]
	mamba := "the Mamba groups' hit"
	if len(t.MambaT) > 0 {
		if bl := t.MambaT[0].Blocks; t.HitBlocks()-1 < len(bl) {
			p := s.Prov.Get(bl[t.HitBlocks()-1])
			mamba = fmt.Sprintf("Mamba group 0 restores the state after %d tokens from block %d (%s)", t.HitBlocks()*s.bs, bl[t.HitBlocks()-1], describe(p))
		}
	}
	return fmt.Sprintf("the attention hit ends at %d tokens after the EAGLE drop (drop_eagle_block) but %s, so the request starts at %d tokens; attention block %d at position %d was allocated fresh and holds %s, not the prefix's K/V",
		t.AttnHitBlocks()*s.bs, mamba, t.HitBlocks()*s.bs, b, bi, describe(s.Prov.Get(b)))
}

func (s *Symbolic) attention(row *sched.Row, now sim.Time) error {
	r := row.Req
	c, q := row.NumComputed, row.NumScheduled
	end := c + q
	for g := range r.Blocks.Attn {
		// Write K/V for positions [c, end), then read [0, end).
		bi := s.Prov.AccessKV(&r.Blocks, g, r.ID, c, end, s.bs, s.step)
		if bi == statecache.MissingBlock {
			return fmt.Errorf("symbolic: request %d needs block %d of attention group %d, holds %d", r.ID, (end-1)/s.bs, g, len(r.Blocks.Attn[g]))
		}
		if bi >= 0 {
			s.staleKV(r, g, bi, end, now)
		}
	}
	return nil
}

// staleKV reports attention group g's read of a block not holding r's
// K/V; kept out of attention so the hot loop stays small.
func (s *Symbolic) staleKV(r *sched.Request, g, bi, end int, now sim.Time) {
	blocks := r.Blocks.Attn[g]
	p := s.Prov.Get(blocks[bi])
	s.corrupt(r)
	if s.Rec.Wants(invariant.StaleSlotRead) {
		s.Rec.Add(invariant.Violation{Invariant: invariant.StaleSlotRead, Step: s.step, TimeNS: int64(now),
			RequestID: int64(r.ID), Slot: int64(blocks[bi]), PrevOwner: int64(p.Writer),
			Detail: fmt.Sprintf("attention group %d reads KV block %d holding %s of request %d", g, blocks[bi], p.Content, p.Writer)})
	} else {
		s.Rec.Add(invariant.Violation{Invariant: invariant.StaleSlotRead})
	}
	// Report the damage once; the request carries it from here.
	for k := bi; k < len(blocks) && k <= (end-1)/s.bs; k++ {
		if !s.Prov.KVValid(blocks[k], r.ID, min(s.bs, end-k*s.bs)) {
			s.Prov.AdoptKV(blocks[k], r.ID, min(s.bs, end-k*s.bs), s.step)
		}
	}
}

func (s *Symbolic) corrupt(r *sched.Request) {
	if r.CorruptStep < 0 {
		r.CorruptStep = s.step
		s.Stats.CorruptedRequests++
	}
}

// mamba performs one row's state accesses in every Mamba group; a
// violation is reported once per row, naming the first group's slot.
func (s *Symbolic) mamba(row *sched.Row, now sim.Time) {
	r := row.Req
	c, q := row.NumComputed, row.NumScheduled
	decode := row.Path == sched.PathDecode || row.Graph == sched.GraphFull // a FULL replay runs the decode kernel
	if decode {
		s.Stats.MambaDecodeRows++
	} else {
		s.Stats.MambaPrefillRows++
	}
	s.Stats.StateBytesMoved += s.stateRW * int64(s.nMamba)
	if r.Blocks.MambaT != nil && len(r.Blocks.Spec) > 0 {
		s.alignSpec(row, now)
		if s.AcceptedAtSchedule {
			// The runner knows the acceptances before the next step; its
			// boundary copies follow the whole batch's forward.
			s.postRows = append(s.postRows, row)
		}
		return
	}
	copied, tainted := false, false
	if r.Blocks.MambaT != nil {
		copied, tainted = s.restoreState(row, now)
	}
	if len(r.Blocks.Spec) > 0 {
		s.mambaSpec(row, now)
		return
	}
	// The common case, a decode of a request whose slots hold its own
	// state and nobody else's writes: one record for all groups.
	if decode && c > 0 && row.KernelSlots == nil {
		if _, ok := s.Prov.AdvanceState(&r.Blocks, r.ID, c, c+q, s.step); ok {
			return
		}
		if copied && !s.Prov.Plain {
			s.leaseCopied(row, tainted)
			return
		}
	}
	s.mambaSlots(row, now)
}

// leaseCopied is mambaSlots for a decode row whose every running block
// restoreState has just filled with its own state after c tokens, all
// with one taint (an align mode step that starts a block): each slot's
// check would pass and carry that taint, so the step's writes go straight
// into a lease, without the slot-by-slot reads and writes.
func (s *Symbolic) leaseCopied(row *sched.Row, tainted bool) {
	r := row.Req
	for _, slot := range r.Blocks.Mamba {
		s.Stats.HighestSlot = max(s.Stats.HighestSlot, slot)
	}
	s.Prov.LeaseState(&r.Blocks, r.ID, row.NumComputed+row.NumScheduled, s.step, tainted)
}

// restoreState is a Mamba cache mode's read of the state a row starts
// from when that state is not in its running block: in align mode the
// worker copies it from the copy source (the previous step's running
// block, or a prefix hit's block) into the running block before the step
// (mamba_utils.py preprocess_mamba, #30877); in all mode the kernels read
// the block holding the last computed token and write the running block
// and every block boundary the chunk crosses. A restore through a prefix
// hit is checked against the cache's record and the reader's prefix, a
// continued state against the reader's own; a mismatch is reported once
// per row, and the running block then holds the reader's state, tainted
// if the source was wrong. copied: every group's running block was
// filled so (readSource), all with the taint it returns.
func (s *Symbolic) restoreState(row *sched.Row, now sim.Time) (copied, tainted bool) {
	r := row.Req
	t := &r.Blocks
	c, q := row.NumComputed, row.NumScheduled
	all := s.KV.MambaMode() == statecache.MambaAll
	if !all && s.KV.MambaReadsRunning(t, c) {
		// Most rows in align mode, every group alike (the groups' tables
		// move in lockstep): the state is in the running block already.
		return
	}
	// The block holding the last computed token (all mode's source), and
	// the boundaries the chunk crosses before its end: blocks i with
	// c < (i+1)·B < c+q. The same in every group.
	held, lo, hi := (c-1)/s.bs, c/s.bs, (c+q-1)/s.bs
	if all && lo >= hi && s.KV.MambaReadsRunning(t, c) {
		return // and no boundary state is written
	}
	restore := s.restoring(t, c)
	if !all && !restore && c > 0 && !s.Prov.Plain { // Plain: the reference, group by group
		if copied, tainted, ok := s.continueAlign(row); ok {
			return copied, tainted
		}
	}
	reported := false
	if lo >= hi && all {
		// A chunk that crosses no boundary writes no boundary state, and
		// reads only a source other than its running block (most rows: a
		// decode inside a block reads and writes the running block).
		for g := range t.MambaT {
			if bl := t.MambaT[g].Blocks; c > 0 && held < len(bl) && bl[held] != statecache.NullBlock && bl[held] != t.Mamba[g] {
				s.readSource(row, g, s.KV.MambaManagerOf(g), bl[held], t.Mamba[g], restore, &reported, now)
			}
		}
		return
	}
	if all {
		for g := range t.MambaT {
			bl := t.MambaT[g].Blocks
			s.Prov.Prefetch(bl[min(lo, len(bl)):min(hi, len(bl))])
		}
	}
	copied = c > 0
	for g := range t.MambaT {
		mm := s.KV.MambaManagerOf(g)
		mt := &t.MambaT[g]
		dst, src := t.Mamba[g], int32(statecache.NullBlock)
		seeded := false
		if mm.Spec.Mode == statecache.MambaAlign {
			src = mm.CopySource(mt)
			if restore && s.SeedBlockSize > 0 && s.SeedBlockSize != s.bs {
				// V2 copies from its add_request seed's column. Past the
				// table the entry is not this request's (zeros or a former
				// occupant's block: not read here); statesim reads the
				// null block there.
				seeded, src = true, statecache.NullBlock
				if i := (c - 1) / s.SeedBlockSize; i < len(mt.Blocks) {
					src = mt.Blocks[i]
				}
			}
		} else if held < len(mt.Blocks) {
			src = mt.Blocks[held]
		}
		tg := false
		if c > 0 && (src != statecache.NullBlock || seeded) && src != dst {
			tg = s.readSource(row, g, mm, src, dst, restore, &reported, now)
			if g == 0 {
				tainted = tg
			}
			copied = copied && tg == tainted
		} else {
			copied = false
		}
		if mm.Spec.Mode != statecache.MambaAll {
			continue
		}
		if hi := min(hi, len(mt.Blocks)); lo < hi {
			s.Prov.WriteStates(mt.Blocks[lo:hi], dst, r.ID, (lo+1)*s.bs, s.bs, s.step, tg)
			if s.Plan != nil {
				for i, b := range mt.Blocks[lo:hi] {
					if b != statecache.NullBlock && b != dst {
						s.record(StateOp{Kind: OpBoundary, Group: g, Dst: b, Tokens: (lo + 1 + i) * s.bs})
					}
				}
			}
		}
	}
	return copied, tainted
}

// continueAlign is restoreState's loop for an align-mode row that
// continues its own state, when every group's copy source (one position
// in every group: lockstep) holds the reader's state after c tokens: each
// running block gets it as readSource writes it, without the per-group
// lookups and checks. ok is false, having written nothing, where a
// source would not serve (the loop reports it) or none is held.
func (s *Symbolic) continueAlign(row *sched.Row) (copied, tainted, ok bool) {
	r := row.Req
	t := &r.Blocks
	c := row.NumComputed
	i := s.KV.MambaCopySourceIndex(t)
	if i < 0 {
		return false, false, false
	}
	for g := range t.MambaT {
		src := t.MambaT[g].Blocks[i]
		if src == t.Mamba[g] || !s.Prov.StateValid(src, r.ID, c) { // c > 0: MambaCopyMismatch's test
			return false, false, false
		}
	}
	copied = true
	for g := range t.MambaT {
		p := s.Prov.Get(t.MambaT[g].Blocks[i])
		if g == 0 {
			tainted = p.Tainted
		}
		copied = copied && p.Tainted == tainted
		s.Prov.WriteState(t.Mamba[g], r.ID, c, s.step, p.Tainted)
		s.recordCopy(g, t.MambaT[g].Blocks[i], t.Mamba[g])
	}
	return copied, tainted, true
}

// blockHashes is r's hashes at the layout's block, as the attention and
// Mamba groups cached them (KVCacheManager.AtBlock: r's own where the
// hash block is the block).
func (s *Symbolic) blockHashes(r *sched.Request) []statecache.BlockHash {
	if s.KV == nil {
		return r.BlockHashes
	}
	return s.KV.AtBlock(r.BlockHashes)
}

// restoring is whether a row with c computed tokens starts from its
// prefix hit's state, not yet checked.
func (s *Symbolic) restoring(t *statecache.BlockTable, c int) bool {
	return t.HitBlocks() > 0 && !t.HitChecked() && c == t.HitBlocks()*s.bs
}

// sourceMismatch is why block src, holding p, is not the state r starts
// a Mamba group's c tokens from: through a prefix hit (restore) the
// cache's record and r's prefix, otherwise r's own state; empty when it
// is.
func (s *Symbolic) sourceMismatch(r *sched.Request, mm *statecache.MambaManager, src int32, p statecache.Provenance, restore bool, c int) string {
	if hashes := s.blockHashes(r); restore && c/s.bs <= len(hashes) {
		return statecache.MambaRestoreMismatch(src, p, s.Pool.Record(src), mm.Group, hashes[c/s.bs-1], c)
	}
	return statecache.MambaCopyMismatch(src, p, r.ID, c)
}

// readSource checks the state row's request starts Mamba group g from in
// block src and puts it in the running block dst; it returns the taint.
func (s *Symbolic) readSource(row *sched.Row, g int, mm *statecache.MambaManager, src, dst int32, restore bool, reported *bool, now sim.Time) bool {
	r := row.Req
	c := row.NumComputed
	p := s.Prov.Get(src)
	why := s.sourceMismatch(r, mm, src, p, restore, c)
	if why != "" && !*reported {
		*reported = true
		s.corrupt(r)
		what := "continues"
		if restore {
			what = "restores through a prefix hit"
		}
		s.add(invariant.StaleSlotRead, r, now, src, p.Writer, func() string {
			return fmt.Sprintf("Mamba group %d (%v mode) %s the state into block %d: %s", g, mm.Spec.Mode, what, dst, why)
		})
	}
	tainted := p.Tainted || why != ""
	s.Prov.WriteState(dst, r.ID, c, s.step, tainted)
	s.recordCopy(g, src, dst)
	return tainted
}

// mambaSlots checks and writes one row's state slots one by one.
func (s *Symbolic) mambaSlots(row *sched.Row, now sim.Time) {
	r := row.Req
	c, q := row.NumComputed, row.NumScheduled
	decode := row.Path == sched.PathDecode || row.Graph == sched.GraphFull
	s.Prov.SettleState(&r.Blocks)
	if decode && c == 0 {
		slot := r.Blocks.Mamba[0]
		s.add(invariant.NoDecodeBeforePrefill, r, now, slot, s.Prov.Get(slot).Writer, func() string {
			p := s.Prov.Get(slot)
			return fmt.Sprintf("new request (0 computed tokens, %d scheduled) on the Mamba decode path; slot %d holds %s", q, slot, describe(p))
		})
	}
	var staleN, wrongN int
	var staleSlot, wrongSlot int32 = -1, -1
	var staleProv, clobberedProv statecache.Provenance
	var wrongFirst, wrongLast int32
	var nTainted int
	for gi, slot := range r.Blocks.Mamba {
		if slot > s.Stats.HighestSlot {
			s.Stats.HighestSlot = slot
		}
		target, last, wrapped := slot, slot, false
		if decode && row.KernelSlots != nil {
			// A stale graph replay: the kernel reads the persistent
			// buffer's slot, not the row's own.
			target, last = row.KernelSlots[gi], row.KernelSlots[gi]
		}
		if !decode {
			// The prefill kernel addresses the state through the index
			// arithmetic under test; decode kernels use 64-bit indices.
			target, last, wrapped = s.Index.Span(slot)
		}
		tainted := false
		if decode || row.HasInitialState {
			p := s.Prov.Get(target)
			valid := !wrapped && (row.KernelSlots == nil || target == slot) && s.Prov.StateValid(slot, r.ID, c)
			if !valid {
				tainted = true
				if staleN == 0 {
					staleSlot, staleProv = target, p
				}
				staleN++
			} else if p.Tainted {
				tainted = true
			}
		}
		if wrapped {
			if wrongN == 0 {
				wrongSlot, wrongFirst, wrongLast, clobberedProv = slot, target, last, s.Prov.Get(target)
			}
			wrongN++
			if s.Out != nil {
				s.Out.Wrapped = append(s.Out.Wrapped, step.Wrap{RequestID: int64(r.ID), Group: r.Group, Slot: slot, First: target, Last: last})
			}
			for b := target; b <= last; b++ {
				s.Prov.Clobber(b, slot, r.ID, c+q, s.step)
			}
			// The intended slot keeps its old bytes: stale from now on.
			continue
		}
		if tainted {
			nTainted++
		}
		s.Prov.WriteState(slot, r.ID, c+q, s.step, tainted)
	}
	ng := len(r.Blocks.Mamba)
	if wrongN == 0 && (nTainted == 0 || nTainted == ng) {
		// Every slot now holds the same record: lease it to the request.
		s.Prov.LeaseState(&r.Blocks, r.ID, c+q, s.step, nTainted > 0)
	}
	if staleN > 0 {
		if decode && c == 0 {
			s.Stats.Imposters++
			if s.Out != nil {
				s.Out.Imposters++
			}
			if len(s.Imposters) < maxImposters {
				s.Imposters = append(s.Imposters, report.Imposter{RequestID: int64(r.ID), Step: s.step, NumScheduled: q,
					Slot: int64(staleSlot), PrevOwner: int64(staleProv.Writer), PrevContent: staleProv.Content.String(),
					PrevTokens: int(staleProv.Tokens), PrevStep: staleProv.Step, Preempted: r.NumPreemptions > 0})
			}
		}
		s.corrupt(r)
		s.add(invariant.StaleSlotRead, r, now, staleSlot, staleProv.Writer, func() string {
			path := "decode"
			if !decode {
				path = "prefill (has_initial_state)"
			}
			return fmt.Sprintf("%s path with %d computed tokens reads slot %d holding %s (%d of %d Mamba groups)",
				path, c, staleSlot, describe(staleProv), staleN, ng)
		})
	}
	if wrongN > 0 {
		s.corrupt(r)
		s.add(invariant.WrongAddressWrite, r, now, wrongSlot, clobberedProv.Writer, func() string {
			return fmt.Sprintf("prefill state write for slot %d wrapped (%d-bit index, %d × %d ≥ 2^%d) into blocks %d..%d, clobbering %s; slot %d left stale (%d of %d Mamba groups)",
				wrongSlot, s.Index.Bits, wrongSlot, s.Index.Stride, s.Index.Bits, wrongFirst, wrongLast, describe(clobberedProv), wrongSlot, wrongN, ng)
		})
	}
}

func (s *Symbolic) add(inv invariant.Invariant, r *sched.Request, now sim.Time, slot int32, prev statecache.RequestID, detail func() string) {
	s.addAccess(inv, r, now, slot, prev, false, detail)
}

// addAccess is add for a write (write) or a read.
func (s *Symbolic) addAccess(inv invariant.Invariant, r *sched.Request, now sim.Time, slot int32, prev statecache.RequestID, write bool, detail func() string) {
	v := invariant.Violation{Invariant: inv, Step: s.step, TimeNS: int64(now), RequestID: int64(r.ID), Slot: int64(slot), PrevOwner: int64(prev), Write: write}
	if s.Rec.Wants(inv) {
		v.Detail = detail()
	}
	s.Rec.Add(v)
}

func describe(p statecache.Provenance) string { return p.Describe(-1) }

// reads records what each of a row's state blocks holds as its kernels
// are about to read it.
func (s *Symbolic) reads(rec *step.Row, row *sched.Row) {
	r := row.Req
	for _, slot := range r.Blocks.Mamba {
		rec.Reads = append(rec.Reads, step.Read{Block: slot, Own: s.Prov.StateValid(slot, r.ID, row.NumComputed), Held: s.Prov.Get(slot), Reader: r.ID})
	}
}

// SteadyDecodes reports whether k more steps of out's batch, each row one
// decode token further from its request's num_computed_tokens, would take
// only the shortcuts of a clean decode (statecache's DecodesLeased), and
// the state bytes each such step moves. Then Decodes stands for them.
func (s *Symbolic) SteadyDecodes(out *sched.Output, k int) (stepBytes int64, ok bool) {
	for i := range out.Rows {
		r := out.Rows[i].Req
		c := r.NumComputedTokens
		// A hit row's reads of its hit blocks are checked once
		// (checkHits), again only after a clobber, which DecodesLeased
		// rules out.
		if (r.Blocks.HitBlocks() > 0 && !r.Blocks.HitChecked()) || !s.Prov.DecodesLeased(&r.Blocks, r.ID, c, c+k, s.bs) {
			return 0, false
		}
		if len(r.Blocks.Mamba) > 0 {
			stepBytes += s.stateRW * int64(s.nMamba)
		}
	}
	return stepBytes, true
}

// Decodes performs k steady decode steps of out's batch (SteadyDecodes
// said yes), the last being step last: one access per row and group over
// the k positions, which leaves the records k single steps would.
func (s *Symbolic) Decodes(out *sched.Output, k int, last int64) {
	s.step = last
	for i := range out.Rows {
		r := out.Rows[i].Req
		c := r.NumComputedTokens
		for g := range r.Blocks.Attn {
			s.Prov.AccessKV(&r.Blocks, g, r.ID, c, c+k, s.bs, last)
		}
		if len(r.Blocks.Mamba) > 0 {
			s.Stats.MambaDecodeRows += int64(k)
			s.Stats.StateBytesMoved += int64(k) * s.stateRW * int64(s.nMamba)
			s.Prov.AdvanceState(&r.Blocks, r.ID, c, c+k, last)
		}
	}
}
