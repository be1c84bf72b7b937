package sched

import (
	"math"

	"statesim/sim"
)

// SteadySteps is how many steps from the next would schedule the last
// step's batch again, every row one token further: 0 unless the last step
// gave each running request one decode token (none prefilling, none
// preempted) on the decode path, nothing waits, and the V1 policy runs.
// With prefix caching a decode step caches a block only when it fills
// one, and only the last step of the bound can (CacheSteady caches it).
// Such a step
// leaves everything V1 reads as it was but the counts, until a row
// finishes (max_tokens, max_model_len) or reaches the end of its last
// block (a new block, or the next block's records), or, under a Mamba
// cache mode (align, all), a step could change a state table other
// than by the first step's frees (KV.MambaSteady): the bound returned.
// The persistent batch then keeps its rows in their order (all scheduled,
// none joins, the four regions' reorder moves no decode), the split sees
// the same decodes and the CUDA-graph dispatch the same shape and slots,
// so every such step classifies as the last one did.
func (s *Scheduler) SteadySteps() int {
	out := s.Out()
	n := len(out.Rows)
	if _, v1 := s.Policy.(V1Policy); !v1 || s.ForcePrefill || n == 0 || n != len(s.Running) || len(s.Waiting) > 0 ||
		len(out.Preempted) > 0 || out.NumDecodes != n || out.NumScheduledTokens != n || n > s.Cfg.MaxNumBatchedTokens ||
		s.behaviour().Reorder == ReorderNone || s.Cfg.AsyncScheduling ||
		s.Spec.On() { // every speculative step draws its acceptances and moves the state columns
		return 0
	}
	bs := s.KV.BlockSize()
	k := math.MaxInt
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		c := r.NumComputedTokens
		if row.NumScheduled != 1 || row.NumComputed < r.NumPromptTokens || row.Region != RegionDecode ||
			row.Path != PathDecode || row.KernelSlots != nil || r.Status != Running || c != r.NumTokens()-1 {
			return 0
		}
		// Step j (from 1) computes position c+j-1 and samples token
		// NumOutputTokens+j: it must not finish, and must fit c's block.
		k = min(k, r.MaxTokens-r.NumOutputTokens-1, s.Cfg.MaxModelLen-r.NumTokens()-1,
			r.Blocks.Covered()-c, (c/bs+1)*bs-c)
		if k = s.KV.MambaSteady(&r.Blocks, c, k); k == 0 {
			return 0
		}
	}
	return max(k, 0)
}

// AdvanceSteady applies k steps that SteadySteps allowed, the last of
// which started at start and ended at end: each row computes and samples
// k tokens, and the last step's output becomes the k-th repeat's (its
// rows' num_computed_tokens as that step saw them).
func (s *Scheduler) AdvanceSteady(k int, start, end sim.Time) {
	out := s.Out()
	s.step += int64(k)
	s.stamp = s.step
	out.Step += int64(k)
	s.Now = start
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		r.NumComputedTokens += k
		r.NumOutputTokens += k
		r.LastTokenTime = end
		r.schedStamp = s.stamp
		row.NumComputed += k
	}
}

// CacheSteady does, after AdvanceSteady, the prefix caching the last
// replayed step's schedule would have done: a row whose decodes filled
// its block caches it (cacheRunning), in running order, with that step's
// number on the records. No earlier step of the stretch fills a block,
// and nothing touches the pool between that schedule and this call, so
// the cache ends as stepping would leave it. Its RemoveSkippedBlocks
// makes the first replayed step's Mamba frees (the block behind a
// boundary, align's copy source: KV.MambaSteady), whose bounds every
// step of the stretch shares; frees and caching touch disjoint records,
// so their order across rows does not matter.
func (s *Scheduler) CacheSteady() error {
	if !s.KV.PrefixCaching() {
		return nil
	}
	s.KV.Pool.NewStepStarts(s.Out().Step) // the last replayed step's records
	for _, r := range s.Running {
		if s.KV.CachesNothing(&r.Blocks, r.NumComputedTokens) {
			continue // its hashes wait for the next call that needs them
		}
		if err := s.cacheRunning(r, 0); err != nil {
			return err
		}
	}
	return nil
}
