package check

import (
	"fmt"

	"statesim/invariant"
	"statesim/sched"
	"statesim/sim"
	"statesim/step"
)

// Limits are the engine settings the scheduler-level invariants hold to.
type Limits struct {
	MaxNumBatchedTokens int
	MaxNumSeqs          int
}

// Scheduler checks the scheduler-level invariants — token budget,
// max_num_seqs, block conservation, time and liveness — from step
// records alone. The cache-level ones (stale reads, wrapped writes,
// decode before prefill) are found by the symbolic backend as it performs
// the accesses and reported into the same Recorder.
type Scheduler struct {
	Limits
	Rec     *invariant.Recorder
	lastEnd sim.Time
}

func (c *Scheduler) add(inv invariant.Invariant, r *step.Record, id int64, detail func() string) {
	v := invariant.Violation{Invariant: inv, Step: r.Step, TimeNS: int64(r.Start), RequestID: id, Slot: -1, PrevOwner: -1}
	if c.Rec.Wants(inv) {
		v.Detail = detail()
	}
	c.Rec.Add(v)
}

// Step checks a scheduled step, before it executes.
func (c *Scheduler) Step(r *step.Record) {
	if r.NumScheduledTokens > c.MaxNumBatchedTokens {
		c.add(invariant.TokenBudget, r, -1, func() string {
			return fmt.Sprintf("%d tokens scheduled, max_num_batched_tokens %d", r.NumScheduledTokens, c.MaxNumBatchedTokens)
		})
	}
	if r.Running > c.MaxNumSeqs {
		c.add(invariant.MaxNumSeqs, r, -1, func() string {
			return fmt.Sprintf("%d running requests, max_num_seqs %d", r.Running, c.MaxNumSeqs)
		})
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.BlocksShort > 0 || row.Status != sched.Running {
			c.add(invariant.BlockConservation, r, row.RequestID, func() string {
				return fmt.Sprintf("scheduled %d tokens while %s and %d blocks short", row.NumScheduled, row.Status, row.BlocksShort)
			})
		}
	}
	// A block shared through a prefix hit is in several tables.
	if r.BlocksHeld+r.SharedBlockRefs != r.BlocksHeldByRunning {
		c.add(invariant.BlockConservation, r, -1, func() string {
			if r.SharedBlockRefs != 0 {
				return fmt.Sprintf("pool says %d blocks held (and %d table entries shared), running requests hold %d", r.BlocksHeld, r.SharedBlockRefs, r.BlocksHeldByRunning)
			}
			return fmt.Sprintf("pool says %d blocks held, running requests hold %d", r.BlocksHeld, r.BlocksHeldByRunning)
		})
	}
	if r.Start < c.lastEnd {
		c.add(invariant.TimeMonotonic, r, -1, func() string {
			return fmt.Sprintf("step starts at %d ns, before the previous step ended at %d ns", r.Start, c.lastEnd)
		})
	}
}

// Ended checks an executed step's end.
func (c *Scheduler) Ended(r *step.Record) {
	if r.End < r.Start {
		c.add(invariant.TimeMonotonic, r, -1, func() string {
			return fmt.Sprintf("step ends at %d ns, before it started at %d ns", r.End, r.Start)
		})
	}
	c.lastEnd = r.End
}

// Repeated checks steps that repeat the last checked one's batch, each
// row one token further, the last ending at end (the engine's steady
// decode steps, taken only after a step with no violation). Every check of
// Step and Ended reads fields those steps share with it (the token total,
// the running count, the blocks held, each row's status and shortfall,
// which stays 0 as no block is allocated) and times that follow one
// another (each starts as the last ends and lasts at least 1 ns): the
// last step's verdict, none, stands for each of them.
func (c *Scheduler) Repeated(end sim.Time) { c.lastEnd = end }

// RunEnd is the state a run ended in.
type RunEnd struct {
	Step   int64
	TimeNS int64
	// Unfinished requests: Waiting and Running, the first of them
	// (running first) and whether arrivals remained.
	Waiting, Running int
	FirstUnfinished  int64
	ArrivalsLeft     bool
	// BlocksHeld by anyone once the run ended.
	BlocksHeld int
	// Why is the engine's explanation of a stall (may be empty).
	Why string
}

// End checks liveness and leaks at the end of a run.
func (c *Scheduler) End(e RunEnd) {
	if e.ArrivalsLeft || e.Waiting+e.Running > 0 {
		c.Rec.Add(invariant.Violation{Invariant: invariant.Liveness, Step: e.Step, TimeNS: e.TimeNS, RequestID: e.FirstUnfinished, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("run ended with %d unfinished requests (%d waiting, %d running)%s", e.Waiting+e.Running, e.Waiting, e.Running, e.Why)})
	}
	if e.BlocksHeld != 0 && e.Waiting+e.Running == 0 {
		c.Rec.Add(invariant.Violation{Invariant: invariant.BlockConservation, Step: e.Step, RequestID: -1, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("%d blocks still held after every request finished", e.BlocksHeld)})
	}
}
