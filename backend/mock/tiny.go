package mock

import (
	"fmt"

	"statesim/model"
)

// Tiny widths of the numeric stand-in for a shape the mock cannot compute
// at full size (docs/numeric-model.md §8): the scheduler, the pool and the
// block tables keep the real shape's layout; the mock computes a model of
// the same layer pattern and state kind with these widths, over pages of
// its own size, one per block id.
const (
	tinyHidden   = 32
	tinyVocab    = 256
	tinyHeads    = 4 // attention heads; state heads of Mamba2, GDN values, KDA, linear attention
	tinyKVHeads  = 2
	tinyHeadDim  = 8
	tinyKHeads   = 2 // GDN key heads
	tinyDState   = 8
	tinyConv     = 4
	tinyShortCnv = 3 // LFM2's conv_L_cache is 3
	// TinyChunk is the chunk of the tiny kinds' chunked prefill (Mamba2's
	// SSD scan, the chunked gated delta rule): small, so a short prompt
	// spans several chunks.
	TinyChunk = 8
)

// Exact reports whether the mock computes shape s itself, byte for byte
// over the real page layout (float32 Mamba1 or attention-only shapes, as
// tiny-hybrid): only then can a wrapped 32-bit state index land mid-page.
func Exact(s *model.Shape) bool {
	return s.StateKind() == model.Mamba1 && model.DTypeBytes(s.DType) == 4 && model.DTypeBytes(s.SSMStateDType) == 4 &&
		!s.MLA() && s.Cache.TensorParallelSize <= 1
}

// TinyShape is the mock's stand-in for s: the same cache entries (layer
// numbers, kinds, registration order) and state kind, float32, with the
// tiny widths above. MLA attention becomes plain GQA: the mock's attention
// only has to keep each position's keys in its own block.
func TinyShape(s *model.Shape) model.Shape {
	t := model.Shape{
		Name: s.Name + " (mock's tiny stand-in)", NumLayers: s.NumLayers,
		AttnLayerPeriod: s.AttnLayerPeriod, AttnLayerOffset: s.AttnLayerOffset,
		HiddenSize: tinyHidden, VocabSize: tinyVocab,
		NumAttentionHeads: tinyHeads, NumKVHeads: tinyKVHeads, HeadDim: tinyHeadDim,
		DType: "float32", SSMStateDType: "float32",
		CacheLayers: s.CacheLayers, ModelType: s.ModelType,
		MambaChunkSize: TinyChunk,
	}
	switch k := s.StateKind(); k {
	case model.Mamba1:
		t.MambaExpand, t.MambaDState, t.MambaDConv = 2, tinyDState, tinyConv
	case model.Mamba2:
		t.Mixer = model.Mixer{Kind: k, IntermediateSize: tinyHeads * tinyHeadDim, NumHeads: tinyHeads, HeadDim: tinyHeadDim,
			NGroups: 1, StateSize: tinyDState, ConvKernel: tinyConv}
	case model.GatedDeltaNet:
		t.Mixer = model.Mixer{Kind: k, NumKHeads: tinyKHeads, HeadKDim: tinyHeadDim, NumVHeads: tinyHeads, HeadVDim: tinyHeadDim, ConvKernel: tinyConv}
	case model.KDA:
		t.Mixer = model.Mixer{Kind: k, NumHeads: tinyHeads, HeadDim: tinyHeadDim, NumKHeads: tinyHeads, HeadKDim: tinyHeadDim, ConvKernel: tinyConv}
	case model.LinearAttention:
		t.Mixer = model.Mixer{Kind: k, NumHeads: tinyHeads, HeadDim: tinyHeadDim}
	case model.ShortConv:
		t.Mixer = model.Mixer{Kind: k, IntermediateSize: tinyHidden, ConvKernel: tinyShortCnv}
	}
	return t
}

