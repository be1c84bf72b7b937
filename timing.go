package statesim

import (
	"statesim/scenarios"
	"statesim/sched"
	"statesim/sim"
)

// stepTime is the step-time model: fixed overhead, prefill tokens,
// decode rows, attention context read and Mamba state traffic.
func stepTime(t *scenarios.Timing, out *sched.Output, stateBytes int64) sim.Time {
	var prefillTok, decodeRows, ctx int64
	for i := range out.Rows {
		r := &out.Rows[i]
		if r.NumScheduled == 1 && r.NumComputed > 0 {
			decodeRows++
		} else {
			prefillTok += int64(r.NumScheduled)
		}
		ctx += int64(r.NumComputed + r.NumScheduled)
	}
	ns := t.StepOverheadUS*1e3 + float64(prefillTok)*t.PrefillTokenNS + float64(decodeRows)*t.DecodeRowNS +
		float64(ctx)*t.ContextTokenNS + float64(stateBytes)/t.StateBandwidthGBs
	if ns < 1 {
		ns = 1
	}
	return sim.Time(ns + 0.5)
}
