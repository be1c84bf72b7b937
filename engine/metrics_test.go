package engine

import (
	"math"
	"statesim/step"
	"testing"

	"statesim/scenarios"
	"statesim/sim"
)

// Queueing delay is measured once per request, from arrival to its first
// scheduling, so it never exceeds the time to its first token.
func TestQueueingDelayPerRequest(t *testing.T) {
	sc, err := scenarios.Load("azure-conv", []string{"workload.limit=2000", "workload.rate_scale=20"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, ttft := rep.Latency.Queue, rep.Latency.TTFT
	if int64(q.Count) != rep.Requests || int64(ttft.Count) != rep.Finished || rep.Finished != 2000 {
		t.Fatalf("%d queueing samples, %d TTFT samples for %d requests (%d finished)", q.Count, ttft.Count, rep.Requests, rep.Finished)
	}
	if q.P50 > ttft.P50 || q.P99 > ttft.P99 || q.Max > ttft.Max {
		t.Errorf("queueing delay %+v exceeds TTFT %+v", q, ttft)
	}
	if q.Max <= 0 {
		t.Errorf("at 20× the recorded rate some request must wait: %+v", q)
	}
	if rep.RowSteps < rep.Steps {
		t.Errorf("%d row-steps over %d steps", rep.RowSteps, rep.Steps)
	}
}

// The throughput windows count a token for every row that computed all
// it knows, which is exactly when Update samples one.
func TestThroughputWindows(t *testing.T) {
	sc, err := scenarios.Load("azure-conv", []string{"workload.limit=1500", "workload.rate_scale=10"})
	if err != nil {
		t.Fatal(err)
	}
	var counted int64
	rep, err := Run(sc, Options{Observe: func(rec *step.Record) {
		for i := range rec.Rows {
			if rec.Rows[i].Samples() {
				counted++
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if counted != rep.OutputTokens || rep.Finished != 1500 {
		t.Fatalf("rows completing their tokens %d, output tokens %d", counted, rep.OutputTokens)
	}
	w := rep.Throughput.OutputTokensPerSWindows
	if want := int(math.Ceil(rep.SimTimeS)); w.Windows < want-1 || w.Windows > want+1 {
		t.Errorf("%d windows for %.3f s", w.Windows, rep.SimTimeS)
	}
	if !(w.P10 <= w.P50 && w.P50 <= w.P90 && w.P90 <= w.Max) || w.Max <= rep.Throughput.OutputTokensPerS {
		t.Errorf("windows %+v against a mean of %g tok/s", w, rep.Throughput.OutputTokensPerS)
	}

	// By hand: 3 tokens in [0, 1 s), none in [1, 2 s), 2 in [2, 2.5 s).
	var m metrics
	for _, at := range []sim.Time{100 * sim.Millisecond, 900 * sim.Millisecond} {
		m.stepTokens = 1
		m.tokens(at)
	}
	m.stepTokens = 1
	m.tokens(999 * sim.Millisecond)
	m.stepTokens = 2
	m.tokens(2400 * sim.Millisecond)
	m.closeRate(2500 * sim.Millisecond)
	if got := ratePercentiles(&m.rate); got.Windows != 3 || got.Max != 4 || got.P10 != 0 {
		t.Errorf("windows %+v, want 3 windows: 3, 0 and 2 tokens in 0.5 s (4/s)", got)
	}
}
