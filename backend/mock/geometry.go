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
	// LayerTensor is each layer's raw tensor; LayerGroup the index of its
	// group among groups of its kind (Blocks.Mamba[g] or Blocks.Attn[g]).
	LayerTensor []int
	LayerGroup  []int
	NumTensors  int
}

// NewGeometry derives the geometry of a float32 shape's layout.
func NewGeometry(s *model.Shape, l *model.Layout) (Geometry, error) {
	if err := checkShape(s); err != nil {
		return Geometry{}, err
	}
	if l.PageBytes%4 != 0 {
		return Geometry{}, fmt.Errorf("mock: page size %d bytes is not a whole number of float32s", l.PageBytes)
	}
	g := Geometry{
		PageElems:   l.PageBytes / 4,
		BlockSize:   l.BlockSize,
		LayerTensor: make([]int, s.NumLayers),
		LayerGroup:  make([]int, s.NumLayers),
		NumTensors:  l.GroupSize,
	}
	for i := range g.LayerTensor {
		g.LayerTensor[i] = -1
	}
	na, nm := 0, 0
	for _, grp := range l.Groups {
		idx := &na
		if grp.Kind == model.Mamba {
			idx = &nm
		}
		for t, layer := range grp.Layers {
			if layer < 0 || layer >= s.NumLayers || s.Kind(layer) != grp.Kind {
				return Geometry{}, fmt.Errorf("mock: layout group lists layer %d as %s", layer, grp.Kind)
			}
			g.LayerTensor[layer], g.LayerGroup[layer] = t, *idx
		}
		*idx++
	}
	for i, t := range g.LayerTensor {
		if t < 0 {
			return Geometry{}, fmt.Errorf("mock: layer %d is in no cache group", i)
		}
	}
	if s.NumMambaLayers() > 0 {
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

// StateIndex is the 64-bit (correct) index arithmetic for this geometry.
func (g *Geometry) StateIndex() statecache.StateIndex {
	return statecache.StateIndex{Stride: g.PageElems, Bits: 64, Elems: g.StateElems, Offset: g.StateOffset}
}
