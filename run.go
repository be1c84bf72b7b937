package statesim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"statesim/backend"
	"statesim/check"
	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
	"statesim/workload"
)

// Options tune one run without changing its scenario.
type Options struct {
	// Trace, when set, receives one JSON line per step (see WriteStep).
	Trace io.Writer
	// Policy replaces the version's scheduling policy (a user policy under
	// test); the version still decides classification.
	Policy sched.Policy
	// BeforeStep, when set, is called with each scheduled and classified
	// step before the backend executes it: the cache's provenance is still
	// what the kernels are about to read (End is not known yet).
	BeforeStep func(e *StepEvent)
	// OnStep, when set, is called after every step has executed, with the
	// step's output and the state after it; used by plots and timelines.
	OnStep func(e *StepEvent)
	// OnFinish, when set, is called for every finished request.
	OnFinish func(r *sched.Request)
	// KeepAll keeps every violation instead of checks.keep per invariant.
	KeepAll bool

	// plainChecks runs the symbolic backend without its check shortcuts
	// (statecache.Provenances.Plain); tests compare the two.
	plainChecks bool

	// follow is the request Explain follows (when following): numeric
	// backends keep its token trace.
	follow    int64
	following bool
}

// StepEvent is what observers see of one step.
type StepEvent struct {
	Out        *sched.Output
	Start, End sim.Time
	Sched      *sched.Scheduler
	Pool       *statecache.BlockPool
	Sym        *backend.Symbolic
}

// BackendEnv is what a backend factory gets to build a backend.
type BackendEnv struct {
	Scenario  *scenarios.Scenario
	Shape     *model.Shape
	Layout    model.Layout
	NumBlocks int
	Sym       *backend.Symbolic
}

// BackendFactory builds a numeric backend on top of the symbolic one.
type BackendFactory func(env *BackendEnv) (backend.Backend, error)

var factories = map[string]BackendFactory{}

// RegisterBackend makes a backend kind available to scenarios.
func RegisterBackend(kind string, f BackendFactory) { factories[kind] = f }

// BackendAvailable reports whether kind can run in this binary, and if not,
// why.
func BackendAvailable(kind string) (bool, string) {
	if kind == "symbolic" {
		return true, ""
	}
	if _, ok := factories[kind]; ok {
		return true, ""
	}
	if why, ok := unavailable[kind]; ok {
		return false, why
	}
	return false, "not available in this build"
}

// unavailable explains backends this binary was built without.
var unavailable = map[string]string{
	"cuda": "this binary was built without CUDA support: build bin/statesim-cuda with `make cuda` (it fetches the CUDA headers; see Real GPUs in README.md) and run that binary on a machine with an NVIDIA GPU",
}

// Event kinds and their same-instant order: a step's completion first,
// then arrivals, then the next step, so a step sees every arrival of its
// instant.
const (
	evStepEnd uint8 = iota
	evArrival
	evStepStart
)

type runner struct {
	sc      *scenarios.Scenario
	opt     Options
	shape   model.Shape
	layout  model.Layout
	nBlocks int
	loop    sim.Loop
	src     workload.Source
	s       *sched.Scheduler
	kv      *statecache.KVCacheManager
	sym     *backend.Symbolic
	be      backend.Backend
	rec     *check.Recorder
	tw      *traceWriter
	rep     *Report
	metrics metrics

	pending     workload.Arrival
	hasPending  bool
	stepPending bool
	nextID      statecache.RequestID
	free        []*sched.Request
	out         *sched.Output
	stepStart   sim.Time
	lastBytes   int64
	stalled     bool
}

// Setup errors are input errors in disguise (a pool too small, a trace
// that does not open): they carry the scenario's name.
func setupErr(sc *scenarios.Scenario, format string, a ...any) error {
	return &scenarios.InputError{File: sc.File, Msg: fmt.Sprintf(format, a...)}
}

