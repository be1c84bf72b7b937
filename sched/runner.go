package sched

import "slices"

// What Model Runner V2 (vllm/v1/worker/gpu/) does to a step's rows that
// V1's persistent input batch does not. V2 keeps no persistent batch and
// runs no threshold reorder: each step it sorts the scheduled requests
// (sort_batch_req_ids, gpu/model_runner.py), and each metadata builder
// splits that order with its own threshold (1 + K for the state builders
// under speculative decoding), so the runner-wide minimum over groups
// (#55894) has nothing to act on. Its is_prefilling is
// num_computed_prefill_tokens < prefill_len, where prefill_len is the
// length of the token ids the request was added with; the scheduler
// sends a resumed request to V2 as a new one carrying all its token ids
// (scheduler.py @ 00024d31, use_v2_model_runner), so its recompute stays
// prefilling to its last chunk.

// PrefillLen is the length up to which runner ru counts r as prefilling:
// the prompt under V1 (InputBatch.num_prompt_tokens, kept across a
// preemption in the request's CachedRequestState), the tokens it was last
// added with under V2 (RequestState.prefill_len: the prompt when new,
// prompt and outputs when resumed).
func (r *Request) PrefillLen(ru Runner) int {
	if ru == RunnerV2 {
		return max(r.prefillLen, r.NumPromptTokens)
	}
	return r.NumPromptTokens
}

// orderV2 sorts rows, in scheduling order (the order of the scheduler's
// num_scheduled_tokens), as sort_batch_req_ids does: a stable sort by
// query length; uniform decodes (query length decodeLen = 1 + K) first
// when uniformFirst (#47381); and ahead of them every row with drafts
// when draftsFirst (#47808: key (not draft_tokens, num !=
// decode_query_len, num), gpu/model_runner.py @ 7f7a32cfe). It reports
// whether a row moved.
func orderV2(rows []Row, decodeLen int, uniformFirst, draftsFirst bool) bool {
	key := func(r *Row) int {
		q := r.NumScheduled
		if uniformFirst && q == decodeLen {
			q = -1
		}
		if draftsFirst && r.NumDrafts == 0 {
			q += 1 << 30 // after every row with drafts, in the same order
		}
		return q
	}
	sorted := true
	for i := 1; i < len(rows) && sorted; i++ {
		sorted = key(&rows[i-1]) <= key(&rows[i])
	}
	if sorted {
		return false
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return key(&a) - key(&b) })
	return true
}
