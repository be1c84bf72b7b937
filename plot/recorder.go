package plot

import (
	"statesim/invariant"
	"statesim/report"
	"statesim/sched"
	"statesim/sim"
	"statesim/step"
)

// Step is what one scheduler step did, as the charts need it.
type Step struct {
	Step           int64
	StartNS, EndNS int64
	// Scheduled tokens by the request's own state (not the batch's
	// classification): decoding, continuing a prompt, a new or preempted
	// request given its whole prompt, a new request cut short by the budget.
	Decode, Extend, Prefill, NewCut int32
	// CutNew counts new requests given fewer tokens than their prompt,
	// OneToken those given exactly one (bug A's trigger).
	CutNew, OneToken int32
	Rows, Preempted  int32
	// Queues and cache after scheduling the step; -1 when unknown (trace).
	Waiting, Running      int32
	BlocksHeld, FreeQueue int32
	SlotsHeld             int32
	HighestSlot           int64 // highest state slot touched so far (64-bit: a trace's slots are)
	// Violations found in this step, per invariant.
	Violations [invariant.NumInvariants]int32
	// Prefix caching: the step's lookups and hits in tokens (requests
	// back from preemption apart, as vLLM counts them).
	PrefixQueries, PrefixHits int64
	// Blocks held per running request: the most one request holds (-1:
	// unknown, the record had no Held list), and all of them over how
	// many requests.
	HeldMax           int32
	HeldTotal, HeldBy int32
}

// Run is a recorded run: its steps (binned, with exact markers), its
// finished requests' latencies and the settings the charts draw reference
// lines for. It grows with requests and marked events, not with steps.
type Run struct {
	Name                string
	MaxNumBatchedTokens int // 0: unknown
	NumGPUBlocks        int // 0: unknown
	StateIndexBits      int
	FirstWrappingSlot   int64 // -1: none
	series
	// Latencies of finished requests, seconds; ITL is each request's mean
	// inter-token gap.
	TTFT, ITL, E2E []float64
	// FromTrace marks a run rebuilt from a --trace file; TraceScenario
	// and TraceSeed are what its closing record names.
	FromTrace     bool
	TraceScenario string
	TraceSeed     uint64
	// PrefixCaching: the run cached by prefix (the prefix chart).
	PrefixCaching bool
	// HeldPerRequest: the records listed each request's blocks (the held
	// chart).
	HeldPerRequest bool
}

// Recorder builds a Run from the engine's step records:
//
//	rec := plot.NewRecorder()
//	rep, err := engine.Run(sc, engine.Options{Observe: rec.Observe})
//	run := rec.Done(rep, sc.Engine.MaxNumBatchedTokens)
type Recorder struct {
	run    Run
	counts [invariant.NumInvariants]int64
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{run: Run{FirstWrappingSlot: -1}} }

// Observe records one executed step and the requests it finished.
func (r *Recorder) Observe(rec *step.Record) {
	st := Step{Step: rec.Step, StartNS: int64(rec.Start), EndNS: int64(rec.End),
		Rows: int32(len(rec.Rows)), Preempted: int32(len(rec.Preempted))}
	for i := range rec.Rows {
		st.addRow(&rec.Rows[i])
	}
	st.Waiting, st.Running = int32(rec.Waiting), int32(rec.Running)
	st.SlotsHeld = int32(rec.StateBlocksHeld)
	st.BlocksHeld, st.FreeQueue = int32(rec.BlocksHeld), int32(rec.BlocksFree)
	for inv, n := range rec.Counts {
		st.Violations[inv] = n
		r.counts[inv] += int64(n)
	}
	st.HighestSlot = int64(rec.HighestSlot)
	st.PrefixQueries, st.PrefixHits = rec.PrefixQueries, rec.PrefixHits
	st.heldPerRequest(rec)
	if st.HeldMax >= 0 {
		r.run.HeldPerRequest = true
	}
	r.run.add(&st)
	for _, f := range rec.Finished {
		r.run.TTFT = append(r.run.TTFT, sim.Time(f.FirstTokenNS-f.ArrivalNS).Seconds())
		r.run.E2E = append(r.run.E2E, sim.Time(f.FinishNS-f.ArrivalNS).Seconds())
		if f.NumOutputTokens > 1 {
			r.run.ITL = append(r.run.ITL, sim.Time(f.LastTokenNS-f.FirstTokenNS).Seconds()/float64(f.NumOutputTokens-1))
		}
	}
}

// heldPerRequest reads the blocks each running request holds from the
// record's Held list (one entry per table entry, a table's together).
func (st *Step) heldPerRequest(rec *step.Record) {
	st.HeldMax, st.HeldTotal, st.HeldBy = -1, int32(rec.BlocksHeldByRunning), int32(rec.Running)
	if len(rec.Held) == 0 {
		return
	}
	st.HeldMax, st.HeldBy = 0, 0
	for i := 0; i < len(rec.Held); {
		j := i
		for j < len(rec.Held) && rec.Held[j].Table == rec.Held[i].Table {
			j++
		}
		st.HeldMax = max(st.HeldMax, int32(j-i))
		st.HeldBy++
		i = j
	}
	st.HeldTotal = int32(len(rec.Held))
}

// addRow counts one row's scheduled tokens under its kind: decoding,
// continuing a prompt, a new request cut short by the budget (1 token is
// bug A's trigger), or a whole new prompt.
func (st *Step) addRow(row *step.Row) {
	n := int32(row.NumScheduled)
	switch row.Kind {
	case sched.KindDecode:
		st.Decode += n
	case sched.KindExtend:
		st.Extend += n
	case sched.KindNewCut:
		st.NewCut += n
		st.CutNew++
		if n == 1 {
			st.OneToken++
		}
	default:
		st.Prefill += n
	}
}

// Done completes the run from its report: the reference lines, and the
// violations found after the last step (liveness, leaks), which are put
// on the last step.
func (r *Recorder) Done(rep *report.Report, maxNumBatchedTokens int) *Run {
	run := r.run
	run.Name = rep.Scenario
	run.MaxNumBatchedTokens = maxNumBatchedTokens
	run.NumGPUBlocks = rep.Cache.NumGPUBlocks
	run.StateIndexBits = rep.StateIndexBits
	run.FirstWrappingSlot = rep.Cache.FirstWrappingSlot
	run.PrefixCaching = rep.PrefixCache != nil
	for i, ic := range rep.Invariants {
		if i < len(r.counts) {
			run.addLate(invariant.Invariant(i), ic.Count-r.counts[i])
		}
	}
	return &run
}