// Run replays a scenario and returns its report. An error means the run
// could not be set up or a component broke; invariant violations are not
// errors, they are the report.
func Run(sc *scenarios.Scenario, opt Options) (*Report, error) {
	r := &runner{sc: sc, opt: opt, shape: sc.Model.Shape}
	r.layout = r.shape.Layout(sc.Engine.BlockSize)
	if n := sc.Engine.NumGPUBlocksOverride; n > 0 {
		r.nBlocks = n
	} else {
		mem := statecache.Memory{DeviceGiB: sc.Device.MemoryGiB, GPUMemoryUtilization: sc.Engine.GPUMemoryUtilization,
			WeightsGiB: r.shape.WeightsGiB, ActivationGiB: sc.Device.ActivationGiB}
		n, err := mem.NumGPUBlocks(r.layout.BlockBytes())
		if err != nil {
			return nil, setupErr(sc, "%v", err)
		}
		r.nBlocks = n
	}
	keep := sc.Checks.Keep
	if opt.KeepAll {
		keep = 1 << 30
	}
	r.rec = check.NewRecorder(keep)
	r.kv = statecache.NewKVCacheManager(&r.layout, r.nBlocks)
	r.s = sched.New(sched.Config{
		MaxNumBatchedTokens: sc.Engine.MaxNumBatchedTokens, MaxNumSeqs: sc.Engine.MaxNumSeqs,
		MaxModelLen: sc.Engine.MaxModelLen, EnableChunkedPrefill: sc.Engine.EnableChunkedPrefill,
		LongPrefillTokenThreshold: sc.Engine.LongPrefillTokenThreshold, Policy: policyOf(sc),
	}, r.kv, sc.Version(), opt.Policy)
	r.s.ForcePrefill = sc.Engine.ForcePrefillPath
	r.sym = backend.NewSymbolic(&r.shape, r.layout, r.kv.Pool, uint(sc.Engine.StateIndexBits), r.rec)
	r.sym.Prov.Plain = opt.plainChecks
	r.be = r.sym
	if k := sc.Backend.Kind; k != "symbolic" {
		f, ok := factories[k]
		if !ok {
			if why, known := unavailable[k]; known {
				return nil, setupErr(sc, "backend %s: %s", k, why)
			}
			return nil, setupErr(sc, "backend %s: not available in this build", k)
		}
		be, err := f(&BackendEnv{Scenario: sc, Shape: &r.shape, Layout: r.layout, NumBlocks: r.nBlocks, Sym: r.sym})
		if err != nil {
			return nil, setupErr(sc, "backend %s: %v", k, err)
		}
		r.be = be
	}
	tracer, _ := r.be.(TokenTracer)
	if opt.following && tracer != nil {
		tracer.KeepTrace(opt.follow)
	}
	src, err := workload.New(&sc.Workload, sim.NewStreams(sc.Seed), "")
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrNotExist) && sc.Workload.Path != "" && !filepath.IsAbs(sc.Workload.Path) {
			hint = " (a built-in scenario's trace path is relative to the statesim repository root: run from there, or --set workload.path=FILE)"
		}
		return nil, setupErr(sc, "workload: %v%s", err, hint)
	}
	r.src = src
	if opt.Trace != nil {
		r.tw = newTraceWriter(opt.Trace)
	}
	r.rep = newReport(sc, &r.shape, &r.layout, r.nBlocks, r.sym.Index)
	if err := r.loopAll(); err != nil {
		return nil, err
	}
	if r.tw != nil {
		if err := r.tw.flush(); err != nil {
			return nil, fmt.Errorf("writing trace: %w", err)
		}
	}
	r.finishReport()
	if opt.following && tracer != nil {
		r.rep.tokens = tracer.TokenTrace(opt.follow)
	}
	return r.rep, nil
}

func policyOf(sc *scenarios.Scenario) sched.SchedulingPolicy {
	if sc.Engine.SchedulingPolicy == "priority" {
		return sched.PriorityPolicy
	}
	return sched.FCFS
}

func (r *runner) pullArrival() error {
	if r.hasPending {
		return nil
	}
	a, ok, err := r.src.Next()
	if err != nil {
		return &scenarios.InputError{File: r.sc.Workload.Path, Line: a.Line, Msg: err.Error()}
	}
	if !ok {
		return nil
	}
	if a.PromptLen+a.OutputLen > r.sc.Engine.MaxModelLen {
		a.OutputLen = max(1, r.sc.Engine.MaxModelLen-a.PromptLen)
		if a.PromptLen >= r.sc.Engine.MaxModelLen {
			return setupErr(r.sc, "request %d: prompt of %d tokens does not fit max_model_len %d", r.nextID, a.PromptLen, r.sc.Engine.MaxModelLen)
		}
	}
	r.pending, r.hasPending = a, true
	if a.At < r.loop.Now() {
		a.At = r.loop.Now()
	}
	return r.schedule(a.At, evArrival)
}

func (r *runner) schedule(at sim.Time, kind uint8) error {
	if err := r.loop.Schedule(at, sim.Priority(kind), kind, 0); err != nil {
		r.rec.Add(check.Violation{Invariant: check.TimeMonotonic, Step: r.s.Out().Step, TimeNS: int64(r.loop.Now()),
			RequestID: -1, Slot: -1, PrevOwner: -1, Detail: err.Error()})
		return err
	}
	return nil
}

