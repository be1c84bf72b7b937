package model

import "fmt"

// StateKind is the mixer a state layer runs, which decides the tensors of
// its state (vLLM's MambaStateShapeCalculator and MambaStateDtypeCalculator,
// vllm/model_executor/layers/mamba/mamba_utils.py @ 02d71083).
type StateKind string

const (
	Mamba1          StateKind = "mamba1"           // Jamba, Mamba, FalconMamba
	Mamba2          StateKind = "mamba2"           // Nemotron-H, Bamba, Granite-4.0-H, Falcon-H1
	ShortConv       StateKind = "short_conv"       // LFM2
	GatedDeltaNet   StateKind = "gated_delta_net"  // Qwen3-Next, Qwen3.5
	LinearAttention StateKind = "linear_attention" // MiniMax lightning attention
	KDA             StateKind = "kda"              // Kimi Delta Attention (Kimi Linear)
)

// Mixer holds the widths of a state layer beyond Mamba1's (whose widths
// are Shape's mamba_* fields). Field meanings follow the argument names of
// vLLM's shape calculator; the config keys that fill them differ per model
// (see hfconfig.go).
type Mixer struct {
	Kind StateKind `json:"kind"`
	// IntermediateSize is Mamba2's d_inner (heads × head dim) and
	// ShortConv's conv dim.
	IntermediateSize int `json:"intermediate_size,omitempty"`
	StateSize        int `json:"state_size,omitempty"`
	ConvKernel       int `json:"conv_kernel,omitempty"`
	NGroups          int `json:"n_groups,omitempty"`
	// NumHeads and HeadDim: Mamba2's SSM heads, linear attention's and
	// KDA's heads.
	NumHeads int `json:"num_heads,omitempty"`
	HeadDim  int `json:"head_dim,omitempty"`
	// Key heads (GatedDeltaNet, KDA) and value heads (GatedDeltaNet).
	NumKHeads int `json:"num_k_heads,omitempty"`
	HeadKDim  int `json:"head_k_dim,omitempty"`
	NumVHeads int `json:"num_v_heads,omitempty"`
	HeadVDim  int `json:"head_v_dim,omitempty"`
	// FullRankGate is KDA's linear_attn_config.use_full_rank_gate: vLLM
	// runs such layers as KimiK3DeltaAttention, whose backend's metadata
	// builder is KimiK3KDAMetadataBuilder (Kimi-K3); without it, as
	// KimiGatedDeltaNetAttention on the GDN backend (Kimi Linear).
	FullRankGate bool `json:"use_full_rank_gate,omitempty"`
}

// StateTensor is one tensor of a layer's state in one block, per TP rank.
type StateTensor struct {
	Name  string `json:"name"`
	Dims  []int  `json:"dims"`
	DType string `json:"dtype"`
}

// Elems is the tensor's element count.
func (t StateTensor) Elems() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// Bytes is the tensor's size.
func (t StateTensor) Bytes() int64 { return t.Elems() * int64(DTypeBytes(t.DType)) }

func (t StateTensor) String() string {
	return fmt.Sprintf("%s %v %s (%d B)", t.Name, t.Dims, t.DType, t.Bytes())
}

// StateKind is the kind of the shape's state layers (Mamba1 for presets).
func (s *Shape) StateKind() StateKind {
	if s.Mixer.Kind == "" {
		return Mamba1
	}
	return s.Mixer.Kind
}

// extraGroupsForHeadShards is how many Mamba2 groups vLLM adds so every
// TP rank holds the groups its heads need: none when TP divides n_groups,
// else TP − n_groups (mamba_utils.py, extra_groups_for_head_shards).
func extraGroupsForHeadShards(nGroups, tp int) int {
	if nGroups%tp == 0 {
		return 0
	}
	return tp - nGroups
}

// convDType and ssmDType are the state dtypes vLLM resolves: the conv
// (and every non-temporal) state takes mamba_cache_dtype, or the model
// dtype when "auto"; the temporal state takes mamba_ssm_cache_dtype, or
// the conv dtype when "auto" (_mamba_state_dtype, mamba_utils.py @
// 6adad0876), after the release's config hooks have resolved an "auto"
// one (ApplyRelease). Gated DeltaNet's temporal state took the conv dtype
// before #34489 (ReleaseRules.GDNSSMFromConv). A preset's ssm_state_dtype
// stands for the --mamba-ssm-cache-dtype it was served with.
func (s *Shape) convDType() string {
	if d := s.Cache.MambaCacheDType; d != "" && d != "auto" {
		return d
	}
	return s.DType
}

