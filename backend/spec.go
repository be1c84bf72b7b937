package backend

import (
	"fmt"

	"statesim/invariant"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// mambaSpec performs one row's state accesses under speculative decoding,
// where each Mamba group holds 1 + K state columns (mamba_attn.py and
// gdn_attn.py with num_speculative_blocks; VLLM-FACTS-CURRENT §5):
//   - the decode kernel reads column num_accepted_tokens - 1, the one the
//     runner says holds the state after the accepted tokens, and writes
//     the state after each of its q query positions to columns 0..q-1;
//   - the prefill kernel reads column 0 (has_initial_state) and writes the
//     state after all q tokens, drafts included, to column 0.
//
// A read is explained only by the reader's own state after exactly its
// computed tokens in the column it reads: another column, one written over
// drafts the sampler rejected (more tokens than were accepted), or
// another request's bytes is a stale-slot-read naming both sides. A clean
// decode takes the column lease (statecache.SpecDecode) instead.
func (s *Symbolic) mambaSpec(row *sched.Row, now sim.Time) {
	r := row.Req
	t := &r.Blocks
	ng := len(t.Mamba)
	k := len(t.Spec) / ng
	c, q := row.NumComputed, row.NumScheduled
	decode := row.Path == sched.PathDecode || row.Graph == sched.GraphFull
	acc := min(r.AcceptedColumn(), k)
	// The column the kernel reads: the accepted one only where the
	// builder was handed num_accepted_tokens, else column 0.
	read := 0
	if decode && row.AcceptedHanded {
		read = acc
	}
	if decode && c > 0 && row.KernelSlots == nil {
		// The common case: the columns hold only this request's writes,
		// one record per column for all groups (statecache's column
		// lease); the slots were counted in HighestSlot when leased.
		if _, ok := s.Prov.SpecDecode(t, r.ID, c, read, q, k, s.step); ok {
			return
		}
	}
	s.Prov.SettleState(t)
	defer s.Prov.LeaseColumns(t, r.ID, k)
	if decode && c == 0 {
		slot := t.Column(0, read, k)
		s.add(invariant.NoDecodeBeforePrefill, r, now, slot, s.Prov.Get(slot).Writer, func() string {
			return fmt.Sprintf("new request (0 computed tokens, %d scheduled) on the Mamba decode path; column %d (slot %d) holds %s", q, read, slot, describe(s.Prov.Get(slot)))
		})
	}
	staleN := 0
	var stale struct {
		g, col  int
		slot    int32
		want    int32 // the accepted column's slot
		p       statecache.Provenance
		wantCol int
	}
	for g := 0; g < ng; g++ {
		for j := 0; j <= k; j++ {
			if b := t.Column(g, j, k); b > s.Stats.HighestSlot {
				s.Stats.HighestSlot = b
			}
		}
		col := read
		ownSlot := t.Column(g, col, k)
		target := ownSlot
		if decode && row.KernelSlots != nil {
			target = row.KernelSlots[g] // a stale graph replay's buffer
		}
		tainted := false
		if decode || row.HasInitialState {
			p := s.Prov.Get(target)
			// StateValid's rule on the record already read.
			own := p.Content == statecache.State && p.Writer == r.ID && !p.Clobber && int(p.Tokens) == c ||
				c == 0 && p.Content == statecache.Zero
			// The content decides: own state after exactly c tokens is
			// right in whichever column the kernel reads.
			valid := target == ownSlot && own
			if !valid {
				tainted = true
				if staleN == 0 {
					stale.g, stale.col, stale.slot, stale.p = g, col, target, p
					stale.want, stale.wantCol = t.Column(g, acc, k), acc
				}
				staleN++
			} else if p.Tainted {
				tainted = true
			}
		}
		if decode {
			for j := 0; j < q && j <= k; j++ {
				s.Prov.WriteState(t.Column(g, j, k), r.ID, c+1+j, s.step, tainted)
			}
		} else {
			s.Prov.WriteState(ownSlot, r.ID, c+q, s.step, tainted)
		}
	}
	if staleN == 0 {
		return
	}
	s.corrupt(r)
	if decode && c == 0 {
		s.Stats.Imposters++
		if s.Out != nil {
			s.Out.Imposters++
		}
	}
	s.add(invariant.StaleSlotRead, r, now, stale.slot, stale.p.Writer, func() string {
		path := "spec decode"
		if !decode {
			path = "prefill (has_initial_state)"
		}
		what := describe(stale.p)
		if stale.p.Content == statecache.State && stale.p.Writer == r.ID && int(stale.p.Tokens) > c {
			what += fmt.Sprintf(", %d tokens past the %d accepted: written over rejected drafts", int(stale.p.Tokens)-c, c)
		}
		return fmt.Sprintf("%s path with %d computed tokens (%d drafts scheduled, K = %d) reads state column %d (slot %d) holding %s; the runner's num_accepted_tokens %d puts the state in column %d (slot %d) (%d of %d Mamba groups)",
			path, c, row.NumDrafts, k, stale.col, stale.slot, what, stale.wantCol+1, stale.wantCol, stale.want, staleN, ng)
	})
}