func (r *runner) kickStep() error {
	if r.stepPending || r.out != nil || !r.s.HasUnfinished() {
		return nil
	}
	if ev, ok := r.loop.Peek(); !ok || ev.At > r.loop.Now() {
		// Nothing else happens at this instant, so a step-start event
		// would be the very next one: start the step now instead.
		return r.startStep()
	}
	r.stepPending = true
	return r.schedule(r.loop.Now(), evStepStart)
}

func (r *runner) loopAll() error {
	if err := r.pullArrival(); err != nil {
		return err
	}
	for {
		ev, ok := r.loop.Next()
		if !ok {
			break
		}
		var err error
		switch ev.Kind {
		case evArrival:
			err = r.arrive()
		case evStepStart:
			r.stepPending = false
			err = r.startStep()
		case evStepEnd:
			err = r.endStep()
		}
		if err != nil {
			return err
		}
		if r.stalled {
			break
		}
	}
	r.rep.SimTimeS = r.loop.Now().Seconds()
	if !r.src.Done() || r.s.HasUnfinished() {
		n := len(r.s.Waiting) + len(r.s.Running)
		id := int64(-1)
		if len(r.s.Running) > 0 {
			id = int64(r.s.Running[0].ID)
		} else if len(r.s.Waiting) > 0 {
			id = int64(r.s.Waiting[0].ID)
		}
		r.rec.Add(check.Violation{Invariant: check.Liveness, Step: r.s.Out().Step, TimeNS: int64(r.loop.Now()), RequestID: id, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("run ended with %d unfinished requests (%d waiting, %d running)%s", n, len(r.s.Waiting), len(r.s.Running), r.stallReason())})
	}
	if held := r.kv.Pool.NumHeld(); held != 0 && !r.s.HasUnfinished() {
		r.rec.Add(check.Violation{Invariant: check.BlockConservation, Step: r.s.Out().Step, RequestID: -1, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("%d blocks still held after every request finished", held)})
	}
	return nil
}

func (r *runner) stallReason() string {
	if r.rep.Steps >= r.sc.Checks.MaxSteps {
		return fmt.Sprintf(": checks.max_steps (%d) reached", r.sc.Checks.MaxSteps)
	}
	if len(r.s.Waiting) > 0 && len(r.s.Running) == 0 {
		w := r.s.Waiting[0]
		e := &r.sc.Engine
		chunk := w.NumTokens() - w.NumComputedTokens
		if t := e.LongPrefillTokenThreshold; t > 0 && chunk > t {
			chunk = t
		}
		if (!e.EnableChunkedPrefill || r.s.Version == sched.V0) && chunk > e.MaxNumBatchedTokens {
			return fmt.Sprintf(": request %d's whole prompt (%d tokens) exceeds max_num_batched_tokens %d and chunked prefill is off", w.ID, chunk, e.MaxNumBatchedTokens)
		}
		chunk = min(chunk, e.MaxNumBatchedTokens)
		if need := r.kv.BlocksNeeded(&w.Blocks, w.NumComputedTokens+chunk); need > r.kv.Pool.NumFree() {
			return fmt.Sprintf(": request %d needs %d blocks for its first chunk, the pool has %d free of %d", w.ID, need, r.kv.Pool.NumFree(), r.nBlocks-1)
		}
		return fmt.Sprintf(": the %s policy scheduled nothing although request %d could be admitted", r.s.Policy.Name(), w.ID)
	}
	return ""
}

func (r *runner) newRequest(a workload.Arrival) *sched.Request {
	var q *sched.Request
	if n := len(r.free); n > 0 {
		q = r.free[n-1]
		r.free = r.free[:n-1]
		blocks := q.Blocks
		*q = sched.Request{Blocks: blocks}
	} else {
		q = &sched.Request{Blocks: r.kv.NewTable()}
	}
	q.ID = r.nextID
	r.nextID++
	q.ArrivalTime = r.loop.Now()
	q.Group = a.Group
	q.NumPromptTokens = a.PromptLen
	q.MaxTokens = a.OutputLen
	q.Seed = a.Seed
	q.FirstTokenTime = -1
	q.CorruptStep = -1
	return q
}

func (r *runner) arrive() error {
	a := r.pending
	r.hasPending = false
	r.s.AddRequest(r.newRequest(a))
	r.rep.Requests++
	if err := r.pullArrival(); err != nil {
		return err
	}
	return r.kickStep()
}

