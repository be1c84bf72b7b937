package prop

import (
	"slices"
	"strconv"

	"statesim/model"
)

// The observer's reading of what each metadata builder is handed and how
// it splits under speculative decoding, written from vLLM's code as
// tables of class names and per-release code facts (not from sched's
// Behaviour). Sources, vllm-project/vllm:
//   - gpu_model_runner.py _build_attention_metadata @ 6adad0876: V1 passes
//     num_accepted_tokens and num_decode_draft_tokens_cpu to builders that
//     are instances of Mamba2AttentionMetadataBuilder,
//     GDNAttentionMetadataBuilder or BailingLinearAttentionMetadataBuilder,
//     and only when use_spec_decode = len(scheduled_spec_decode_tokens) > 0.
//   - gpu/model_states/mamba_hybrid.py get_extra_attn_kwargs and
//     prepare_attn @ 6adad0876: V2 passes them to Mamba2 and GDN builders
//     whenever num_speculative_tokens > 0.
//   - mamba_attn.py _compute_common_metadata (since #33726, f5972a872):
//     decode_threshold = reorder_batch_threshold (1 + K) if
//     num_accepted_tokens is not None else 1.
//   - gdn_attn.py build @ 6adad0876: the spec branch runs when some row's
//     num_decode_draft_tokens is positive; spec rows are those >= 0; the
//     non-spec branch calls split_decodes_and_prefills(m,
//     decode_threshold=1); #34871 (116ed130f) makes every non-spec row of
//     the spec branch a prefill.
//   - mamba_attn.py _compute_common_metadata @ 009b0f3b (#55178): a row
//     still prefilling with prior state (seq_len > query_len) whose
//     num_decode_draft_tokens_cpu is >= 0 and equals query_len - 1 (a
//     prompt tail the scheduler padded with placeholder drafts) is taken
//     off is_prefilling; mamba2_attn.py build passes the counts, which
//     the runner gives only to the builders it hands num_accepted_tokens.
//   - gpu/model_runner.py sort_batch_req_ids: key (num != decode_query_len,
//     num) since #47381 (85b3a7264), (not draft_tokens, num !=
//     decode_query_len, num) since #47808 (7f7a32cfe).

// builderClass is the metadata builder class vLLM builds for a state
// layer of each kind (Kimi-K3's KimiK3KDAMetadataBuilder subclasses the
// GDN one, so isinstance checks see it as GDN).
var builderClass = map[model.StateKind]string{
	"":                    "Mamba1AttentionMetadataBuilder", // the presets are Mamba1
	model.Mamba1:          "Mamba1AttentionMetadataBuilder",
	model.Mamba2:          "Mamba2AttentionMetadataBuilder",
	model.ShortConv:       "ShortConvAttentionMetadataBuilder",
	model.GatedDeltaNet:   "GDNAttentionMetadataBuilder",
	model.KDA:             "GDNAttentionMetadataBuilder",
	model.LinearAttention: "LinearAttentionMetadataBuilder",
}

// acceptedTokensTo lists, per model runner, the builder classes handed
// num_accepted_tokens; everyAnyDrafts says whether the runner does so only
// in a step with drafts scheduled (V1) or in every step (V2).
var acceptedTokensTo = map[string]struct {
	classes   []string
	onlyDraft bool
}{
	"v1": {[]string{"Mamba2AttentionMetadataBuilder", "GDNAttentionMetadataBuilder", "BailingLinearAttentionMetadataBuilder"}, true},
	"v2": {[]string{"Mamba2AttentionMetadataBuilder", "GDNAttentionMetadataBuilder"}, false},
}

// releaseHas lists, for the PRs of this file, the releases whose code has
// them (engine.patches can add or remove them: withPRPatches).
var releaseHas = map[int][]string{
	// #34871 merged 2026-03-16, a day before #37303: v0.19 on (inferred).
	34871: {"v0.19", "v0.22", "v0.23", "v0.24", "v0.25", "v0.26", "v0.27", "v0.28", "v0.29", "v0.30", "v0.31", "fixed"},
	// #47808 merged 2026-08-12, after v0.27.0 (2026-08-10): v0.28 on.
	47808: {"v0.28", "v0.29", "v0.30", "v0.31", "fixed"},
	// #51865 (0a94d85a6, merged 2026-08-11, get_uniform_decode_token_count's
	// has_prefill in vllm/v1/worker/utils.py): v0.28 on.
	51865: {"v0.28", "v0.29", "v0.30", "v0.31", "fixed"},
	// #55178 merged 2026-09-03, between v0.28.0 and v0.29.0 (out by
	// 2026-09-10), its release not established: v0.31 on.
	55178: {"v0.31", "fixed"},
}

// paddedTail is #55178's mask for one row of a Mamba2 builder handed the
// draft counts: prefilling, with prior state, 1 + drafts tokens, drafts
// counted (>= 0; the runner counts a row's drafts only when positive).
func paddedTail(q, c, drafts int) bool {
	return c > 0 && drafts > 0 && q == drafts+1
}

// has reports whether version's code, under patches, has PR num.
func has(version string, patches []string, num int) bool {
	n := "+" + strconv.Itoa(num)
	switch {
	case slices.Contains(patches, n):
		return true
	case slices.Contains(patches, "-"+n[1:]):
		return false
	}
	return slices.Contains(releaseHas[num], version)
}

// splitThreshold is the decode_threshold the state layers' builder
// splits with in a step (mamba_attn.py; GDN's non-spec branch: 1).
func (k *classifier) splitThreshold(anyDrafts bool) int {
	if k.k == 0 || k.gdn {
		return 1
	}
	runner := "v1"
	if k.v2 {
		runner = "v2"
	}
	a := acceptedTokensTo[runner]
	if !slices.Contains(a.classes, k.builderClass) || a.onlyDraft && !anyDrafts {
		return 1
	}
	return 1 + k.k
}

// gdnSpecRow is gdn_attn.py's spec mask for one row: the runner's
// num_decode_draft_tokens is the draft count for a row of exactly
// 1 + drafts tokens with drafts > 0 (V1: a row in
// scheduled_spec_decode_tokens; V2: num_draft_tokens_per_req > 0 and
// is_decode), -1 otherwise; the mask is >= 0.
func gdnSpecRow(scheduled, drafts int) bool {
	return drafts > 0 && scheduled == drafts+1
}

// v2SortKey is sort_batch_req_ids' key for one row, as a tuple compared
// element by element.
func (k *classifier) v2SortKey(q, drafts int) [3]int {
	var noDrafts, notUniform int
	if k.draftsFirst && drafts == 0 {
		noDrafts = 1
	}
	if k.uniformFirst && q != 1+k.k {
		notUniform = 1
	}
	return [3]int{noDrafts, notUniform, q}
}

func keyLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
