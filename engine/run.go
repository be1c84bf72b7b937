package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"statesim/backend"
	"statesim/check"
	"statesim/invariant"
	"statesim/model"
	"statesim/report"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/setup"
	"statesim/sim"
	"statesim/statecache"
	"statesim/step"
	"statesim/trace"
	"statesim/workload"
)

// Options tune one run without changing its scenario.
type Options struct {
	// Trace, when set, receives one JSON line per step (see traceWriter).
	Trace io.Writer
	// Policy replaces the version's scheduling policy (a user policy under
	// test); the version still decides classification.
	Policy sched.Policy
	// Observe, when set, sees every step's record once the step has ended
	// (its finished requests included). The record is reused: copy what
	// you keep.
	Observe func(rec *step.Record)
	// SkipSteady tells the run that Observe needs no record of a steady
	// decode step: one that repeats the last step's batch of decodes one
	// token further, in which nothing arrives, finishes, is allocated,
	// preempted, wrapped or found wrong. Such steps may then be replayed
	// in bulk (steady.go) and not observed; every other step still is.
	SkipSteady bool
	// Detail adds the optional parts of each record (step.Reads,
	// step.Holdings).
	Detail step.Detail
	// KeepAll keeps every violation instead of checks.keep per invariant.
	KeepAll bool
	// Follow, with Following, is a request whose log-prob trace numeric
	// backends keep (report.Tokens).
	Follow    int64
	Following bool

	// stepByStep turns off the bulk replay of steady decode steps
	// (steady.go); tests compare the two.
	stepByStep bool
	// bulkSteps, when set, counts the steps replayed in bulk (tests).
	bulkSteps *int64
	// listAll lists private tails in the prefix cache's table as vLLM
	// does (statecache.KVCacheManager.ListAll): the reference the
	// shortcut is held to (private_test.go).
	listAll bool
	// finished and ended, when set, see every request as it finishes and
	// the runner once the run ends (tests that compare two ways of running
	// beyond the report: digest_test.go).
	finished func(q *sched.Request)
	ended    func(r *runner)
	// plainChecks runs the symbolic backend without its check shortcuts
	// (statecache.Provenances.Plain); tests compare the two.
	plainChecks bool
	// newRequests, when set, counts request objects allocated (tests).
	newRequests *int
	// hashBlocks replaces how requests' block hashes are made (tests
	// that build shared prefixes by hand).
	hashBlocks func(r *sched.Request, blockSize int)
	// noChunkAlign turns align mode's chunk alignment off (tests show
	// what it prevents).
	noChunkAlign bool
	// cacheBlockSize, when > 0, stands for cache_config.block_size after
	// start-up in Model Runner V2's seed (tests show a seed in the wrong
	// units is caught without a DFlash drafter, the only layout whose
	// groups lower it).
	cacheBlockSize int
}

// Event kinds and their same-instant order: a step's completion first,
// then arrivals, then the next step, so a step sees every arrival of its
// instant. The step end is not queued: the runner keeps it beside the
// queue (stepEnd), since one is pending on nearly every iteration.
const (
	evArrival uint8 = 1 + iota
	evStepStart
)

type runner struct {
	st      *setup.Setup
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
	rec     *invariant.Recorder
	checks  check.Scheduler
	tw      *traceWriter
	rep     *report.Report
	metrics metrics
	// step is the record of the step in flight (or last ended).
	step step.Record
	// Async scheduling (batch queue of two): next is the step scheduled
	// while step is in flight, its record and when it ends; it runs on the
	// GPU from stepEnd. fillQueue: a schedule may queue behind the step in
	// flight (right after a step starts or ends, not on an arrival: the
	// engine then waits on the step's output).
	next      *sched.Output
	nextRec   step.Record
	emptyRec  step.Record // a step that scheduled nothing, for --trace
	nextEnd   sim.Time
	nextToks  int64
	outToks   int64
	fillQueue bool
	retired   []*sched.Request // finished while a queued step may name them
	// finisher is the backend's optional ability, asked once.
	finisher backend.Finisher

	pending     workload.Arrival
	hasPending  bool
	stepPending bool
	nextID      statecache.RequestID
	free        []*sched.Request
	out         *sched.Output // the step in flight, nil between steps
	stepEnd     sim.Time      // when it ends (valid while out != nil)
	lastBytes   int64
	// bulk: nothing observes single steps, so steady decode steps may be
	// replayed in bulk (steady.go); clean: the last step ended with no
	// violation and no finished request.
	bulk, clean bool
	stalled     bool
	// pcSeen: the prefix cache counters as of the last step's record.
	pcSeen statecache.PrefixCacheStats
	// tokensArrived is prompt + output tokens of every admitted request:
	// the default step limit scales with it (Checks.StepLimit).
	tokensArrived int64
}

