package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/sim"
)

// measured fakes an engine that follows want, with ±noise relative jitter.
func measured(want scenarios.Timing, n int, noise float64, seed uint64) []MeasuredStep {
	rng := rand.New(rand.NewPCG(seed, 1))
	steps := make([]MeasuredStep, n)
	for i := range steps {
		decode := int64(rng.IntN(512))
		l := StepLoad{DecodeRows: decode, ContextTokens: decode * int64(200+rng.IntN(4000))}
		if rng.IntN(3) == 0 {
			l.PrefillTokens = int64(1 + rng.IntN(8192))
			l.ContextTokens += l.PrefillTokens
		}
		rows := decode + int64(rng.IntN(2))
		l.StateBytes = rows * 2 * 360448 * 28
		steps[i] = MeasuredStep{Load: l, NS: StepNS(&want, l) * (1 + noise*(2*rng.Float64()-1))}
	}
	return steps
}

func TestFitTimingRecoversCoefficients(t *testing.T) {
	want := scenarios.Defaults().Timing
	got, err := FitTiming(measured(want, 400, 0.01, 1), want.StateBandwidthGBs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"step_overhead_us", got.StepOverheadUS, want.StepOverheadUS, 0.05},
		{"prefill_token_ns", got.PrefillTokenNS, want.PrefillTokenNS, 0.02},
		{"decode_row_ns", got.DecodeRowNS, want.DecodeRowNS, 0.25},
		{"context_token_ns", got.ContextTokenNS, want.ContextTokenNS, 0.1},
	} {
		if math.Abs(c.got-c.want) > c.tol*c.want {
			t.Errorf("%s: fitted %g, engine %g", c.name, c.got, c.want)
		}
	}
	// Predictions matter more than coefficients: within the noise.
	for _, s := range measured(want, 50, 0, 2) {
		if p := StepNS(&got, s.Load); math.Abs(p-s.NS) > 0.02*s.NS {
			t.Errorf("load %+v: predicted %.0f ns, engine %.0f ns", s.Load, p, s.NS)
		}
	}
}

func TestFitTimingKeepsCoefficientsNonNegative(t *testing.T) {
	want := scenarios.Timing{StepOverheadUS: 800, PrefillTokenNS: 9000, DecodeRowNS: 0, ContextTokenNS: 0, StateBandwidthGBs: 4000}
	got, err := FitTiming(measured(want, 300, 0.02, 3), 4000)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecodeRowNS < 0 || got.ContextTokenNS < 0 {
		t.Errorf("negative coefficients: %+v", got)
	}
	if math.Abs(got.PrefillTokenNS-9000) > 0.02*9000 {
		t.Errorf("prefill_token_ns %g, engine 9000", got.PrefillTokenNS)
	}
	if _, err := FitTiming(measured(want, 3, 0, 4), 4000); err == nil {
		t.Error("3 steps cannot fit 4 coefficients")
	}
}

// The run loop measures a step's load while recording metrics; it must
// agree with LoadOf, the definition calibration uses.
func TestRunLoadIsLoadOf(t *testing.T) {
	reqs := []*sched.Request{{ID: 1}, {ID: 2, NumPreemptions: 1}, {ID: 3}, {ID: 4}}
	out := &sched.Output{Rows: []sched.Row{
		{Req: reqs[0], NumScheduled: 1, NumComputed: 40},   // decode
		{Req: reqs[1], NumScheduled: 300, NumComputed: 0},  // recomputing after preemption
		{Req: reqs[2], NumScheduled: 1, NumComputed: 0},    // bug A's 1-token new request
		{Req: reqs[3], NumScheduled: 64, NumComputed: 128}, // chunked prefill
	}}
	var m metrics
	if got, want := m.step(out, 5*sim.Second, 777), LoadOf(out, 777); got != want {
		t.Errorf("run loop load %+v, LoadOf %+v", got, want)
	}
	if m.queue.Count() != 1 || m.rowSteps != 4 || m.maxRunning != 4 {
		t.Errorf("queue samples %d (want 1: only request 3 is new), row-steps %d, max rows %d", m.queue.Count(), m.rowSteps, m.maxRunning)
	}
}