func (s *Shape) ssmDType() string {
	if s.StateKind() == GatedDeltaNet && s.Cache.Rules.GDNSSMFromConv {
		return s.convDType()
	}
	if d := s.Cache.MambaSSMCacheDType; d != "" && d != "auto" {
		return d
	}
	if s.SSMStateDType != "" {
		return s.SSMStateDType
	}
	return s.convDType()
}

// StateTensors lists one state layer's tensors per TP rank, in vLLM's
// order (the conv state first, then the temporal state). Widths that TP
// does not divide are truncated here; CheckTP reports them. Under
// speculative decoding the conv state of the kinds whose model class
// passes num_spec holds conv_kernel − 1 + num_spec columns (numSpec).
func (s *Shape) StateTensors() []StateTensor {
	if s.NumMambaLayers() == 0 {
		return nil
	}
	tp := max(1, s.Cache.TensorParallelSize)
	m := &s.Mixer
	conv, ssm := s.convDType(), s.ssmDType()
	w := m.ConvKernel - 1 + s.numSpec() // the conv state's columns
	switch s.StateKind() {
	case Mamba2:
		g := m.NGroups + extraGroupsForHeadShards(m.NGroups, tp)
		return []StateTensor{
			{"conv", []int{w, (m.IntermediateSize + 2*g*m.StateSize) / tp}, conv},
			{"ssm", []int{m.NumHeads / tp, m.HeadDim, m.StateSize}, ssm},
		}
	case ShortConv:
		return []StateTensor{{"conv", []int{w, m.IntermediateSize / tp}, conv}}
	case GatedDeltaNet:
		return []StateTensor{
			{"conv", []int{w, (2*m.NumKHeads*m.HeadKDim + m.NumVHeads*m.HeadVDim) / tp}, conv},
			{"recurrent", []int{m.NumVHeads / tp, m.HeadVDim, m.HeadKDim}, ssm},
		}
	case LinearAttention:
		// linear_attention_state_dtype: mamba_cache_dtype or the model's.
		return []StateTensor{{"kv", []int{m.NumHeads / tp, m.HeadDim, m.HeadDim}, conv}}
	case KDA:
		// kda_state_dtype: the recurrent state is always float32.
		return []StateTensor{
			{"conv", []int{w, (m.NumHeads*m.HeadDim + 2*m.NumKHeads*m.HeadKDim) / tp}, conv},
			{"recurrent", []int{m.NumHeads / tp, m.HeadDim, m.HeadDim}, "float32"},
		}
	}
	di := s.DInner()
	return []StateTensor{
		{"conv", []int{s.MambaDConv - 1, di / tp}, conv},
		{"ssm", []int{di / tp, s.MambaDState}, ssm},
	}
}

// CheckTP reports the first width tensor parallelism does not divide, as
// vLLM's divide() would assert, or nil.
func (s *Shape) CheckTP(tp int) error {
	if tp < 1 {
		return fmt.Errorf("must be >= 1, got %d", tp)
	}
	type w struct {
		name string
		v    int
	}
	var ws []w
	if s.NumAttentionLayers() > 0 {
		ws = append(ws, w{"num_attention_heads", s.NumAttentionHeads})
	}
	if s.NumMambaLayers() > 0 {
		m := &s.Mixer
		switch s.StateKind() {
		case Mamba1:
			ws = append(ws, w{"mamba d_inner (mamba_expand × hidden_size)", s.DInner()})
		case Mamba2:
			g := m.NGroups + extraGroupsForHeadShards(m.NGroups, tp)
			ws = append(ws, w{"mamba heads", m.NumHeads}, w{"mamba conv dim (d_inner + 2·n_groups·d_state)", m.IntermediateSize + 2*g*m.StateSize})
		case ShortConv:
			ws = append(ws, w{"conv dim", m.IntermediateSize})
		case GatedDeltaNet:
			ws = append(ws, w{"linear_num_value_heads", m.NumVHeads}, w{"linear conv dim", 2*m.NumKHeads*m.HeadKDim + m.NumVHeads*m.HeadVDim})
		case LinearAttention, KDA:
			ws = append(ws, w{"linear attention heads", m.NumHeads})
		}
	}
	for _, x := range ws {
		if x.v%tp != 0 {
			return fmt.Errorf("%d does not divide %s (%d)", tp, x.name, x.v)
		}
	}
	return nil
}

