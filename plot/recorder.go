package plot

import (
	"statesim"
	"statesim/check"
	"statesim/sched"
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
	HighestSlot           int32 // highest state slot touched so far
	// Violations found in this step, per invariant.
	Violations [check.NumInvariants]int32
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
	// FromTrace marks a run rebuilt from a --trace file.
	FromTrace bool
}

// Recorder builds a Run from statesim.Run's hooks:
//
//	rec := plot.NewRecorder()
//	opt := statesim.Options{OnStep: rec.OnStep, OnFinish: rec.OnFinish}
//	rep, err := statesim.Run(sc, opt)
//	run := rec.Done(rep, sc.Engine.MaxNumBatchedTokens)
type Recorder struct {
	run     Run
	counts  [check.NumInvariants]int64
	highest int32
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{run: Run{FirstWrappingSlot: -1}} }

// OnStep records one executed step.
func (r *Recorder) OnStep(e *statesim.StepEvent) {
	st := Step{Step: e.Out.Step, StartNS: int64(e.Start), EndNS: int64(e.End),
		Rows: int32(len(e.Out.Rows)), Preempted: int32(len(e.Out.Preempted))}
	classify(&st, e.Out.Rows)
	if e.Sched != nil {
		st.Waiting, st.Running = int32(len(e.Sched.Waiting)), int32(len(e.Sched.Running))
		for _, q := range e.Sched.Running {
			st.SlotsHeld += int32(len(q.Blocks.Mamba))
		}
	}
	if e.Pool != nil {
		st.BlocksHeld, st.FreeQueue = int32(e.Pool.NumHeld()), int32(e.Pool.NumFree())
	}
	if e.Sym != nil {
		r.highest = max(r.highest, e.Sym.Stats.HighestSlot)
		// Every violation between two step ends belongs to the step that
		// just ran: the scheduler's checks and the kernels' accesses
		// both happen at its start.
		for _, inv := range check.All() {
			n := e.Sym.Rec.Count(inv)
			st.Violations[inv] = int32(n - r.counts[inv])
			r.counts[inv] = n
		}
	}
	st.HighestSlot = r.highest
	r.run.add(&st)
}

// classify splits a step's tokens by each row's own state.
func classify(st *Step, rows []sched.Row) {
	for i := range rows {
		st.addRow(rows[i].NumScheduled, rows[i].NumComputed, rows[i].Req.NumPromptTokens)
	}
}

// addRow counts one row's scheduled tokens under the state of its request:
// decoding, continuing a prompt, a new request cut short by the budget (1
// token is bug A's trigger), or a whole new prompt.
func (st *Step) addRow(scheduled, computed, prompt int) {
	n := int32(scheduled)
	switch {
	case computed >= prompt:
		st.Decode += n
	case computed > 0:
		st.Extend += n
	case scheduled < prompt:
		st.NewCut += n
		st.CutNew++
		if n == 1 {
			st.OneToken++
		}
	default:
		st.Prefill += n
	}
}

// OnFinish records a finished request's latencies.
func (r *Recorder) OnFinish(q *sched.Request) {
	r.run.TTFT = append(r.run.TTFT, (q.FirstTokenTime - q.ArrivalTime).Seconds())
	r.run.E2E = append(r.run.E2E, (q.FinishTime - q.ArrivalTime).Seconds())
	if q.NumOutputTokens > 1 {
		r.run.ITL = append(r.run.ITL, (q.LastTokenTime-q.FirstTokenTime).Seconds()/float64(q.NumOutputTokens-1))
	}
}

// Done completes the run from its report: the reference lines, and the
// violations found after the last step (liveness, leaks), which are put
// on the last step.
func (r *Recorder) Done(rep *statesim.Report, maxNumBatchedTokens int) *Run {
	run := r.run
	run.Name = rep.Scenario
	run.MaxNumBatchedTokens = maxNumBatchedTokens
	run.NumGPUBlocks = rep.Cache.NumGPUBlocks
	run.StateIndexBits = rep.StateIndexBits
	run.FirstWrappingSlot = rep.Cache.FirstWrappingSlot
	for i, ic := range rep.Invariants {
		if i < len(r.counts) {
			run.addLate(check.Invariant(i), ic.Count-r.counts[i])
		}
	}
	return &run
}
