package statesim

import (
	"testing"

	"statesim/scenarios"
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
