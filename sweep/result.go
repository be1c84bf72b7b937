package sweep

import (
	"errors"
	"fmt"
	"math"

	"statesim/engine"
	"statesim/invariant"
	"statesim/scenarios"
	"statesim/setup"
	"statesim/step"
)

// Result is what one cell found. Every field is a function of the
// scenario and seed, so results are byte-identical across machines,
// worker counts and shards.
type Result struct {
	Cell
	Key               string  `json:"key"`
	Requests          int64   `json:"requests"`
	Finished          int64   `json:"finished"`
	Steps             int64   `json:"steps"`
	Preemptions       int64   `json:"preemptions"`
	NumGPUBlocks      int     `json:"num_gpu_blocks"`
	HighestSlot       int64   `json:"highest_slot"`
	FirstWrappingSlot int64   `json:"first_wrapping_slot"`
	Violations        []int64 `json:"violations"` // per invariant, invariant.All order
	Imposters         int64   `json:"imposters"`
	Misclassified     int64   `json:"misclassified_rows"`
	Corrupted         int64   `json:"corrupted_requests"`
	// Divergent is the numeric backend's divergent requests, or -1 when
	// the backend compares nothing (symbolic).
	Divergent        int64   `json:"divergent_requests"`
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	// FirstWrap is the first prefill state write whose 32-bit address
	// wrapped (bug B), or nil.
	FirstWrap *Wrap `json:"first_wrap,omitempty"`
	// Error is why the cell could not run (a pool too small for the
	// memory model, say); its counters are then zero and it counts in no
	// metric.
	Error string `json:"error,omitempty"`
}

// Wrap locates bug B's first wrapped write.
type Wrap struct {
	Step      int64 `json:"step"`       // scheduler step
	RequestID int64 `json:"request_id"` // the writer
	// TrainingStep is the writer's workload group counted from 1: the RL
	// training step for rollouts, the batch for batches; 0 for open-loop.
	TrainingStep int   `json:"training_step"`
	Slot         int64 `json:"slot"`
}

// RunCell runs one cell.
func (s *Spec) RunCell(c Cell) (*Result, error) {
	st, err := setup.Load(s.Scenario, s.sets(c))
	if err != nil {
		return nil, err
	}
	var wrap *Wrap
	var imposters int64
	// Imposters and wrapped writes never happen in a steady decode step.
	opt := engine.Options{SkipSteady: true, Observe: func(rec *step.Record) {
		imposters += int64(rec.Imposters)
		if wrap == nil && len(rec.Wrapped) > 0 {
			wrap = firstWrap(rec)
		}
	}}
	rep, err := engine.RunSetup(st, opt)
	var ie *scenarios.InputError
	if errors.As(err, &ie) {
		// An infeasible point of the grid, not a broken sweep.
		r := &Result{Cell: c, Key: s.Key(c), Divergent: -1, FirstWrappingSlot: -1, Error: err.Error()}
		r.Violations = make([]int64, invariant.NumInvariants)
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Result{Cell: c, Key: s.Key(c), Requests: rep.Requests, Finished: rep.Finished, Steps: rep.Steps,
		Preemptions: rep.Preemptions, NumGPUBlocks: rep.Cache.NumGPUBlocks, HighestSlot: rep.Cache.HighestSlot,
		FirstWrappingSlot: rep.Cache.FirstWrappingSlot, Misclassified: rep.MisclassifiedRows,
		Corrupted: rep.CorruptedRequests, Divergent: -1,
		RequestsPerS: rep.Throughput.RequestsPerS, OutputTokensPerS: rep.Throughput.OutputTokensPerS, FirstWrap: wrap}
	if rep.Divergence != nil {
		r.Divergent = rep.Divergence.RequestsDivergent
	}
	for _, inv := range invariant.All() {
		r.Violations = append(r.Violations, rep.Count(inv))
	}
	// The report keeps a bounded list of imposters; the records count
	// every one.
	r.Imposters = imposters
	return r, nil
}

// firstWrap locates a step's first wrapped write (bug B); decode kernels
// index in 64 bits and never wrap.
func firstWrap(rec *step.Record) *Wrap {
	w := rec.Wrapped[0]
	g := w.Group + 1
	if w.Group < 0 {
		g = 0
	}
	return &Wrap{Step: rec.Step, RequestID: w.RequestID, TrainingStep: g, Slot: int64(w.Slot)}
}

// Metric is a per-point incidence drawn in charts.
type Metric struct {
	Name  string
	Label string // axis / colour-bar label, with its unit
	// Of aggregates a point's cells (one per seed); NaN means "none".
	Of func(rs []*Result) float64
}

func per1000(count func(r *Result) int64) func([]*Result) float64 {
	return func(rs []*Result) float64 {
		var n, req int64
		for _, r := range rs {
			if r.Error != "" {
				continue
			}
			c := count(r)
			if c < 0 {
				return math.NaN()
			}
			n += c
			req += r.Requests
		}
		if req == 0 {
			return math.NaN()
		}
		return float64(n) * 1000 / float64(req)
	}
}

// Metrics are the incidences a sweep can chart.
var Metrics = []Metric{
	{"corrupted", "corrupted requests per 1,000", per1000(func(r *Result) int64 { return r.Corrupted })},
	{"imposters", "imposters (stale decode reads by new requests) per 1,000 requests", per1000(func(r *Result) int64 { return r.Imposters })},
	{"stale-reads", "stale-slot reads per 1,000 requests", per1000(func(r *Result) int64 { return r.Violations[invariant.StaleSlotRead] })},
	{"misrouted", "new requests on the Mamba decode path per 1,000 requests", per1000(func(r *Result) int64 { return r.Violations[invariant.NoDecodeBeforePrefill] })},
	{"divergent", "divergent requests per 1,000", per1000(func(r *Result) int64 { return r.Divergent })},
	{"first-wrap", "first training step with a wrapped state write", func(rs []*Result) float64 {
		// The earliest over seeds; NaN when no seed wrapped.
		best := math.NaN()
		for _, r := range rs {
			if r.FirstWrap != nil && (math.IsNaN(best) || float64(r.FirstWrap.TrainingStep) < best) {
				best = float64(r.FirstWrap.TrainingStep)
			}
		}
		return best
	}},
}

// MetricByName looks a metric up; "" is corrupted.
func MetricByName(name string) (Metric, error) {
	if name == "" {
		name = "corrupted"
	}
	var names []string
	for _, m := range Metrics {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Metric{}, fmt.Errorf("unknown metric %q (known: %v)", name, names)
}
