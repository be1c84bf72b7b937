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
	// (vllm/v1/attention/backends/mamba_attn.py), shared by the Mamba1,
	// Mamba2, ShortConv and linear-attention (MiniMax) backends. It passes
	// treat_short_extends_as_decodes=False since #37303 and lets rows with
	// state decode since #42430.
	BuilderMamba Builder = iota
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
	return [...]string{"mamba", "gdn", "kimi-k3-kda"}[b]
}

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
	}
	return BuilderMamba
}
