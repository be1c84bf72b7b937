package mock

import (
	"math"

	"statesim/model"
)

// StateWeights are one Mamba2, Gated DeltaNet, KDA, linear-attention or
// ShortConv mixer (docs/numeric-model.md §8), row-major [out][in]. In-proj
// rows by kind:
//
//	Mamba2:           z [d_inner], x [d_inner], B [G·N], C [G·N], dt [heads]
//	GDN:              q [Hk·dk], k [Hk·dk], v [Hv·dv], z [Hv·dv], b [Hv], a [Hv]
//	KDA:              q, k, v, z [H·d each], b [H], f [H·d] (a gate per key channel)
//	linear attention: q, k, v, z [H·d each]
//	ShortConv:        B, C, x [dim each]
//
// The conv input is x‖B‖C (Mamba2) or q‖k‖v (GDN, KDA), contiguous in
// in_proj as in vLLM's models, and B⊙x for ShortConv.
type StateWeights struct {
	Dims    Dims
	InProj  []float32 // [InDim][hidden]
	ConvW   []float32 // [ConvDim][ConvK]: tap ConvK−1 multiplies the current input
	ConvB   []float32 // [ConvDim]; zero for ShortConv (LFM2's conv has no bias)
	DTBias  []float32 // [GateDim]
	A       []float32 // [Heads] decay rate > 0: log decay −A·softplus(dt + bias); linear attention −A
	D       []float32 // [Heads] Mamba2's skip
	Norm    []float32 // RMSNorm gain: [d_inner] for Mamba2, [dv] per head otherwise
	OutProj []float32 // [hidden][Heads·DV] ([hidden][ConvDim] for ShortConv)
}

// newStateWeights draws one non-Mamba1 state mixer (after the layer's
// Norm, in the order the fields are listed).
func newStateWeights(src uniformSource, s *model.Shape) (*StateWeights, error) {
	d, err := DimsOf(s)
	if err != nil {
		return nil, err
	}
	H := s.HiddenSize
	w := &StateWeights{Dims: d}
	seg := func(rows int, gain float64) { w.InProj = append(w.InProj, src.linear(rows, H, gain)...) }
	switch d.Kind {
	case model.Mamba2:
		di, gn := d.Heads*d.DV, d.Groups*d.DK
		seg(2*di, 1)
		seg(2*gn, BCGain)
		seg(d.Heads, 1)
	default:
		seg(d.InDim, 1)
	}
	if d.ConvDim > 0 && d.ConvK > 1 {
		w.ConvW = src.fill(d.ConvDim*d.ConvK, float32(1/math.Sqrt(float64(d.ConvK))))
		if d.Kind == model.ShortConv {
			w.ConvB = make([]float32, d.ConvDim)
		} else {
			w.ConvB = src.fill(d.ConvDim, float32(1/math.Sqrt(float64(d.ConvK))))
		}
	}
	if d.GateDim > 0 {
		w.DTBias = make([]float32, d.GateDim)
		for i := range w.DTBias {
			dt := max(DTMin*exp64(src.u53()*lnDTRatio), DTFloor)
			w.DTBias[i] = float32(dt + math.Log1p(-math.Expm1(-dt)-1))
		}
	}
	w.A = make([]float32, d.Heads)
	for h := range w.A {
		if d.Kind == model.LinearAttention {
			// MiniMax's per-head slopes 2^(−8(h+1)/H).
			w.A[h] = float32(math.Exp2(-8 * float64(h+1) / float64(d.Heads)))
		} else {
			w.A[h] = float32(h + 1) // A_log = log(h + 1)
		}
	}
	if d.Kind == model.Mamba2 {
		w.D = make([]float32, d.Heads)
		for h := range w.D {
			w.D[h] = DSkip
		}
		w.Norm = ones(d.Heads * d.DV)
	} else if d.Heads > 0 {
		w.Norm = ones(d.DV)
	}
	out := d.Heads * d.DV
	if d.Kind == model.ShortConv {
		out = d.ConvDim
	}
	w.OutProj = src.linear(H, out, MixerOutGain)
	return w, nil
}
