package mock

import (
	"fmt"

	"statesim/model"
	"statesim/statecache"
)

// Geometry says where every layer's cache lives in the raw tensors, in
// float32 elements (docs/numeric-model.md §3). vLLM's layout: GroupSize raw
// tensors of numBlocks pages each; layer Groups[g].Layers[t] lives in raw
// tensor t; block id b is page b of that tensor.
type Geometry struct {
	PageElems int64 // float32 elements per page: PageBytes / 4
	BlockSize int   // attention tokens per block
	// Mamba page: conv window [ConvElems] from element 0, SSM state
	// [StateElems] from StateOffset.
	ConvElems   int64
	StateOffset int64
	StateElems  int64
	// Attention page: K [KVElems] from element 0, V [KVElems] after it.
	KVElems int64
	// LayerTensor is each cache entry's raw tensor; LayerGroup the index
	// of its group among groups of its kind (Blocks.Mamba[g] or Blocks.Attn[g]).
	LayerTensor []int
	LayerGroup  []int
	NumTensors  int
	// Dims are the state layers' widths, ConvLen the conv state's columns.
	Dims    Dims
	ConvLen int
	// Tiny: the pages are the tiny stand-in's (TinyShape), not the
	// layout's bytes.
	Tiny bool
}

// NewGeometry derives the geometry of a float32 shape's layout, over the
// layout's own pages (exact mode).
func NewGeometry(s *model.Shape, l *model.Layout) (Geometry, error) {
	if err := checkShape(s); err != nil {
		return Geometry{}, err
	}
	if l.PageBytes%4 != 0 {
		return Geometry{}, fmt.Errorf("mock: page size %d bytes is not a whole number of float32s", l.PageBytes)
	}
	g := Geometry{PageElems: l.PageBytes / 4, BlockSize: l.BlockSize, NumTensors: l.GroupSize}
	if err := g.mapEntries(s, l); err != nil {
		return Geometry{}, err
	}
	if s.NumMambaLayers() > 0 {
		g.Dims, _ = DimsOf(s)
		g.ConvLen = s.MambaDConv - 1
		g.ConvElems = int64(s.MambaDConv-1) * int64(s.DInner())
		g.StateOffset = (s.ConvStateBytes() + 3) / 4
		g.StateElems = s.SSMStateElems()
		if g.StateOffset+g.StateElems > g.PageElems {
			return Geometry{}, fmt.Errorf("mock: Mamba state (%d elements at %d) overflows a %d-element page", g.StateElems, g.StateOffset, g.PageElems)
		}
		if l.StateStrideElems != g.PageElems {
			return Geometry{}, fmt.Errorf("mock: state stride %d elements differs from the %d-element page", l.StateStrideElems, g.PageElems)
		}
	}
	if s.NumAttentionLayers() > 0 {
		g.KVElems = int64(l.BlockSize) * int64(s.NumKVHeads) * int64(s.HeadDim)
		if 2*g.KVElems > g.PageElems {
			return Geometry{}, fmt.Errorf("mock: K/V of %d tokens (%d elements) overflow a %d-element page", l.BlockSize, 2*g.KVElems, g.PageElems)
		}
	}
	return g, nil
}

// newTinyGeometry lays out the tiny stand-in's caches over the real
// layout's block ids (tiny mode): one page per block id in each of the
// layout's GroupSize raw tensors, large enough for the tiny state (conv
// window of K − 1 + numSpec columns for the kinds whose vLLM conv state
// has them, then the recurrent state) and for block_size tokens of the tiny
// K/V. Block sharing between kinds is kept; byte offsets are the tiny
// model's own.
func newTinyGeometry(tiny *model.Shape, l *model.Layout, numSpec int) (Geometry, error) {
	if err := checkShape(tiny); err != nil {
		return Geometry{}, err
	}
	g := Geometry{BlockSize: l.BlockSize, NumTensors: l.GroupSize, Tiny: true}
	if err := g.mapEntries(tiny, l); err != nil {
		return Geometry{}, err
	}
	if tiny.NumMambaLayers() > 0 {
		d, err := DimsOf(tiny)
		if err != nil {
			return Geometry{}, err
		}
		g.Dims, g.ConvLen = d, d.ConvLen(numSpec)
		g.ConvElems = int64(g.ConvLen) * int64(d.ConvDim)
		g.StateOffset = g.ConvElems
		g.StateElems = int64(d.StateElems())
		g.PageElems = g.StateOffset + g.StateElems
	}
	if tiny.NumAttentionLayers() > 0 {
		g.KVElems = int64(l.BlockSize) * int64(tiny.NumKVHeads) * int64(tiny.HeadDim)
		g.PageElems = max(g.PageElems, 2*g.KVElems)
	}
	return g, nil
}

// mapEntries finds each cache entry's raw tensor and group.
func (g *Geometry) mapEntries(s *model.Shape, l *model.Layout) error {
	ents := s.Entries()
	g.LayerTensor, g.LayerGroup = make([]int, len(ents)), make([]int, len(ents))
	for i, e := range ents {
		g.LayerTensor[i] = -1
		na, nm := 0, 0
		for _, grp := range l.Groups {
			idx := &na
			if grp.Kind == model.Mamba {
				idx = &nm
			}
			if grp.Kind == e.Kind {
				for t, layer := range grp.Layers {
					if layer == e.Layer {
						g.LayerTensor[i], g.LayerGroup[i] = t, *idx
					}
				}
			}
			*idx++
		}
		if g.LayerTensor[i] < 0 {
			return fmt.Errorf("mock: layer %d (%s) is in no cache group", e.Layer, e.Kind)
		}
	}
	return nil
}

// StateIndex is the 64-bit (correct) index arithmetic for this geometry.
func (g *Geometry) StateIndex() statecache.StateIndex {
	return statecache.StateIndex{Stride: g.PageElems, Bits: 64, Elems: g.StateElems, Offset: g.StateOffset}
}
