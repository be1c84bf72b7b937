package model

import "fmt"

// LayerKind is the kind of one decoder layer.
type LayerKind uint8

const (
	Attention LayerKind = iota
	// Mamba is a layer with a fixed-size state, of any StateKind.
	Mamba
	// NoCache is a layer with no KV cache spec (Nemotron-H's MLP and MoE
	// layers).
	NoCache
	// SlidingWindow is a sliding-window attention layer with a block of
	// its own (a DFlash drafter's: DraftWindow); no target shape has one.
	SlidingWindow
)

func (k LayerKind) String() string {
	switch k {
	case Attention:
		return "attention"
	case Mamba:
		return "mamba"
	case SlidingWindow:
		return "sliding_window"
	}
	return "none"
}

// CacheLayer is one entry of vLLM's kv_cache_spec: a layer index and the
// kind of cache it needs, in the order the model registers its attention
// modules (layer order; in Falcon-H1's parallel blocks the attention of a
// layer comes before its Mamba mixer).
type CacheLayer struct {
	Layer int       `json:"layer"`
	Kind  LayerKind `json:"kind"`
}

// CacheConfig holds the engine arguments that shape the cache, under
// vLLM's names; the scenario fills it from its engine section.
type CacheConfig struct {
	TensorParallelSize int    `json:"tensor_parallel_size"`
	MambaCacheDType    string `json:"mamba_cache_dtype"`
	MambaSSMCacheDType string `json:"mamba_ssm_cache_dtype"`
	KVCacheDType       string `json:"kv_cache_dtype"`
	// KernelBlockAlignment is the smallest block size the attention
	// backend's kernels support; 0 means the default backend's: 16
	// (FlashAttention), 64 for MLA (FlashMLA).
	KernelBlockAlignment int `json:"kernel_block_alignment_size"`
	// MambaChunkAligned: mamba_cache_mode all (as settled, with prefix
	// caching on) sizes the block to a multiple of the Mamba kernel's
	// chunk (Unify). MambaBlockSize is the mamba_block_size given (0:
	// unset), which it takes as the chunk instead of the model's.
	MambaChunkAligned bool `json:"mamba_chunk_aligned,omitempty"`
	MambaBlockSize    int  `json:"mamba_block_size,omitempty"`
	// NumSpeculativeTokens is speculative_config.num_speculative_tokens
	// (0 without drafting): the state shapes of the kinds whose model
	// class passes it as num_spec widen the conv state by it (numSpec).
	NumSpeculativeTokens int `json:"num_speculative_tokens,omitempty"`
	// Rules are the release's dtype and width rules (ApplyRelease); the
	// zero value is the calculators of vllm/model_executor/layers/mamba/
	// mamba_utils.py @ 6adad0876 with the flags as given.
	Rules ReleaseRules `json:"-"`
}

