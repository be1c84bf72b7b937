package sched

import "testing"

// Under speculative decoding (uniform_decode_query_len 1 + K = 3) a batch
// whose longest query is 3 tokens is uniform only when every row has 3:
// vLLM's _is_uniform_decode also asks num_tokens == max_query_len ×
// num_reqs (gpu_model_runner.py). A batch of a 3-token decode and a
// 1-token row (a request with no drafts this step) must not replay the
// FULL decode graph; the longest query alone would say it does.
func TestDispatchUniformNeedsEveryRowAtQueryLen(t *testing.T) {
	b := V031.Behaviour()
	for _, tc := range []struct {
		name    string
		q, c, p []int
		want    Graph
	}{
		{"every row 1 + K", []int{3, 3}, []int{9, 7}, []int{4, 5}, GraphFull},
		{"one row shorter", []int{3, 1}, []int{9, 7}, []int{4, 5}, GraphPiecewise},
		{"one row shorter, the longest last", []int{2, 3, 3}, []int{9, 7, 6}, []int{4, 5, 3}, GraphPiecewise},
	} {
		rows := graphRows(tc.q, tc.c, tc.p)
		for _, r := range []Runner{RunnerV1, RunnerV2} {
			if got := b.Dispatch(GraphModeFullAndPiecewise, r, rows, 0, 3); got != tc.want {
				t.Errorf("%s, runner %v: dispatches %s, want %s", tc.name, r, got, tc.want)
			}
		}
		if got := b.Dispatch(GraphModeFullDecodeOnly, RunnerV1, rows, 0, 3); tc.want == GraphPiecewise && got != GraphEager {
			t.Errorf("%s, full_decode_only: dispatches %s, want eager", tc.name, got)
		}
	}
}
