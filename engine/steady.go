package engine

import (
	"math"

	"statesim/sim"
)

// steady replays in bulk the steps that would repeat the last one's batch
// of decodes, every row one token further, until anything else could
// happen: a row finishing or leaving its block (sched.SteadySteps), an
// access off the symbolic backend's shortcuts (SteadyDecodes), the next
// event (an arrival: a bulk step ends before it), the step limit, or a
// step time out of range. The last step ended clean (no violation, no
// finish). Each replayed step is charged to the clock, the step-time
// model, the metrics and the counters exactly as one stepped alone would
// be, in the same order; the scheduler, backend and checker then apply
// them at once. Nothing observes single steps on this path (Run turns it
// off for a trace, an observer unless SkipSteady, record details, a user
// policy, another backend and async scheduling; under a Mamba cache mode
// a stretch also stops where a state table could change,
// statecache.MambaSteady), and TestBulkMatchesStepByStep holds its
// reports, records and final state to those of stepping one by one.
func (r *runner) steady() error {
	r.clean = false
	k0 := r.s.SteadySteps()
	if k0 == 0 {
		return nil
	}
	out := r.s.Out()
	bytes, ok := r.sym.SteadyDecodes(out, k0)
	if !ok {
		return nil
	}
	limit := r.sc.Checks.StepLimit(r.tokensArrived)
	var at sim.Time = math.MaxInt64
	if ev, ok := r.loop.Peek(); ok {
		at = ev.At
	}
	n := int64(len(out.Rows))
	l := StepLoad{DecodeRows: n, StateBytes: bytes}
	for i := range out.Rows {
		l.ContextTokens += int64(out.Rows[i].Req.NumComputedTokens + 1)
	}
	now := r.loop.Now()
	start, k := now, 0
	for k < k0 && r.rep.Steps < limit {
		d := stepTime(&r.sc.Timing, l)
		// A step that would reach the next event, or end out of range
		// (startStep's error), is left to be stepped.
		if d <= 0 || now > math.MaxInt64-d || now+d >= at {
			break
		}
		start, now = now, now+d
		r.metrics.decodes(n, now)
		r.rep.Steps++
		l.ContextTokens += n
		k++
	}
	if k == 0 {
		return nil
	}
	if r.opt.bulkSteps != nil {
		*r.opt.bulkSteps += int64(k)
	}
	r.sym.Decodes(out, k, out.Step+int64(k))
	r.lastBytes = r.sym.Stats.StateBytesMoved
	r.s.AdvanceSteady(k, start, now)
	if err := r.s.CacheSteady(); err != nil {
		return err
	}
	r.checks.Repeated(now)
	_ = r.loop.AdvanceTo(now) // now > the clock: it cannot fail
	return nil
}