// Shape is a model's architecture, with field names from the Hugging Face
// configs of Jamba (attn_layer_period / attn_layer_offset).
type Shape struct {
	Name string `yaml:"name" json:"name"`
	// NumLayers decoder layers; layer i is attention when
	// AttnLayerPeriod > 0 and i % AttnLayerPeriod == AttnLayerOffset.
	NumLayers       int `yaml:"num_layers" json:"num_layers"`
	AttnLayerPeriod int `yaml:"attn_layer_period" json:"attn_layer_period"`
	AttnLayerOffset int `yaml:"attn_layer_offset" json:"attn_layer_offset"`

	HiddenSize        int `yaml:"hidden_size" json:"hidden_size"`
	MambaExpand       int `yaml:"mamba_expand" json:"mamba_expand"`
	MambaDState       int `yaml:"mamba_d_state" json:"mamba_d_state"`
	MambaDConv        int `yaml:"mamba_d_conv" json:"mamba_d_conv"`
	NumAttentionHeads int `yaml:"num_attention_heads" json:"num_attention_heads"`
	NumKVHeads        int `yaml:"num_key_value_heads" json:"num_key_value_heads"`
	HeadDim           int `yaml:"head_dim" json:"head_dim"`
	VocabSize         int `yaml:"vocab_size" json:"vocab_size"`
	// MambaChunkSize is the config's mamba_chunk_size, else chunk_size
	// (the Mamba2 SSD kernel's chunk); 0 when it has neither (ChunkSize).
	MambaChunkSize int `yaml:"mamba_chunk_size" json:"mamba_chunk_size,omitempty"`

	// DType of activations, KV cache and conv state; SSMStateDType of the
	// SSM state (float32 in the incident).
	DType         string `yaml:"dtype" json:"dtype"`
	SSMStateDType string `yaml:"ssm_state_dtype" json:"ssm_state_dtype"`
	// WeightsGiB is the memory all the weights take, before tensor
	// parallelism divides them (WeightsPerRankGiB).
	WeightsGiB float64 `yaml:"weights_gib" json:"weights_gib"`

	// Filled from a Hugging Face config.json (FromHFConfig), zero for the
	// presets: the model type, the cache layers in registration order
	// (nil: attn_layer_period/offset decide), the state mixer's widths
	// (zero: Mamba1 from the mamba_* fields), MLA's latent widths and the
	// parameter count the weights come from.
	ModelType string `yaml:"-" json:"model_type,omitempty"`
	// Architecture is the config's first architectures entry, the key of
	// vLLM's MODELS_CONFIG_MAP (the per-model config hooks, ApplyRelease).
	Architecture string `yaml:"-" json:"architecture,omitempty"`
	// ConfigSSMDType is the SSM state dtype the config names for itself:
	// Qwen3.5's mamba_ssm_dtype, Nemotron-H's mamba_ssm_cache_dtype
	// (ConfigSSMDTypeKey says which); vLLM's hooks read it (ApplyRelease).
	ConfigSSMDType    string       `yaml:"-" json:"config_ssm_dtype,omitempty"`
	ConfigSSMDTypeKey string       `yaml:"-" json:"-"`
	CacheLayers       []CacheLayer `yaml:"-" json:"cache_layers,omitempty"`
	Mixer             Mixer        `yaml:"-" json:"mixer,omitempty"`
	KVLoraRank        int          `yaml:"-" json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim     int          `yaml:"-" json:"qk_rope_head_dim,omitempty"`
	NumParameters     int64        `yaml:"-" json:"num_parameters,omitempty"`
	ParameterNotes    string       `yaml:"-" json:"-"`

	// Cache is the engine's cache arguments (set by the scenario).
	Cache CacheConfig `yaml:"-" json:"-"`
}

// MLA reports whether attention layers cache one latent vector per token
// (DeepSeek's multi-head latent attention, Kimi Linear).
func (s *Shape) MLA() bool { return s.KVLoraRank > 0 }

// WeightsPerRankGiB is the weights one GPU holds: tensor parallelism
// shards the linear layers and the vocabulary across ranks (the small
// replicated norms are ignored).
func (s *Shape) WeightsPerRankGiB() float64 {
	return s.WeightsGiB / float64(max(1, s.Cache.TensorParallelSize))
}

// DTypeBytes is the size of one element of a named dtype, or 0 if unknown.
func DTypeBytes(name string) int {
	switch name {
	case "float32", "fp32":
		return 4
	case "bfloat16", "float16", "bf16", "fp16":
		return 2
	case "fp8", "float8", "fp8_e4m3", "fp8_e5m2":
		return 1
	}
	return 0
}

// Validate reports the first inconsistency as "field: problem".
func (s *Shape) Validate() error {
	pos := func(name string, v int) error {
		if v <= 0 {
			return fmt.Errorf("%s: must be > 0, got %d", name, v)
		}
		return nil
	}
	if err := pos("num_layers", s.NumLayers); err != nil {
		return err
	}
	if s.AttnLayerPeriod < 0 {
		return fmt.Errorf("attn_layer_period: must be >= 0, got %d", s.AttnLayerPeriod)
	}
	if s.CacheLayers == nil && s.AttnLayerPeriod > 0 && (s.AttnLayerOffset < 0 || s.AttnLayerOffset >= s.AttnLayerPeriod) {
		return fmt.Errorf("attn_layer_offset: must be in [0, attn_layer_period), got %d", s.AttnLayerOffset)
	}
	for _, c := range s.CacheLayers {
		if c.Layer < 0 || c.Layer >= s.NumLayers {
			return fmt.Errorf("num_layers: %d, but a cache layer has index %d", s.NumLayers, c.Layer)
		}
	}
	for _, f := range []struct {
		n string
		v int
	}{{"hidden_size", s.HiddenSize}, {"vocab_size", s.VocabSize}} {
		if err := pos(f.n, f.v); err != nil {
			return err
		}
	}
	if s.NumMambaLayers() > 0 {
		if s.StateKind() == Mamba1 {
			expand := s.MambaExpand
			if s.Mixer.IntermediateSize > 0 {
				expand = 1
			}
			for _, f := range []struct {
				n string
				v int
			}{{"mamba_expand", expand}, {"mamba_d_state", s.MambaDState}, {"mamba_d_conv", s.MambaDConv}} {
				if err := pos(f.n, f.v); err != nil {
					return err
				}
			}
		} else {
			for _, t := range s.StateTensors() {
				for _, d := range t.Dims {
					if d <= 0 {
						return fmt.Errorf("hf_config: %s state %s has shape %v: a width is missing or zero", s.StateKind(), t.Name, t.Dims)
					}
				}
			}
		}
	}
	if s.NumAttentionLayers() > 0 {
		if s.MLA() {
			if err := pos("qk_rope_head_dim", s.QKRopeHeadDim); err != nil {
				return err
			}
		} else {
			for _, f := range []struct {
				n string
				v int
			}{{"num_attention_heads", s.NumAttentionHeads}, {"num_key_value_heads", s.NumKVHeads}, {"head_dim", s.HeadDim}} {
				if err := pos(f.n, f.v); err != nil {
					return err
				}
			}
			if s.NumAttentionHeads%s.NumKVHeads != 0 {
				return fmt.Errorf("num_key_value_heads: must divide num_attention_heads (%d), got %d", s.NumAttentionHeads, s.NumKVHeads)
			}
		}
	}
	if DTypeBytes(s.DType) == 0 {
		return fmt.Errorf("dtype: unknown %q (want bfloat16, float16, float32 or fp8)", s.DType)
	}
	// Bounds that keep every page and block product inside int64.
	for _, t := range s.StateTensors() {
		e := 1.0
		for _, d := range t.Dims {
			e *= float64(d)
		}
		if e > 1<<36 {
			return fmt.Errorf("hf_config: %s state %s %v is %.3g elements per layer: too large to be a real model", s.StateKind(), t.Name, t.Dims, e)
		}
	}
	if float64(s.NumKVHeads)*float64(s.HeadDim)+float64(s.KVLoraRank) > 1<<28 {
		return fmt.Errorf("num_key_value_heads: %d KV heads × head_dim %d is too large to be a real model", s.NumKVHeads, s.HeadDim)
	}
	if s.SSMStateDType != "" && DTypeBytes(s.SSMStateDType) == 0 {
		return fmt.Errorf("ssm_state_dtype: unknown %q (want float32, bfloat16 or float16)", s.SSMStateDType)
	}
	if s.WeightsGiB < 0 {
		return fmt.Errorf("weights_gib: must be >= 0, got %g", s.WeightsGiB)
	}
	return nil
}

// Entries is vLLM's kv_cache_spec in registration order: every layer with
// a cache, and its kind.
func (s *Shape) Entries() []CacheLayer {
	if s.CacheLayers != nil {
		return s.CacheLayers
	}
	out := make([]CacheLayer, s.NumLayers)
	for i := range out {
		out[i] = CacheLayer{i, s.periodKind(i)}
	}
	return out
}

func (s *Shape) periodKind(i int) LayerKind {
	if s.AttnLayerPeriod > 0 && i%s.AttnLayerPeriod == s.AttnLayerOffset {
		return Attention
	}
	return Mamba
}

// Kind of layer i (its first cache entry's kind; NoCache when it has none).
func (s *Shape) Kind(i int) LayerKind {
	if s.CacheLayers == nil {
		return s.periodKind(i)
	}
	for _, c := range s.CacheLayers {
		if c.Layer == i {
			return c.Kind
		}
	}
	return NoCache
}

// Layers lists the kind of every layer.
func (s *Shape) Layers() []LayerKind {
	out := make([]LayerKind, s.NumLayers)
	for i := range out {
		out[i] = s.Kind(i)
	}
	return out
}

func (s *Shape) count(k LayerKind) int {
	if s.CacheLayers == nil {
		n := 0
		for i := 0; i < s.NumLayers; i++ {
			if s.periodKind(i) == k {
				n++
			}
		}
		return n
	}
	n := 0
	for _, c := range s.CacheLayers {
		if c.Kind == k {
			n++
		}
	}
	return n
}

// NumAttentionLayers counts attention layers.
func (s *Shape) NumAttentionLayers() int { return s.count(Attention) }

// NumMambaLayers counts state layers.
func (s *Shape) NumMambaLayers() int { return s.count(Mamba) }

// DInner is the Mamba inner width (all ranks): expand × hidden for Mamba1,
// heads × head dim for Mamba2, 0 for other kinds.
func (s *Shape) DInner() int {
	switch s.StateKind() {
	case Mamba1:
		if s.Mixer.IntermediateSize > 0 { // MambaConfig's intermediate_size
			return s.Mixer.IntermediateSize
		}
		return s.MambaExpand * s.HiddenSize
	case Mamba2:
		return s.Mixer.IntermediateSize
	}
	return 0
}

// ConvStateBytes is the part of a state page before the indexed state
// (Mamba1: the conv window cache, (d_conv − 1) × d_inner).
func (s *Shape) ConvStateBytes() int64 {
	_, off, _ := s.IndexedState()
	return off
}

// SSMStateElems is the indexed state's element count (Mamba1: d_inner ×
// d_state), what one prefill write covers.
func (s *Shape) SSMStateElems() int64 {
	t, _, _ := s.IndexedState()
	return t.Elems()
}

// SSMStateBytes is SSMStateElems in bytes.
func (s *Shape) SSMStateBytes() int64 {
	t, _, _ := s.IndexedState()
	return t.Bytes()
}

// MambaPageBytes is the unpadded state page of one layer: the sum of its
// state tensors (MambaSpec.page_size_bytes without page_size_padded).
func (s *Shape) MambaPageBytes() int64 {
	var n int64
	for _, t := range s.StateTensors() {
		n += t.Bytes()
	}
	return n
}

// KVDType is the attention cache dtype: kv_cache_dtype, or the model's
// when "auto".
func (s *Shape) KVDType() string {
	if d := s.Cache.KVCacheDType; d != "" && d != "auto" {
		return d
	}
	return s.DType
}

// KVHeadsPerRank is vLLM's get_num_kv_heads: the KV heads one TP rank
// holds, at least one (replicated when there are fewer heads than ranks).
func (s *Shape) KVHeadsPerRank() int {
	return max(1, s.NumKVHeads/max(1, s.Cache.TensorParallelSize))
}

// KVBytesPerToken is one attention layer's cache for one token on one
// rank: K and V (FullAttentionSpec) or MLA's single latent vector
// (MLAAttentionSpec: kv_lora_rank + qk_rope_head_dim, not sharded).
func (s *Shape) KVBytesPerToken() int64 {
	if s.NumAttentionLayers() == 0 {
		return 0
	}
	b := int64(DTypeBytes(s.KVDType()))
	if s.MLA() {
		return int64(s.KVLoraRank+s.QKRopeHeadDim) * b
	}
	return 2 * int64(s.KVHeadsPerRank()) * int64(s.HeadDim) * b
}