// checkPool is the setup's start-up check, with the numeric backend's own
// bound on its caches where it gives one.
func checkPool(st *setup.Setup) error {
	caches := int64(-1)
	if st.Pool.Err == nil {
		env := &backend.Env{Setup: st, Shape: &st.Shape, Layout: st.Layout, NumBlocks: st.Pool.NumBlocks}
		var err error
		if caches, err = backend.CacheBytes(st.Backend.Kind, env); err != nil {
			return setupErr(st.Scenario, "backend %s: %v", st.Backend.Kind, err)
		}
	}
	return st.CheckPoolWith(caches)
}

// Setup errors are input errors in disguise (a trace that does not
// open, a backend this binary lacks): they carry the scenario's name.
func setupErr(sc *scenarios.Scenario, format string, a ...any) error {
	return &scenarios.InputError{File: sc.File, Msg: fmt.Sprintf(format, a...)}
}

// Run settles a scenario (setup.Resolve) and replays it: RunSetup.
func Run(sc *scenarios.Scenario, opt Options) (*report.Report, error) {
	st, err := setup.Resolve(sc)
	if err != nil {
		return nil, err
	}
	return RunSetup(st, opt)
}

// RunSetup replays a settled scenario and returns its report. An error
// means the run could not be set up or a component broke; invariant
// violations are not errors, they are the report.
func RunSetup(st *setup.Setup, opt Options) (*report.Report, error) {
	if err := checkPool(st); err != nil {
		return nil, err
	}
	r := &runner{st: st, sc: st.Scenario, opt: opt, shape: st.Shape, layout: st.Layout, nBlocks: st.Pool.NumBlocks}
	for _, build := range []func() error{r.newChecks, r.newCache, r.newScheduler, r.newBackend, r.newSource} {
		if err := build(); err != nil {
			return nil, err
		}
	}
	if opt.Trace != nil {
		r.tw = newTraceWriter(opt.Trace)
		r.tw.scenario, r.tw.seed = st.Scenario.Name, st.Scenario.Seed // named in the closing record
	}
	r.rep = newReport(st, r.sym.Index)
	r.rep.Warnings = append(r.rep.Warnings, st.Warnings...)
	r.bulk = !opt.stepByStep && !r.s.Cfg.AsyncScheduling && (opt.Observe == nil || opt.SkipSteady) && opt.Trace == nil && opt.Detail == 0 && opt.Policy == nil && r.be == r.sym
	if err := r.loopAll(); err != nil {
		return nil, err
	}
	if r.tw != nil {
		if err := r.tw.flush(); err != nil {
			return nil, fmt.Errorf("writing trace: %w", err)
		}
	}
	r.finishReport()
	if opt.ended != nil {
		opt.ended(r)
	}
	if tracer, ok := r.be.(backend.TokenTracer); ok && opt.Following {
		r.rep.Tokens = tracer.TokenTrace(opt.Follow)
	}
	return r.rep, nil
}

// newChecks builds the invariant recorder and the scheduler-level checks.
func (r *runner) newChecks() error {
	keep := r.sc.Checks.Keep
	if r.opt.KeepAll {
		keep = 1 << 30
	}
	r.rec = invariant.NewRecorder(keep)
	r.rec.Hook = r.collect
	r.checks = check.Scheduler{Limits: check.Limits{MaxNumBatchedTokens: r.sc.Engine.MaxNumBatchedTokens, MaxNumSeqs: r.sc.Engine.MaxNumSeqs}, Rec: r.rec}
	return nil
}

// newCache builds the KV cache manager over the pool.
func (r *runner) newCache() error {
	kv, err := statecache.NewKVCacheManagerWith(&r.layout, r.nBlocks, r.st.Cache)
	if err != nil {
		return &scenarios.InputError{File: r.sc.File, Path: "engine.enable_prefix_caching", Msg: err.Error()}
	}
	kv.ListAll = r.opt.listAll
	r.kv = kv
	return nil
}

