package mock

import (
	"fmt"
	"strings"
	"testing"

	"statesim/backend"
	"statesim/invariant"
	"statesim/model"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// engineCfg is a hand-built engine for tests: the tiny-hybrid model, a
// scheduler, the symbolic backend and the mock.
type engineCfg struct {
	numBlocks    int
	budget       int // max_num_batched_tokens
	maxSeqs      int
	version      sched.Version
	bits         uint
	temperature  float64
	weightSeed   uint64
	trace        []int64
	noChunking   bool
	forcePrefill bool
	shape        *model.Shape // nil: tiny-hybrid
	blockSize    int          // the layout's (0: 16)
	kern         func(Geometry) StateKernels
}

type arrival struct {
	step      int // the request is added before this step is scheduled
	prompt    int
	maxTokens int
	seed      uint64
}

type engine struct {
	tb     testing.TB
	shape  model.Shape
	layout model.Layout
	kv     *statecache.KVCacheManager
	s      *sched.Scheduler
	rec    *invariant.Recorder
	sym    *backend.Symbolic
	mk     *Mock
	step   int
	reqs   []*sched.Request
	viol   []invariant.Violation
	// results keeps each finished request's engine tokens and log-probs
	// (copied before the mock frees them).
	tokens   map[int64][]int32
	logprobs map[int64][]float64
	keepRes  bool
}

func tinyShape(tb testing.TB) model.Shape {
	s, err := model.Preset("tiny-hybrid")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func newEngine(tb testing.TB, c engineCfg) *engine {
	tb.Helper()
	shape := tinyShape(tb)
	if c.shape != nil {
		shape = *c.shape
	}
	if c.blockSize == 0 {
		c.blockSize = 16
	}
	layout := shape.Layout(c.blockSize)
	if c.maxSeqs == 0 {
		c.maxSeqs = 256
	}
	if c.bits == 0 {
		c.bits = 64
	}
	kv := statecache.NewKVCacheManager(&layout, c.numBlocks)
	cfg := sched.Config{
		MaxNumBatchedTokens: c.budget, MaxNumSeqs: c.maxSeqs, MaxModelLen: 1 << 20,
		EnableChunkedPrefill: !c.noChunking,
	}
	e := &engine{tb: tb, shape: shape, layout: layout, kv: kv, s: sched.New(cfg, kv, c.version, nil),
		rec: invariant.NewRecorder(0), tokens: map[int64][]int32{}, logprobs: map[int64][]float64{}}
	e.s.ForcePrefill = c.forcePrefill
	e.rec.Hook = func(v invariant.Violation) { e.viol = append(e.viol, v) }
	e.sym = backend.NewSymbolic(&shape, layout, kv.Pool, c.bits, e.rec)
	mk, err := New(Config{Shape: shape, Layout: layout, WeightSeed: c.weightSeed, Temperature: c.temperature, TraceIDs: c.trace}, e.sym)
	if err != nil {
		tb.Fatal(err)
	}
	if c.kern != nil {
		mk.cfg.StateKernels = c.kern(mk.geo)
	}
	e.mk = mk
	return e
}

func (e *engine) add(prompt, maxTokens int, seed uint64) *sched.Request {
	r := &sched.Request{
		ID: statecache.RequestID(len(e.reqs)), ArrivalTime: sim.Time(e.step) * sim.Millisecond, Group: -1,
		NumPromptTokens: prompt, MaxTokens: maxTokens, Seed: seed,
		CorruptStep: -1, FirstTokenTime: -1, Blocks: e.kv.NewTable(),
	}
	e.reqs = append(e.reqs, r)
	e.s.AddRequest(r)
	return r
}

// stepOnce runs one engine step; it reports false when nothing was
// scheduled.
func (e *engine) stepOnce() (bool, error) {
	now := sim.Time(e.step) * sim.Millisecond
	e.step++
	out, err := e.s.Schedule(now)
	if err != nil {
		return false, err
	}
	if len(out.Rows) == 0 {
		return false, nil
	}
	if err := e.mk.Execute(out, now); err != nil {
		return false, err
	}
	fin, err := e.s.Update(out, now)
	if err != nil {
		return false, err
	}
	for _, r := range fin {
		if e.keepRes {
			rd := e.mk.reqs[r.ID]
			e.tokens[int64(r.ID)] = append([]int32(nil), rd.Tokens...)
			e.logprobs[int64(r.ID)] = append([]float64(nil), rd.LogProbs...)
		}
		e.mk.Finish(r)
	}
	return true, nil
}

// run adds arrivals at their steps and steps until everything finished.
func (e *engine) run(arr []arrival) {
	e.tb.Helper()
	if err := e.runErr(arr); err != nil {
		e.tb.Fatal(err)
	}
}

func (e *engine) runErr(arr []arrival) error {
	next := 0
	for idle := 0; ; {
		for next < len(arr) && arr[next].step <= e.step {
			a := arr[next]
			e.add(a.prompt, a.maxTokens, a.seed)
			next++
		}
		if next == len(arr) && !e.s.HasUnfinished() {
			return nil
		}
		ran, err := e.stepOnce()
		if err != nil {
			return err
		}
		if ran || next < len(arr) {
			idle = 0
			continue
		}
		if idle++; idle > 3 {
			return fmt.Errorf("engine stalled at step %d with %d waiting, %d running", e.step, len(e.s.Waiting), len(e.s.Running))
		}
	}
}

// staleDecodeReaders are requests whose Mamba decode kernel read a slot
// that was not theirs (as the symbolic check judged it), except reads that
// lose only a little of the reader's own progress: the slot held zeros or
// the reader's own older state, and the reader had computed at most
// smallLoss tokens. Such a state differs from the right one by a few
// tokens' increments (dt·B·u with dt ≈ 0.01), which can stay below the
// divergence threshold; they are returned separately.
func (e *engine) staleDecodeReaders() map[int64]bool {
	out, _ := e.staleDecodeReadersSplit()
	return out
}

const smallLoss = 2

func (e *engine) staleDecodeReadersSplit() (strict, small map[int64]bool) {
	strict, small = map[int64]bool{}, map[int64]bool{}
	for _, v := range e.viol {
		if v.Invariant != invariant.StaleSlotRead || !strings.HasPrefix(v.Detail, "decode") {
			continue
		}
		var computed int
		if _, err := fmt.Sscanf(v.Detail, "decode path with %d computed tokens", &computed); err != nil {
			e.tb.Fatalf("unexpected stale-read detail %q: %v", v.Detail, err)
		}
		if (v.PrevOwner < 0 || v.PrevOwner == v.RequestID) && computed <= smallLoss {
			small[v.RequestID] = true
			continue
		}
		strict[v.RequestID] = true
	}
	for id := range strict {
		delete(small, id)
	}
	return strict, small
}

func (e *engine) divergent() map[int64]Divergence {
	out := map[int64]Divergence{}
	for _, d := range e.mk.Divergences() {
		out[d.RequestID] = d
	}
	return out
}

// randomArrivals draws n requests: arrival steps, prompt lengths and
// output lengths from rng.
func randomArrivals(rng interface {
	IntN(int) int
	Uint64() uint64
}, n, maxPrompt, maxOut, spread int) []arrival {
	arr := make([]arrival, n)
	step := 0
	for i := range arr {
		step += rng.IntN(spread + 1)
		arr[i] = arrival{step: step, prompt: 1 + rng.IntN(maxPrompt), maxTokens: 1 + rng.IntN(maxOut), seed: rng.Uint64()}
	}
	return arr
}
