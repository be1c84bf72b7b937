package sched

import "testing"

// The split of each state builder under speculative decoding, per
// release and runner, row by row from vLLM's code: mamba_attn.py
// _compute_common_metadata (decode_threshold is 1 + K only when the runner
// passes num_accepted_tokens), gpu_model_runner.py _build_attention_metadata
// (V1: num_accepted_tokens for the Mamba2, GDN and Bailing builders, only in
// a step with drafts scheduled), gpu/model_states/mamba_hybrid.py (V2: for
// Mamba2 and GDN whenever K > 0) and gdn_attn.py build (the spec branch
// only when some row carries drafts; #34871 in it), all @ 6adad0876. Each
// case is one of the four classes issue 32 lists, with the example it
// gives.
func TestSpecSplitPerBuilder(t *testing.T) {
	type row struct {
		id                          RequestID
		scheduled, computed, prompt int
		drafts                      int
	}
	type want struct {
		path Path
		init bool
	}
	cases := []struct {
		name    string
		k       Builder
		method  SpecMethod
		K       int
		rows    []row
		version []Version
		runner  []Runner
		want    map[RequestID]want
	}{
		{
			// 1. tiny-hybrid (Mamba1), one 4-token prompt, ngram K = 1: at
			// step 1 the row has 2 scheduled (1 draft) and 4 computed. The
			// Mamba1 builder gets no num_accepted_tokens: threshold 1, so
			// the draft row prefills (reads column 0, writes the state after
			// its draft there). ShortConv shares the builder.
			name: "mamba1 draft row", k: BuilderMamba, method: SpecNgram, K: 1,
			rows:    []row{{0, 2, 4, 4, 1}},
			version: []Version{V013, V014, V019, V022, V028, V031},
			runner:  []Runner{RunnerV1, RunnerV2},
			want:    map[RequestID]want{0: {PathPrefill, true}},
		},
		{
			// The same row on Mamba2 decodes (num_accepted_tokens handed).
			name: "mamba2 draft row", k: BuilderMamba2, method: SpecNgram, K: 1,
			rows:    []row{{0, 2, 4, 4, 1}},
			version: []Version{V013, V014, V019, V022, V028, V031},
			runner:  []Runner{RunnerV1, RunnerV2},
			want:    map[RequestID]want{0: {PathDecode, true}},
		},
		{
			// 2. Qwen3-Next (GDN), MTP K = 3, one 4-token prompt at step 0:
			// no row carries drafts, so the builder takes its non-spec
			// branch, split_decodes_and_prefills(m, decode_threshold=1):
			// the 4-token prompt prefills at every release.
			name: "gdn batch without draft rows", k: BuilderGDN, method: SpecMTP, K: 3,
			rows:    []row{{0, 4, 0, 4, 0}},
			version: []Version{V013, V014, V019, V022, V028, V031},
			runner:  []Runner{RunnerV1, RunnerV2},
			want:    map[RequestID]want{0: {PathPrefill, false}},
		},
		{
			// 3. GDN, a spec decode beside a prompt's last 1-token chunk and
			// a budget-cut decode without drafts: since #34871 (v0.19) both
			// non-spec rows are prefills, with their state.
			name: "gdn non-spec rows beside a spec row", k: BuilderGDN, method: SpecMTP, K: 2,
			rows:    []row{{0, 3, 20, 10, 2}, {1, 1, 9, 10, 0}, {2, 1, 30, 12, 0}},
			version: []Version{V019, V022, V028, V031},
			runner:  []Runner{RunnerV1, RunnerV2},
			want:    map[RequestID]want{0: {PathDecode, true}, 1: {PathPrefill, true}, 2: {PathPrefill, true}},
		},
		{
			// Before #34871 the 1-token non-spec rows were decodes.
			name: "gdn non-spec rows before #34871", k: BuilderGDN, method: SpecMTP, K: 2,
			rows:    []row{{0, 3, 20, 10, 2}, {1, 1, 9, 10, 0}, {2, 1, 30, 12, 0}},
			version: []Version{V013, V014},
			runner:  []Runner{RunnerV1},
			want:    map[RequestID]want{0: {PathDecode, true}, 1: {PathDecode, true}, 2: {PathDecode, true}},
		},
		{
			// Mamba2 on V1 in a step with no drafts: no num_accepted_tokens,
			// threshold 1, so a 3-token row past its prompt (a resumed
			// request's recompute) prefills; V2 hands them whenever K > 0,
			// but there the row is still prefilling by prefill_len: the
			// prompt here, so it decodes.
			name: "mamba2 step without drafts", k: BuilderMamba2, method: SpecMTP, K: 2,
			rows:    []row{{0, 3, 12, 10, 0}},
			version: []Version{V022, V031},
			runner:  []Runner{RunnerV1},
			want:    map[RequestID]want{0: {PathPrefill, true}},
		},
		{
			name: "mamba2 step without drafts, V2", k: BuilderMamba2, method: SpecMTP, K: 2,
			rows:    []row{{0, 3, 12, 10, 0}},
			version: []Version{V022, V031},
			runner:  []Runner{RunnerV2},
			want:    map[RequestID]want{0: {PathDecode, true}},
		},
	}
	for _, c := range cases {
		for _, v := range c.version {
			for _, ru := range c.runner {
				rows := make([]Row, len(c.rows))
				for i, r := range c.rows {
					rows[i] = Row{Req: &Request{ID: r.id, NumPromptTokens: r.prompt}, NumScheduled: r.scheduled, NumComputed: r.computed, NumDrafts: r.drafts}
				}
				spec := &Spec{Method: c.method, K: c.K}
				ClassifyRunner(v, c.k, rows, make([]Row, 0, len(rows)), false, spec, ru)
				for _, r := range rows {
					w := c.want[r.Req.ID]
					if r.Path != w.path || r.HasInitialState != w.init {
						t.Errorf("%s, %s builder, %s, %s: request %d on %s (has_initial_state %v), want %s (%v)",
							c.name, c.k, v, ru, r.Req.ID, r.Path, r.HasInitialState, w.path, w.init)
					}
				}
			}
		}
	}
}