// newScheduler builds the scheduler with the settled configuration; the
// speculative acceptance draws from the scenario's "spec" stream.
func (r *runner) newScheduler() error {
	st, opt := r.st, &r.opt
	cfg := st.Sched.Config
	if opt.noChunkAlign {
		cfg.MambaAlignBlockSize = 0
	}
	r.s = sched.New(cfg, r.kv, st.Version, opt.Policy)
	r.s.ForcePrefill = st.Sched.ForcePrefill
	if sp := st.Spec; sp.On() {
		sp.Rand = sim.NewStreams(r.sc.Seed).Stream("spec")
		r.s.Spec = sp
	}
	r.s.Runner = st.Runner
	r.s.Graphs.Mode, r.s.Graphs.MaxBS, r.s.Graphs.Runner = st.CUDAGraphs, st.Sched.GraphMaxBS, st.Runner
	r.s.HashBlocks = opt.hashBlocks
	return nil
}

// newBackend builds the symbolic backend, and the scenario's numeric one
// over it.
func (r *runner) newBackend() error {
	st := r.st
	r.sym = backend.NewSymbolic(&r.shape, r.layout, r.kv.Pool, st.IndexBits, r.rec)
	r.sym.Prov.Plain = r.opt.plainChecks
	r.sym.KV = r.kv
	r.sym.Out, r.sym.Detail = &r.step, r.opt.Detail
	if st.Runner == sched.RunnerV2 {
		r.sym.SeedBlockSize = st.SeedBlockSize
		if r.opt.cacheBlockSize > 0 {
			r.sym.SeedBlockSize = r.opt.cacheBlockSize
		}
	}
	if r.s.Spec.On() && st.Mamba.Mode == statecache.MambaAlign {
		if r.s.Cfg.AsyncScheduling {
			r.sym.AcceptedAtSchedule = true
		} else {
			r.s.OnAccepted = r.sym.PostProcess
		}
	}
	r.be = r.sym
	if k := st.Backend.Kind; k != "symbolic" {
		f, err := backend.Lookup(k)
		if err != nil {
			return setupErr(r.sc, "%v", err)
		}
		be, err := f(&backend.Env{Setup: st, Shape: &r.shape, Layout: r.layout, NumBlocks: r.nBlocks, Sym: r.sym})
		if err != nil {
			return setupErr(r.sc, "backend %s: %v", k, err)
		}
		r.be = be
	}
	r.finisher, _ = r.be.(backend.Finisher)
	if tracer, ok := r.be.(backend.TokenTracer); ok && r.opt.Following {
		tracer.KeepTrace(r.opt.Follow)
	}
	return nil
}

// newSource opens the workload.
func (r *runner) newSource() error {
	sc := r.sc
	src, err := workload.New(&sc.Workload, sim.NewStreams(sc.Seed), "")
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrNotExist) && sc.Workload.Path != "" && !filepath.IsAbs(sc.Workload.Path) {
			hint = " (a relative trace path, in the file or in --set, resolves against the scenario file's directory)"
		}
		return setupErr(sc, "workload: %v%s", err, hint)
	}
	r.src = src
	return nil
}

// pullArrival takes the next arrival, admitting it like vLLM's front end:
// a request it would refuse (a trace record with a 0-token prompt or an
// out-of-order timestamp, or a prompt that leaves no room to generate in
// max_model_len) is rejected alone and counted by reason, unless
// workload.strict asks to fail the run instead.
func (r *runner) pullArrival() error {
	if r.hasPending {
		return nil
	}
	var a workload.Arrival
	for {
		var ok bool
		var err error
		a, ok, err = r.src.Next()
		if err != nil {
			var pe *trace.ParseError
			if errors.As(err, &pe) { // already FILE:LINE: field: problem
				return &scenarios.InputError{File: pe.Name, Line: pe.Line, Path: pe.Field, Msg: pe.Err.Error()}
			}
			return &scenarios.InputError{File: r.sc.Workload.Path, Line: a.Line, Msg: err.Error()}
		}
		if !ok {
			return nil
		}
		if a.Reject == "" && a.PromptLen >= r.sc.Engine.MaxModelLen {
			a.Reject = report.RejectPromptTooLong
			a.Why = fmt.Sprintf("prompt of %d tokens leaves no room to generate within max_model_len %d", a.PromptLen, r.sc.Engine.MaxModelLen)
			if r.sc.Workload.Strict {
				return setupErr(r.sc, "request %d: %s (workload.strict)", r.nextID, a.Why)
			}
		}
		if a.Reject == "" {
			break
		}
		r.rep.Reject(a.Reject, a.Line, a.Why)
	}
	if a.PromptLen+a.OutputLen > r.sc.Engine.MaxModelLen {
		a.OutputLen = max(1, r.sc.Engine.MaxModelLen-a.PromptLen)
	}
	r.tokensArrived += int64(a.PromptLen + a.OutputLen)
	r.pending, r.hasPending = a, true
	if a.At < r.loop.Now() {
		a.At = r.loop.Now()
	}
	return r.schedule(a.At, evArrival)
}

