package sched

import "testing"

// TestHasInitialStatePerRow: every builder computes has_initial_state per
// request, num_computed_tokens > 0 for each prefill row (mamba_attn.py's
// has_initial_states_p, gdn_attn.py's has_initial_state = context_lens >
// 0, @ 6adad0876; the same since the V1 builders began, a89209b78), never
// one value for the batch: a prefill batch of a request resumed on a
// prefix hit, a brand-new prompt and a continuing chunk gives each row
// its own flag, in every release and builder.
func TestHasInitialStatePerRow(t *testing.T) {
	for v := V013; v < V0; v++ {
		for k := Builder(0); k < numBuilders; k++ {
			// Rows long enough to be prefills under every split: the
			// hit (64 computed), a new prompt, a second chunk.
			rows := []Row{
				{Req: &Request{ID: 0, NumPromptTokens: 96}, NumScheduled: 32, NumComputed: 64},
				{Req: &Request{ID: 1, NumPromptTokens: 40}, NumScheduled: 40, NumComputed: 0},
				{Req: &Request{ID: 2, NumPromptTokens: 200}, NumScheduled: 32, NumComputed: 32},
			}
			ClassifyFor(v, k, rows, make([]Row, 0, len(rows)), false)
			for i := range rows {
				r := &rows[i]
				if r.Path != PathPrefill || r.HasInitialState != (r.NumComputed > 0) {
					t.Errorf("%s, %s builder, request %d (%d computed): path %s, has_initial_state %v; want prefill, %v",
						v, k, r.Req.ID, r.NumComputed, r.Path, r.HasInitialState, r.NumComputed > 0)
				}
			}
		}
	}
}