// Dims are a state layer's widths as the mock computes them: the conv
// channels and window, and the recurrent state [heads][dv][dk] (vLLM's
// temporal state order: Mamba2 (heads, head_dim, state_size), GDN
// (num_v_heads, head_v_dim, head_k_dim), KDA and linear attention
// (heads, head_dim, head_dim)).
type Dims struct {
	Kind            model.StateKind
	ConvDim, ConvK  int // channels; kernel width (the window holds ConvK − 1)
	Heads, DK, DV   int // recurrent state; 0 heads: none (ShortConv)
	KHeads          int // GDN key heads (a value head h reads key head h/(Heads/KHeads))
	Groups          int // Mamba2 n_groups
	Delta           bool
	PerChannelGate  bool // KDA: a decay per key channel
	GateDim         int  // gate values per token
	InDim           int  // in_proj rows
	SpecConvColumns bool // the conv state has K − 1 + num_spec columns (mamba_utils.py num_spec)
}

// DimsOf is the state layer widths of a shape the mock computes (Mamba1
// included, for its page layout).
func DimsOf(s *model.Shape) (Dims, error) {
	m := &s.Mixer
	switch k := s.StateKind(); k {
	case model.Mamba1:
		di := s.DInner()
		return Dims{Kind: k, ConvDim: di, ConvK: s.MambaDConv, Heads: 1, DK: s.MambaDState, DV: di}, nil
	case model.Mamba2:
		di, gn := m.IntermediateSize, m.NGroups*m.StateSize
		if m.NumHeads*m.HeadDim != di || m.NGroups < 1 || m.NumHeads%m.NGroups != 0 {
			return Dims{}, fmt.Errorf("mock: Mamba2 widths %d heads × %d ≠ d_inner %d, or %d groups", m.NumHeads, m.HeadDim, di, m.NGroups)
		}
		return Dims{Kind: k, ConvDim: di + 2*gn, ConvK: m.ConvKernel, Heads: m.NumHeads, DK: m.StateSize, DV: m.HeadDim,
			Groups: m.NGroups, GateDim: m.NumHeads, InDim: 2*di + 2*gn + m.NumHeads, SpecConvColumns: true}, nil
	case model.GatedDeltaNet:
		if m.NumVHeads%m.NumKHeads != 0 {
			return Dims{}, fmt.Errorf("mock: GDN value heads %d not a multiple of key heads %d", m.NumVHeads, m.NumKHeads)
		}
		kd, vd := m.NumKHeads*m.HeadKDim, m.NumVHeads*m.HeadVDim
		return Dims{Kind: k, ConvDim: 2*kd + vd, ConvK: m.ConvKernel, Heads: m.NumVHeads, DK: m.HeadKDim, DV: m.HeadVDim,
			KHeads: m.NumKHeads, Delta: true, GateDim: m.NumVHeads, InDim: 2*kd + 2*vd + 2*m.NumVHeads, SpecConvColumns: true}, nil
	case model.KDA:
		hd := m.NumHeads * m.HeadDim
		return Dims{Kind: k, ConvDim: 3 * hd, ConvK: m.ConvKernel, Heads: m.NumHeads, DK: m.HeadDim, DV: m.HeadDim,
			KHeads: m.NumHeads, Delta: true, PerChannelGate: true, GateDim: hd, InDim: 4*hd + m.NumHeads + hd, SpecConvColumns: true}, nil
	case model.LinearAttention:
		hd := m.NumHeads * m.HeadDim
		return Dims{Kind: k, ConvK: 1, Heads: m.NumHeads, DK: m.HeadDim, DV: m.HeadDim, KHeads: m.NumHeads, InDim: 4 * hd}, nil
	case model.ShortConv:
		return Dims{Kind: k, ConvDim: m.IntermediateSize, ConvK: m.ConvKernel, InDim: 3 * m.IntermediateSize}, nil
	}
	return Dims{}, fmt.Errorf("mock: state kind %q has no arithmetic", s.StateKind())
}

// ConvLen is the conv state's columns with numSpec speculative tokens.
func (d *Dims) ConvLen(numSpec int) int {
	if d.ConvK <= 1 {
		return 0
	}
	if d.SpecConvColumns {
		return d.ConvK - 1 + numSpec
	}
	return d.ConvK - 1
}

// StateElems is the recurrent state's size.
func (d *Dims) StateElems() int { return d.Heads * d.DV * d.DK }