func (r *runner) schedule(at sim.Time, kind uint8) error {
	if err := r.loop.Schedule(at, sim.Priority(kind), kind, 0); err != nil {
		r.rec.Add(invariant.Violation{Invariant: invariant.TimeMonotonic, Step: r.s.Out().Step, TimeNS: int64(r.loop.Now()),
			RequestID: -1, Slot: -1, PrevOwner: -1, Detail: err.Error()})
		return err
	}
	return nil
}

func (r *runner) kickStep() error {
	if r.stepPending || !r.s.HasUnfinished() {
		return nil
	}
	if r.out != nil && (!r.fillQueue || r.next != nil) {
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
		// The step in flight ends beside the queue: it goes first at its
		// instant, as evStepEnd's priority would order it in the queue.
		if r.out != nil {
			if ev, ok := r.loop.Peek(); !ok || r.stepEnd <= ev.At {
				if err := r.loop.AdvanceTo(r.stepEnd); err != nil {
					return err
				}
				if err := r.endStep(); err != nil {
					return err
				}
				if r.stalled {
					break
				}
				continue
			}
		}
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
		}
		if err != nil {
			return err
		}
		if r.stalled {
			break
		}
	}
	r.rep.SimTimeS = r.loop.Now().Seconds()
	end := check.RunEnd{Step: r.s.Out().Step, TimeNS: int64(r.loop.Now()), Waiting: len(r.s.Waiting), Running: len(r.s.Running),
		FirstUnfinished: -1, ArrivalsLeft: !r.src.Done(), BlocksHeld: r.kv.Pool.NumHeld()}
	if len(r.s.Running) > 0 {
		end.FirstUnfinished = int64(r.s.Running[0].ID)
	} else if len(r.s.Waiting) > 0 {
		end.FirstUnfinished = int64(r.s.Waiting[0].ID)
	}
	if end.ArrivalsLeft || end.Waiting+end.Running > 0 {
		end.Why = r.stallReason()
	}
	r.checks.End(end)
	return nil
}

func (r *runner) stallReason() string {
	if limit := r.sc.Checks.StepLimit(r.tokensArrived); r.rep.Steps >= limit {
		if r.sc.Checks.MaxSteps == 0 {
			return fmt.Sprintf(": the step limit (%d: 1,000,000 + 8 per arrived token; set checks.max_steps to change it) reached", limit)
		}
		return fmt.Sprintf(": checks.max_steps (%d) reached", limit)
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
		if r.kv.PrefixCaching() {
			// A hit lengthens the first allocation (hit + chunk), and its
			// free cached blocks count as allocations too.
			bs := r.kv.BlockSize()
			if need := (w.NumTokens() + bs - 1) / bs * len(w.Blocks.Attn); need > r.kv.Pool.NumFree() {
				return fmt.Sprintf(": request %d needs up to %d blocks for its prefix hit and first chunk (the hit's free cached blocks count as allocations), the pool has %d free of %d", w.ID, need, r.kv.Pool.NumFree(), r.nBlocks-1)
			}
		}
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
		blocks, hashes := q.Blocks, q.BlockHashes[:0]
		*q = sched.Request{Blocks: blocks, BlockHashes: hashes}
	} else {
		q = &sched.Request{Blocks: r.kv.NewTable()}
		if r.opt.newRequests != nil {
			*r.opt.newRequests++
		}
	}
	q.ID = r.nextID
	r.nextID++
	q.ArrivalTime = r.loop.Now()
	q.Group = a.Group
	q.NumPromptTokens = a.PromptLen
	q.MaxTokens = a.OutputLen
	q.Seed = a.Seed
	q.Prefix, q.OutputID, q.PrivateTail = a.Prefix, a.OutputID, a.PrivateTail
	q.FirstTokenTime = -1
	q.CorruptStep = -1
	return q
}