// IndexModel is how the kernels of a state kind form a state's address
// from its slot: which kernel multiplies slot × stride in a 32-bit type
// (bug B) in the vLLM versions statesim models, and the fix. Only a kernel
// listed here lets engine.state_index_bits below 64 take effect.
type IndexModel struct {
	// Prefill32 is true when the prefill kernel's initial-state read and
	// final-state write form slot × stride in 32 bits until Fix.
	Prefill32 bool
	// Kernel and Fix name the kernel source and the change that widened it.
	Kernel, Fix string
	// Note says how the other kernels of the kind index states.
	Note string
}

// IndexModel of the shape's state kind. Sources: csrc/mamba/mamba_ssm/
// selective_scan.h (index_t uint32_t until PR #35275); the Triton kernels
// cast the loaded state index to tl.int64 before multiplying
// (selective_state_update: PR #20016; causal_conv1d: PR #20938;
// fla fused_recurrent and the lightning-attention decode kernel: .to(tl.int64)
// on the loaded index), and the prefill paths of Mamba2, GDN, KDA, ShortConv
// and linear attention gather and scatter states with PyTorch indexing
// (64-bit).
func (s *Shape) IndexModel() IndexModel {
	switch s.StateKind() {
	case Mamba1:
		return IndexModel{Prefill32: true,
			Kernel: "selective_scan_fwd (csrc/mamba/mamba_ssm/selective_scan_fwd.cu): ssm_states + cache_index * ssm_states_batch_stride with SSMParamsBase::index_t = uint32_t",
			Fix:    "PR #35275 (Feb 2026): index_t = size_t",
			Note:   "decode (selective_state_update, Triton) and causal_conv1d cast the index to int64 (PRs #20016, #20938)"}
	case Mamba2:
		return IndexModel{Kernel: "mamba_chunk_scan_combined + selective_state_update (Triton)",
			Note: "prefill gathers/scatters ssm_state[state_indices] in PyTorch (64-bit); selective_state_update and causal_conv1d cast to int64 (PRs #20016, #20938)"}
	case ShortConv:
		return IndexModel{Kernel: "causal_conv1d_fn / causal_conv1d_update (Triton)", Note: "int64 since PR #20938"}
	case GatedDeltaNet:
		return IndexModel{Kernel: "chunk_gated_delta_rule + fused_recurrent_gated_delta_rule (fla, Triton)",
			Note: "the loaded state index is cast to tl.int64 before × stride; FlashInfer's GDN decode formed it in Int32 until flashinfer PR #3230 (May 2026), a signed wrap at 2^31 that faults rather than aliasing (not modelled)"}
	case LinearAttention:
		return IndexModel{Kernel: "lightning attention prefill + _linear_attn_decode_kernel (Triton)",
			Note: "prefill indexes the cache in PyTorch; later decode kernels cast slot_id to tl.int64 (earlier copies loaded it as int32: the fixing PR was not located, not modelled)"}
	case KDA:
		return IndexModel{Kernel: "chunk_kda + fused_recurrent_kda (fla, Triton)", Note: "state index cast to tl.int64"}
	}
	return IndexModel{}
}

// IndexBits is the width the simulated prefill kernel forms slot × stride
// in: the requested state_index_bits where the real kernel used 32 bits,
// else 64 (that kind's kernels never wrapped).
func (s *Shape) IndexBits(requested int) uint {
	if s.IndexModel().Prefill32 {
		return uint(requested)
	}
	return 64
}

// IndexedState is the state tensor the prefill kernel's slot × stride
// addresses (the temporal state; ShortConv's only tensor), with its byte
// offset inside a page.
func (s *Shape) IndexedState() (t StateTensor, offsetBytes int64, ok bool) {
	ts := s.StateTensors()
	if len(ts) == 0 {
		return StateTensor{}, 0, false
	}
	for _, x := range ts[:len(ts)-1] {
		offsetBytes += x.Bytes()
	}
	return ts[len(ts)-1], offsetBytes, true
}

// StateOffsetElems is where the indexed state starts in a page, in its
// own elements (rounded up).
func (s *Shape) StateOffsetElems() int64 {
	t, off, ok := s.IndexedState()
	if !ok {
		return 0
	}
	b := int64(DTypeBytes(t.DType))
	if b == 0 {
		return 0
	}
	return (off + b - 1) / b
}
