package model

import (
	"fmt"
	"sort"
)

// LayerKind is the kind of one decoder layer.
type LayerKind uint8

const (
	Attention LayerKind = iota
	Mamba
)

func (k LayerKind) String() string {
	if k == Attention {
		return "attention"
	}
	return "mamba"
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

	// DType of activations, KV cache and conv state; SSMStateDType of the
	// SSM state (float32 in the incident).
	DType         string `yaml:"dtype" json:"dtype"`
	SSMStateDType string `yaml:"ssm_state_dtype" json:"ssm_state_dtype"`
	// WeightsGiB is the memory the weights take on the device.
	WeightsGiB float64 `yaml:"weights_gib" json:"weights_gib"`
}

// DTypeBytes is the size of one element of a named dtype, or 0 if unknown.
func DTypeBytes(name string) int {
	switch name {
	case "float32", "fp32":
		return 4
	case "bfloat16", "float16", "bf16", "fp16":
		return 2
	case "fp8", "float8":
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
	if s.AttnLayerPeriod > 0 && (s.AttnLayerOffset < 0 || s.AttnLayerOffset >= s.AttnLayerPeriod) {
		return fmt.Errorf("attn_layer_offset: must be in [0, attn_layer_period), got %d", s.AttnLayerOffset)
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
		for _, f := range []struct {
			n string
			v int
		}{{"mamba_expand", s.MambaExpand}, {"mamba_d_state", s.MambaDState}, {"mamba_d_conv", s.MambaDConv}} {
			if err := pos(f.n, f.v); err != nil {
				return err
			}
		}
	}
	if s.NumAttentionLayers() > 0 {
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
	if DTypeBytes(s.DType) == 0 {
		return fmt.Errorf("dtype: unknown %q (want bfloat16, float16, float32 or fp8)", s.DType)
	}
	if DTypeBytes(s.SSMStateDType) == 0 {
		return fmt.Errorf("ssm_state_dtype: unknown %q (want float32, bfloat16 or float16)", s.SSMStateDType)
	}
	if s.WeightsGiB < 0 {
		return fmt.Errorf("weights_gib: must be >= 0, got %g", s.WeightsGiB)
	}
	return nil
}

// Kind of layer i.
func (s *Shape) Kind(i int) LayerKind {
	if s.AttnLayerPeriod > 0 && i%s.AttnLayerPeriod == s.AttnLayerOffset {
		return Attention
	}
	return Mamba
}

// Layers lists the kind of every layer.
func (s *Shape) Layers() []LayerKind {
	out := make([]LayerKind, s.NumLayers)
	for i := range out {
		out[i] = s.Kind(i)
	}
	return out
}

// NumAttentionLayers counts attention layers.
func (s *Shape) NumAttentionLayers() int {
	n := 0
	for i := 0; i < s.NumLayers; i++ {
		if s.Kind(i) == Attention {
			n++
		}
	}
	return n
}

// NumMambaLayers counts Mamba layers.
func (s *Shape) NumMambaLayers() int { return s.NumLayers - s.NumAttentionLayers() }

// DInner is the Mamba inner width, expand × hidden.
func (s *Shape) DInner() int { return s.MambaExpand * s.HiddenSize }

// ConvStateBytes is one layer's conv window cache: (d_conv − 1) × d_inner.
func (s *Shape) ConvStateBytes() int64 {
	return int64(s.MambaDConv-1) * int64(s.DInner()) * int64(DTypeBytes(s.DType))
}

// SSMStateElems is one layer's SSM state: d_inner × d_state elements.
func (s *Shape) SSMStateElems() int64 { return int64(s.DInner()) * int64(s.MambaDState) }

// SSMStateBytes is SSMStateElems in bytes of SSMStateDType.
func (s *Shape) SSMStateBytes() int64 { return s.SSMStateElems() * int64(DTypeBytes(s.SSMStateDType)) }

// MambaPageBytes is the unpadded Mamba page: conv state + SSM state of one layer.
func (s *Shape) MambaPageBytes() int64 {
	if s.NumMambaLayers() == 0 {
		return 0
	}
	return s.ConvStateBytes() + s.SSMStateBytes()
}

// KVBytesPerToken is one attention layer's K and V for one token.
func (s *Shape) KVBytesPerToken() int64 {
	if s.NumAttentionLayers() == 0 {
		return 0
	}
	return 2 * int64(s.NumKVHeads) * int64(s.HeadDim) * int64(DTypeBytes(s.DType))
}

// Group is one KV cache group: layers of one kind that share block tables.
// Each raw cache tensor is shared by one layer of every group.
type Group struct {
	Kind   LayerKind `json:"kind"`
	Layers []int     `json:"layers"`
}

// Layout is the cache layout vLLM derives for a shape and a requested block
// size (vllm/v1/core/kv_cache_utils.py and the hybrid config update).
type Layout struct {
	// BlockSize is the attention block size in tokens after the hybrid
	// adjustment (raised until an attention page holds a Mamba page).
	BlockSize int `json:"block_size"`
	// PageBytes is the unified page size every group's block occupies in
	// one raw tensor.
	PageBytes int64 `json:"page_bytes"`
	// GroupSize is the number of layers per group, which is also the
	// number of raw tensors a block spans.
	GroupSize int     `json:"group_size"`
	Groups    []Group `json:"groups"`
	// StateStrideElems is the distance, in SSM-state elements, between
	// consecutive slots of one layer's state view: the stride the prefill
	// kernel multiplies the cache index by.
	StateStrideElems int64 `json:"state_stride_elems"`
}

// NumAttnGroups and NumMambaGroups count groups by kind.
func (l *Layout) NumAttnGroups() int  { return l.count(Attention) }
func (l *Layout) NumMambaGroups() int { return l.count(Mamba) }

func (l *Layout) count(k LayerKind) int {
	n := 0
	for _, g := range l.Groups {
		if g.Kind == k {
			n++
		}
	}
	return n
}

// BlockBytes is the device memory one block id costs across raw tensors.
func (l *Layout) BlockBytes() int64 { return l.PageBytes * int64(l.GroupSize) }

// attnBlockAlign is the multiple vLLM rounds a raised attention block size to.
const attnBlockAlign = 16

// Layout computes the cache layout for a requested attention block size.
func (s *Shape) Layout(blockSize int) Layout {
	var attn, mamba []int
	for i := 0; i < s.NumLayers; i++ {
		if s.Kind(i) == Attention {
			attn = append(attn, i)
		} else {
			mamba = append(mamba, i)
		}
	}
	l := Layout{BlockSize: blockSize}
	mp := s.MambaPageBytes()
	perTok := s.KVBytesPerToken()
	if len(attn) > 0 && len(mamba) > 0 && int64(blockSize)*perTok < mp {
		// vLLM raises the attention block size of hybrid models so that
		// one attention page is at least one Mamba page.
		bs := (mp + perTok - 1) / perTok
		bs = (bs + attnBlockAlign - 1) / attnBlockAlign * attnBlockAlign
		l.BlockSize = int(bs)
	}
	l.PageBytes = max(int64(l.BlockSize)*perTok, mp)

	// Group size: the smallest per-kind layer count, or the largest when
	// the two are close (less padding), as vLLM's uniform-page grouping.
	types := [][]int{}
	kinds := []LayerKind{}
	if len(attn) > 0 {
		types, kinds = append(types, attn), append(kinds, Attention)
	}
	if len(mamba) > 0 {
		types, kinds = append(types, mamba), append(kinds, Mamba)
	}
	minN, maxN := s.NumLayers, 0
	for _, t := range types {
		minN, maxN = min(minN, len(t)), max(maxN, len(t))
	}
	gs := minN
	if float64(maxN) < 1.25*float64(minN) {
		gs = maxN
	}
	l.GroupSize = gs
	for ti, t := range types {
		for i := 0; i < len(t); i += gs {
			l.Groups = append(l.Groups, Group{Kind: kinds[ti], Layers: t[i:min(i+gs, len(t))]})
		}
	}
	sort.SliceStable(l.Groups, func(i, j int) bool { return l.Groups[i].Layers[0] < l.Groups[j].Layers[0] })
	if mp > 0 {
		l.StateStrideElems = l.PageBytes / int64(DTypeBytes(s.SSMStateDType))
	}
	return l
}