func (r *runner) startStep() error {
	if r.rep.Steps >= r.sc.Checks.MaxSteps {
		r.stalled = true
		return nil
	}
	now := r.loop.Now()
	out, err := r.s.Schedule(now)
	if err != nil {
		return err
	}
	r.rep.Preemptions += int64(len(out.Preempted))
	if len(out.Rows) == 0 {
		// Nothing schedulable. Only an arrival or nothing can change that;
		// with no running request no memory will ever be freed.
		if len(r.s.Running) == 0 && !r.hasPending {
			r.stalled = true
		}
		return nil
	}
	r.checkStep(out, now)
	if r.opt.BeforeStep != nil {
		r.opt.BeforeStep(&StepEvent{Out: out, Start: now, End: now, Sched: r.s, Pool: r.kv.Pool, Sym: r.sym})
	}
	if err := r.be.Execute(out, now); err != nil {
		return fmt.Errorf("backend %s, step %d: %w", r.be.Name(), out.Step, err)
	}
	bytes := r.sym.Stats.StateBytesMoved - r.lastBytes
	r.lastBytes = r.sym.Stats.StateBytesMoved
	r.out = out
	r.stepStart = now
	r.rep.Steps++
	return r.schedule(now+stepTime(&r.sc.Timing, r.metrics.step(out, now, bytes)), evStepEnd)
}

// checkStep enforces the scheduler-level invariants of one step.
func (r *runner) checkStep(out *sched.Output, now sim.Time) {
	e := &r.sc.Engine
	if out.NumScheduledTokens > e.MaxNumBatchedTokens {
		r.rec.Add(check.Violation{Invariant: check.TokenBudget, Step: out.Step, TimeNS: int64(now), RequestID: -1, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("%d tokens scheduled, max_num_batched_tokens %d", out.NumScheduledTokens, e.MaxNumBatchedTokens)})
	}
	if n := len(r.s.Running); n > e.MaxNumSeqs {
		r.rec.Add(check.Violation{Invariant: check.MaxNumSeqs, Step: out.Step, TimeNS: int64(now), RequestID: -1, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("%d running requests, max_num_seqs %d", n, e.MaxNumSeqs)})
	}
	held := 0
	for _, q := range r.s.Running {
		held += q.Blocks.NumHeld()
	}
	for i := range out.Rows {
		row := &out.Rows[i]
		if need := r.kv.BlocksNeeded(&row.Req.Blocks, row.NumComputed+row.NumScheduled); need > 0 || row.Req.Status != sched.Running {
			r.rec.Add(check.Violation{Invariant: check.BlockConservation, Step: out.Step, TimeNS: int64(now), RequestID: int64(row.Req.ID), Slot: -1, PrevOwner: -1,
				Detail: fmt.Sprintf("scheduled %d tokens while %s and %d blocks short", row.NumScheduled, row.Req.Status, need)})
		}
	}
	if pool := r.kv.Pool.NumHeld(); pool != held {
		r.rec.Add(check.Violation{Invariant: check.BlockConservation, Step: out.Step, TimeNS: int64(now), RequestID: -1, Slot: -1, PrevOwner: -1,
			Detail: fmt.Sprintf("pool says %d blocks held, running requests hold %d", pool, held)})
	}
}

func (r *runner) endStep() error {
	now := r.loop.Now()
	out := r.out
	r.out = nil
	if r.tw != nil {
		r.tw.step(out, r.stepStart, now)
	}
	if r.opt.OnStep != nil {
		r.opt.OnStep(&StepEvent{Out: out, Start: r.stepStart, End: now, Sched: r.s, Pool: r.kv.Pool, Sym: r.sym})
	}
	r.metrics.tokens(now)
	fin, err := r.s.Update(out, now)
	if err != nil {
		return fmt.Errorf("step %d update: %w", out.Step, err)
	}
	for _, q := range fin {
		r.rep.OutputTokens += int64(q.NumOutputTokens)
		r.rep.Finished++
		r.metrics.finish(q)
		if f, ok := r.be.(backend.Finisher); ok {
			f.Finish(q)
		}
		if r.opt.OnFinish != nil {
			r.opt.OnFinish(q)
		}
		r.src.Finished(q.Group, now)
		r.free = append(r.free, q)
	}
	if err := r.pullArrival(); err != nil {
		return err
	}
	return r.kickStep()
}

// sortedViolations lists the kept violations by invariant, then order.
func sortedViolations(rec *check.Recorder) []check.Violation {
	var out []check.Violation
	for _, inv := range check.All() {
		out = append(out, rec.Kept(inv)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invariant < out[j].Invariant })
	return out
}