// MaxInFlight bounds the requests a run holds at once, arrived and not
// finished: twice workload.MaxGroup, so the largest group submitted at
// once fits beside another. A trace that arrives far faster than the
// engine serves (10^7 requests at one timestamp) is refused here rather
// than held in memory (about 1 KiB a request). A variable for tests.
var MaxInFlight = 2 * workload.MaxGroup

func (r *runner) arrive() error {
	a := r.pending
	r.hasPending = false
	if n := len(r.s.Waiting) + len(r.s.Running); n >= MaxInFlight {
		where := ""
		if a.Line > 0 {
			where = fmt.Sprintf(" (%s:%d)", r.sc.Workload.Path, a.Line)
		}
		return setupErr(r.sc, "at %.6f s a request arrives%s while %d have arrived and not finished, the most a run holds at once: the workload arrives far faster than the engine serves it (lower the workload's rate or workload.rate_scale)", r.loop.Now().Seconds(), where, n)
	}
	r.s.AddRequest(r.newRequest(a))
	r.rep.Requests++
	if err := r.pullArrival(); err != nil {
		return err
	}
	return r.kickStep()
}

func (r *runner) startStep() error {
	if r.clean {
		if err := r.steady(); err != nil {
			return err
		}
	}
	if r.rep.Steps >= r.sc.Checks.StepLimit(r.tokensArrived) {
		r.stalled = true
		return nil
	}
	now := r.loop.Now()
	// The host reaches this step's row moves timing.host_step_us after
	// now: past the end of the step in flight, its accepted counts have
	// landed first (sched/accepted.go).
	r.s.HostBehind = r.out != nil && float64(now)+r.sc.Timing.HostStepUS*1e3 >= float64(r.stepEnd)
	out, err := r.s.Schedule(now)
	if err != nil {
		return err
	}
	r.rep.Preemptions += int64(len(out.Preempted))
	if len(out.Rows) == 0 && r.tw != nil {
		// vLLM still runs _update_states for a step that schedules
		// nothing: its preemptions and the emptied batch get a --trace
		// line (no rows), though no model runs and no check sees it.
		r.record(&r.emptyRec, out, now)
		r.tw.step(&r.emptyRec)
	}
	if len(out.Rows) == 0 && len(out.BlockCopies) > 0 {
		// execute_model runs _update_states, and with it the copies, before
		// it returns early for a step of no tokens (gpu_model_runner.py @
		// 6adad0876): they follow the step in flight, whose accesses were
		// performed when it was scheduled.
		r.sym.Out = nil
		if err := r.be.Execute(out, now); err != nil {
			return fmt.Errorf("backend %s, step %d: %w", r.be.Name(), out.Step, err)
		}
	}
	if len(out.Rows) == 0 {
		// vLLM's engine calls schedule() again after a step with no rows
		// (and runs no model). One that preempted changed the queues and
		// freed blocks, so the next may schedule: it starts at once, and
		// such a chain ends because each link shrinks the running list.
		// One that preempted nothing is a fixed point: the same state
		// schedules the same nothing until an arrival changes it.
		if r.out != nil {
			// Async scheduling: the engine waits on the step in flight,
			// whose output changes what can be scheduled.
			return nil
		}
		if len(out.Preempted) > 0 {
			r.stepPending = true
			return r.schedule(now, evStepStart)
		}
		if !r.hasPending {
			r.stalled = true
		}
		return nil
	}
	// A step scheduled behind the one in flight runs on the GPU when that
	// one ends. Its accesses are performed now, in GPU order: after the
	// step in flight's, before any step scheduled later.
	queued := r.out != nil
	rec, start := &r.step, now
	if queued {
		rec, start = &r.nextRec, r.stepEnd
		r.next = out
	}
	r.record(rec, out, start)
	r.checks.Step(rec)
	r.sym.Out = rec
	if err := r.be.Execute(out, start); err != nil {
		return fmt.Errorf("backend %s, step %d: %w", r.be.Name(), out.Step, err)
	}
	rec.HighestSlot = r.sym.Stats.HighestSlot
	for i := range out.Rows {
		rec.Rows[i].CorruptStep = out.Rows[i].Req.CorruptStep
	}
	bytes := r.sym.Stats.StateBytesMoved - r.lastBytes
	r.lastBytes = r.sym.Stats.StateBytesMoved
	r.rep.Steps++
	d := stepTime(&r.sc.Timing, r.metrics.step(out, start, bytes))
	if d <= 0 || start > math.MaxInt64-d {
		// Bad input, not a broken clock: coefficients so large that a
		// step ends past int64 ns (a float overflow converts negative).
		return setupErr(r.sc, "timing: step %d would end past the simulated clock's range (292 years): the timing coefficients are too large for this load", out.Step)
	}
	if queued {
		r.nextEnd, r.nextToks = start+d, r.metrics.scheduledTokens
		return nil
	}
	r.out, r.stepEnd, r.outToks = out, now+d, r.metrics.scheduledTokens
	if r.s.Cfg.AsyncScheduling {
		// The batch queue is not full: schedule the next step at once.
		r.fillQueue = true
		err := r.kickStep()
		r.fillQueue = false
		return err
	}
	return nil
}

