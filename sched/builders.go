package sched

import "statesim/model"

// Builder is the attention-metadata builder a model's state layers use:
// the code that calls split_decodes_and_prefills for them, and so decides
// which rows take the decode kernel. Each builder is a column of the
// version table (Behaviour.Split), because the builders were fixed at
// different times.
type Builder uint8

const (
	// BuilderMamba: BaseMambaAttentionMetadataBuilder
	// (vllm/v1/attention/backends/mamba_attn.py) as the Mamba1 and
	// ShortConv backends use it. It passes treat_short_extends_as_decodes=False since
	// #37303 and lets rows with state decode since #42430. The runner
	// never hands it num_accepted_tokens (gpu_model_runner.py
	// _build_attention_metadata @ 6adad0876 passes it to the Mamba2, GDN
	// and Bailing builders only; V2's MambaHybridModelState.
	// get_extra_attn_kwargs to Mamba2 and GDN), so its split's
	// decode_threshold stays 1 under speculative decoding
	// (_compute_common_metadata: "reorder_batch_threshold if
	// num_accepted_tokens is not None else 1", mamba_attn.py since #33726):
	// a draft row of 1 + K tokens takes the prefill kernel.
	BuilderMamba Builder = iota
	// BuilderMamba2: the same builder class as Mamba2AttentionMetadata-
	// Builder, which the runner hands num_accepted_tokens: its split's
	// threshold is 1 + K when it gets them (V1: in a step with drafts
	// scheduled, use_spec_decode = len(scheduled_spec_decode_tokens) > 0;
	// V2: whenever num_speculative_tokens > 0).
	BuilderMamba2
	// BuilderLinear: LinearAttentionMetadataBuilder
	// (vllm/v1/attention/backends/linear_attn.py), MiniMax's lightning
	// attention. Not a BaseMambaAttentionMetadataBuilder: it splits with
	// split_decodes_and_prefills(m, decode_threshold=1) and the default
	// flags in every release read (its history to 6adad0876 never changed
	// the call), so a batch of 1-token rows is all decodes, a new one
	// included; MiniMaxText01LinearAttention zeroes a new sequence's state
	// only on the prefill path (clear_linear_attention_cache_for_new_
	// sequences, minimax_linear_attn.py). Never handed num_accepted_tokens
	// (only its Bailing subclass is).
	BuilderLinear
	// BuilderGDN: GDNAttentionMetadataBuilder
	// (vllm/v1/attention/backends/gdn_attn.py), for Qwen3-Next, Qwen3.5,
	// OLMo-hybrid, Bailing-v3 and standalone Kimi Linear, whose KDA layers
	// (KimiGatedDeltaNetAttention) use the GDN backend (issue #51562). Its
	// non-spec branch called split_decodes_and_prefills(m,
	// decode_threshold=1) with the default flags until #51565.
	BuilderGDN
	// BuilderKimiK3KDA: KimiK3KDAMetadataBuilder
	// (vllm/models/kimi_k3/nvidia/kda_metadata.py, added by #50089), the
	// GDN builder's subclass for Kimi-K3 only; the same default-flag split
	// until #51483. Kimi-K3's KDA layers are KimiK3DeltaAttention, chosen
	// by linear_attn_config.use_full_rank_gate (kimi_k3/nvidia/model.py).
	BuilderKimiK3KDA
	numBuilders
)

func (b Builder) String() string {
	return [...]string{"mamba", "mamba2", "linear", "gdn", "kimi-k3-kda"}[b]
}

// gdnFamily reports the GDN builder and its Kimi-K3 subclass: they split
// by the spec mask when a step has draft rows.
func (b Builder) gdnFamily() bool { return b == BuilderGDN || b == BuilderKimiK3KDA }

// BuilderOf is the builder vLLM picks for a model whose state layers are
// of kind k ("" for presets, which are Mamba1); fullRankGate is KDA's
// use_full_rank_gate (model.Mixer.FullRankGate): Kimi-K3's layers, whose
// backend builds with KimiK3KDAMetadataBuilder. Kimi Linear's KDA layers
// keep the GDN backend.
func BuilderOf(k model.StateKind, fullRankGate bool) Builder {
	switch {
	case k == model.KDA && fullRankGate:
		return BuilderKimiK3KDA
	case k == model.GatedDeltaNet, k == model.KDA:
		return BuilderGDN
	case k == model.Mamba2:
		return BuilderMamba2
	case k == model.LinearAttention:
		return BuilderLinear
	}
	return BuilderMamba
}
