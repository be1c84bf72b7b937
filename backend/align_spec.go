package backend

import (
	"fmt"

	"statesim/invariant"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// alignSpec performs one row's state accesses in align mode under
// speculative decoding. The model runner finds a request's 1 + K state
// columns from its own count, not the scheduler's: the blocks from
// (seq_len − 1) // B on (mamba_get_block_table_tensor; vllm/v1/worker/
// mamba_utils.py get_aligned_state_indices @ 00b08dc4). Before the step
// the state after the computed tokens is read from block prev +
// num_accepted − 1, prev being the runner's last running index (the hit
// block's, (num_computed − 1) // B, for a new or resumed request); when
// the running index moves, that block is copied into the new running
// block (preprocess_mamba, _copy_mamba_state_block's temporal copy
// state[bt[src_col + token_bias]] → state[bt[dst_col]]) and the kernel
// reads column 0. The decode kernel then writes columns 0..q−1, the
// prefill kernel column 0.
//
// Besides the provenance checks every state read has, a read or write of
// a block the request no longer holds is a stale-slot-read naming the
// block, who holds it now and the step that needs it: the scheduler's
// frees run on its own count, which under async scheduling includes
// drafts the step in flight may reject (#33352, #33997).
func (s *Symbolic) alignSpec(row *sched.Row, now sim.Time) {
	r := row.Req
	t := &r.Blocks
	c, q := row.NumComputed, row.NumScheduled
	decode := row.Path == sched.PathDecode || row.Graph == sched.GraphFull
	ng := len(t.MambaT)
	k := len(t.Spec) / ng
	restore := s.restoring(t, c)
	s.Prov.SettleState(t)
	if decode && c == 0 {
		slot := t.Mamba[0]
		s.add(invariant.NoDecodeBeforePrefill, r, now, slot, s.Prov.Get(slot).Writer, func() string {
			return fmt.Sprintf("new request (0 computed tokens, %d scheduled) on the Mamba decode path; slot %d holds %s", q, slot, describe(s.Prov.Get(slot)))
		})
	}
	cur := (c + q - 1) / s.bs
	reported := false
	report := func(slot int32, prev statecache.RequestID, write bool, detail func() string) {
		if reported {
			return
		}
		reported = true
		s.corrupt(r)
		s.addAccess(invariant.StaleSlotRead, r, now, slot, prev, write, detail)
	}
	for g := range t.MambaT {
		mt := &t.MambaT[g]
		mm := s.KV.MambaManagerOf(g)
		bl := mt.RunnerBlocks() // the runner addresses by its own copy
		at := func(i int) int32 {
			if i >= 0 && i < len(bl) {
				return bl[i]
			}
			return statecache.NullBlock
		}
		for j := 0; j <= k; j++ {
			if b := at(cur + j); b > s.Stats.HighestSlot {
				s.Stats.HighestSlot = b
			}
		}
		prev, acc := mt.WorkerIndex(), min(r.AcceptedColumn(), k)
		if mt.TakeAcceptedReset() {
			acc = 0 // the boundary copy put the state in the running block
		}
		if restore || prev < 0 {
			seed := s.bs
			if s.SeedBlockSize > 0 {
				seed = s.SeedBlockSize
			}
			prev, acc = (c-1)/seed, 0 // a new or resumed request: num_accepted 1
		}
		tainted := false
		if c > 0 {
			src := at(prev + acc)
			p := s.Prov.Get(src)
			var why string
			if !mt.Holds(src) {
				why = s.freedWhy(r, g, src, prev+acc, "reads the state from")
			} else {
				why = s.sourceMismatch(r, mm, src, p, restore, c)
			}
			if why != "" {
				report(src, p.Writer, false, func() string {
					return fmt.Sprintf("Mamba group %d (align, K = %d, runner's running index %d, previous %d, num_accepted %d): %s", g, k, cur, prev, acc+1, why)
				})
			}
			tainted = why != "" || p.Tainted
			if dst := at(cur); s.Plan != nil && (src != dst || acc != 0) {
				s.record(StateOp{Kind: OpCopy, Group: g, Src: src, ConvSrc: at(prev), ConvOff: acc, Dst: dst})
			}
		}
		if s.Plan != nil {
			cols := make([]int32, k+1)
			for j := range cols {
				cols[j] = at(cur + j)
			}
			s.record(StateOp{Kind: OpColumns, Group: g, Cols: cols})
		}
		n := 1
		if decode {
			n = min(q, k+1)
		}
		for j := 0; j < n; j++ {
			b := at(cur + j)
			if !mt.Holds(b) {
				report(b, s.Pool.Holder(b), true, func() string {
					return fmt.Sprintf("Mamba group %d (align, K = %d): %s", g, k, s.freedWhy(r, g, b, cur+j, "writes state column "+fmt.Sprint(j)+" to"))
				})
				continue
			}
			tok := c + q
			if decode {
				tok = c + 1 + j
			}
			s.Prov.WriteState(b, r.ID, tok, s.step, tainted)
		}
		mt.SetWorkerIndex(cur)
	}
}

// freedWhy says that row's request's step needs block b at table
// position i of Mamba group g, and that its table no longer holds it.
func (s *Symbolic) freedWhy(r *sched.Request, g int, b int32, i int, what string) string {
	holder := "free"
	if b == statecache.NullBlock {
		holder = "the null block"
	} else if h := s.Pool.Holder(b); h != statecache.NoRequest {
		holder = fmt.Sprintf("now held by request %d", h)
	}
	return fmt.Sprintf("step %d of request %d %s block %d at table position %d, which its table no longer holds (%s): freed while the step still needs it", s.step, r.ID, what, b, i, holder)
}

// PostProcess is align mode's boundary copy after a step whose
// acceptances are known (postprocess_mamba, mamba_state_copy_boundary):
// when the accepted tokens reach a block boundary at or past the running
// state's, the state after exactly that many tokens (column aligned −
// running) is copied into the boundary's block, the one the scheduler
// caches for it. The runner finds both blocks in its own copy of the
// table, so a boundary block the scheduler has freed since (its frees go
// by its own count, which under async scheduling includes the drafts of
// the step in flight) is still written: a stale-slot-read naming the
// block and who holds it now.
func (s *Symbolic) PostProcess(row *sched.Row) {
	r := row.Req
	t := &r.Blocks
	if t.MambaT == nil || len(t.Spec) == 0 || row.NumScheduled == 0 {
		return
	}
	c, q := row.NumComputed, row.NumScheduled
	run := c + q - row.NumDrafts
	aligned := (run + row.NumAccepted) / s.bs * s.bs
	if aligned == 0 || aligned < run {
		return
	}
	cur, dest := (c+q-1)/s.bs, aligned/s.bs-1
	bias := aligned - run
	reported := false
	for g := range t.MambaT {
		mt := &t.MambaT[g]
		bl := mt.RunnerBlocks()
		if cur+bias >= len(bl) || dest >= len(bl) {
			continue
		}
		if dest == cur {
			// The runner sets num_accepted_tokens back to 1 when the
			// boundary block is the running one (postprocess_mamba_fused_
			// kernel, vllm/v1/worker/mamba_utils.py @ 00b08dc4): the state
			// after aligned tokens is now that block's column 0.
			mt.ResetAccepted()
		}
		src, dst := bl[cur+bias], bl[dest]
		if src == dst || dst == statecache.NullBlock {
			continue
		}
		p := s.Prov.Get(src)
		bad := p.Content != statecache.State || p.Writer != r.ID || int(p.Tokens) != aligned || p.Tainted
		if !mt.Holds(dst) && !reported {
			reported = true
			holder := s.Pool.Holder(dst)
			s.addAccess(invariant.StaleSlotRead, r, s.now, dst, holder, true, func() string {
				return fmt.Sprintf("Mamba group %d (align, K = %d): the boundary copy after %d accepted tokens: %s", g, len(t.Spec)/len(t.MambaT), aligned,
					s.freedWhy(r, g, dst, dest, "copies the state after "+fmt.Sprint(aligned)+" tokens into"))
			})
		}
		s.Prov.WriteState(dst, r.ID, aligned, s.step, bad)
		if s.Plan != nil {
			s.Plan.Post = append(s.Plan.Post, StateOp{Kind: OpCopy, Row: -1, Group: g, Src: src, ConvSrc: bl[cur], ConvOff: bias, Dst: dst})
		}
	}
}