// record starts the step's record from the scheduled batch, before the
// backend executes it (which adds what the kernels did).
func (r *runner) record(rec *step.Record, out *sched.Output, now sim.Time) {
	rec.Reset()
	rec.Step, rec.Start, rec.End = out.Step, now, now
	rec.NumScheduledTokens, rec.NumDecodes = out.NumScheduledTokens, out.NumDecodes
	for _, q := range out.Preempted {
		rec.Preempted = append(rec.Preempted, int64(q.ID))
	}
	rec.BlockCopies = append(rec.BlockCopies, out.BlockCopies...)
	for i := range out.Rows {
		row := &out.Rows[i]
		q := row.Req
		x := rec.AddRow()
		x.RequestID, x.Group, x.BatchIndex = int64(q.ID), q.Group, i
		x.NumScheduled, x.NumComputed, x.NumPrompt = row.NumScheduled, row.NumComputed, q.NumPromptTokens
		x.NumOutput, x.NumPreemptions, x.ArrivalNS = q.NumOutputTokens, q.NumPreemptions, int64(q.ArrivalTime)
		x.Kind, x.Region, x.Path, x.HasInitialState = row.Kind(), row.Region, row.Path, row.HasInitialState
		x.StateBlocks = append(x.StateBlocks, q.Blocks.Mamba...)
		x.Graph, x.KernelSlots = row.Graph, append(x.KernelSlots, row.KernelSlots...)
		x.NumDrafts = row.NumDrafts
		x.BlocksShort = r.kv.BlocksNeeded(&q.Blocks, row.NumComputed+row.NumScheduled)
		x.Status = q.Status
	}
	rec.Waiting, rec.Running = len(r.s.Waiting), len(r.s.Running)
	rec.NumBlocks, rec.BlocksHeld, rec.BlocksFree = r.kv.Pool.NumBlocks(), r.kv.Pool.NumHeld(), r.kv.Pool.NumFree()
	if r.kv.PrefixCaching() {
		st := r.kv.Pool.Stats()
		rec.PrefixQueries, rec.PrefixHits = st.Queries-r.pcSeen.Queries, st.Hits-r.pcSeen.Hits
		rec.PreemptedPrefixQueries, rec.PreemptedPrefixHits = st.PreemptedQueries-r.pcSeen.PreemptedQueries, st.PreemptedHits-r.pcSeen.PreemptedHits
		rec.EvictedBlocks = st.Evictions - r.pcSeen.Evictions
		rec.CachedBlocks = r.kv.Pool.NumCachedBlocks()
		rec.SharedBlockRefs = r.kv.SharedRefs()
		r.pcSeen = st
	}
	for _, q := range r.s.Running {
		rec.BlocksHeldByRunning += q.Blocks.NumHeld()
		rec.StateBlocksHeld += q.Blocks.StateBlocksHeld()
	}
	if r.opt.Detail&step.Holdings != 0 {
		for _, q := range r.s.Running {
			hold := func(b int32) {
				rec.Held = append(rec.Held, step.Holding{Block: b, Table: int64(q.ID), Pool: int64(r.kv.Pool.Holder(b))})
			}
			for _, g := range q.Blocks.Attn {
				for _, b := range g {
					hold(b)
				}
			}
			for _, w := range q.Blocks.Window {
				for _, b := range w.Blocks {
					if b != 0 {
						hold(b)
					}
				}
			}
			if q.Blocks.MambaT != nil {
				// A Mamba cache mode: every real block of each group's
				// table (running, copy source, cached boundaries).
				for g := range q.Blocks.MambaT {
					for _, b := range q.Blocks.MambaT[g].Blocks {
						if b != 0 {
							hold(b)
						}
					}
				}
				continue // Spec mirrors the tables' last K positions
			}
			for _, b := range q.Blocks.Mamba {
				if b != 0 {
					hold(b)
				}
			}
			for _, b := range q.Blocks.Spec {
				if b != 0 {
					hold(b)
				}
			}
		}
	}
}

// collect adds every violation, whoever finds it, to the step in flight.
func (r *runner) collect(v invariant.Violation) {
	rec := &r.step
	if r.next != nil && v.Step == r.nextRec.Step {
		rec = &r.nextRec
	}
	if v.Step == rec.Step {
		rec.Violations = append(rec.Violations, v)
		rec.Counts[v.Invariant]++
	}
}

func (r *runner) endStep() error {
	now := r.loop.Now()
	out := r.out
	r.out = nil
	rec := &r.step
	rec.End = now
	r.checks.Ended(rec)
	if r.tw != nil {
		r.tw.step(rec)
	}
	r.metrics.stepTokens = r.outToks
	r.metrics.tokens(now)
	fin, err := r.s.Update(out, now)
	if err != nil {
		return fmt.Errorf("step %d update: %w", out.Step, err)
	}
	for _, q := range fin {
		r.rep.OutputTokens += int64(q.NumOutputTokens)
		r.rep.Finished++
		r.metrics.finish(q)
		if r.finisher != nil {
			r.finisher.Finish(q)
		}
		rec.Finished = append(rec.Finished, step.Finished{RequestID: int64(q.ID), Group: q.Group,
			NumPromptTokens: q.NumPromptTokens, NumOutputTokens: q.NumOutputTokens, ArrivalNS: int64(q.ArrivalTime),
			FirstTokenNS: int64(q.FirstTokenTime), LastTokenNS: int64(q.LastTokenTime), FinishNS: int64(q.FinishTime),
			BlocksHeld: q.Blocks.NumHeld()})
		r.src.Finished(q.Group, now)
		if r.opt.finished != nil {
			r.opt.finished(q)
		}
		if r.next == nil {
			r.free = append(r.free, q)
		}
	}
	if r.next != nil {
		// The queued step may still name a request that finished here
		// (its drafts all accepted): its object is reused only after
		// that step's output is applied.
		r.free = append(r.free, r.retired...)
		r.retired = append(r.retired[:0], fin...)
	} else if len(r.retired) > 0 {
		r.free = append(r.free, r.retired...)
		r.retired = r.retired[:0]
	}
	if r.opt.Observe != nil {
		r.opt.Observe(rec)
	}
	r.clean = r.bulk && len(fin) == 0 && len(rec.Violations) == 0 && len(rec.Wrapped) == 0 && rec.Imposters == 0
	if r.next != nil {
		// The queued step is now the one on the GPU.
		r.step, r.nextRec = r.nextRec, r.step
		r.out, r.stepEnd, r.outToks = r.next, r.nextEnd, r.nextToks
		r.next = nil
	}
	if err := r.pullArrival(); err != nil {
		return err
	}
	r.fillQueue = r.s.Cfg.AsyncScheduling
	err = r.kickStep()
	r.fillQueue = false
	return err
}

// sortedViolations lists the kept violations by invariant, then order.
func sortedViolations(rec *invariant.Recorder) []invariant.Violation {
	var out []invariant.Violation
	for _, inv := range invariant.All() {
		out = append(out, rec.Kept(inv)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invariant < out[j].Invariant })
	return out
}
