package mock

import (
	"fmt"
	"math"
	"math/rand/v2"

	"statesim/model"
)

// Initialisation constants (docs/numeric-model.md §2). They make the model
// "confident" and context-driven, as a trained model is and a random one is
// not: the embedding is small next to the mixer outputs, the SSM term
// (B and C scaled up) dominates the D skip, so the recurrent state carries
// most of what the next token depends on; and the final hidden state has
// unit RMS, so logits have a standard deviation of about LogitGain and the
// greedy token usually holds most of the probability mass. A corrupted state
// then yields confident garbage, not a flat distribution. Tuned on the
// imposter schedule (bug A): median healthy greedy log-prob ≈ −0.1, and the
// reference log-prob of an imposter's confidently chosen first token ≈ −13.
const (
	// WeightStream is the PCG stream (second seed word) of the weights.
	WeightStream uint64 = 0x6d6f636b5f77 // "mock_w"
	EmbedGain           = 0.1
	MixerOutGain        = 3.0 // out_proj of Mamba and o_proj of attention
	BCGain              = 5.0 // the B and C rows of x_proj
	DSkip               = 0.1 // D, the SSM skip
	LogitGain           = 12.0
	DTMin               = 0.001
	DTMax               = 0.1
	DTFloor             = 1e-4
	lnDTRatio           = 4.605170185988092 // ln(DTMax / DTMin) = ln 100
)

// MambaWeights are one Mamba1 mixer's parameters, row-major [out][in].
type MambaWeights struct {
	InProj  []float32 // [2·d_inner][hidden]: rows [0, d_inner) give x, the rest z
	ConvW   []float32 // [d_inner][d_conv]: tap d_conv−1 multiplies the current input
	ConvB   []float32 // [d_inner]
	XProj   []float32 // [dt_rank + 2·d_state][d_inner]: dt_raw, then B, then C
	DTProj  []float32 // [d_inner][dt_rank]
	DTBias  []float32 // [d_inner]
	A       []float32 // [d_inner][d_state] = −(n+1)
	D       []float32 // [d_inner] = DSkip
	OutProj []float32 // [hidden][d_inner]
}

// AttnWeights are one attention layer's projections, row-major [out][in].
type AttnWeights struct {
	Q []float32 // [heads·head_dim][hidden]
	K []float32 // [kv_heads·head_dim][hidden]
	V []float32 // [kv_heads·head_dim][hidden]
	O []float32 // [hidden][heads·head_dim]
}

// LayerWeights are one decoder layer: a pre-norm and its mixer.
type LayerWeights struct {
	Kind  model.LayerKind
	Norm  []float32 // RMSNorm gain [hidden] = 1
	Mamba *MambaWeights
	State *StateWeights // Mamba2, GDN, KDA, linear attention, ShortConv
	Attn  *AttnWeights
	Layer int // the decoder layer (cache entries of a parallel block share one)
}

// Weights are the whole model, exported so a device backend can upload the
// very same numbers.
type Weights struct {
	Shape     model.Shape
	DTRank    int
	Embed     []float32 // [vocab][hidden]
	Layers    []LayerWeights
	FinalNorm []float32 // [hidden] = 1
	LMHead    []float32 // [vocab][hidden]
}

// DTRank is Mamba's default dt_rank, ceil(hidden / 16).
func DTRank(s *model.Shape) int { return (s.HiddenSize + 15) / 16 }

// uniformSource draws the weights: 24-bit uniforms from PCG-DXSM.
type uniformSource struct{ p *rand.PCG }

// u24 is a uniform in [0, 1) with 24 random bits (exact in float32).
func (s uniformSource) u24() float32 { return float32(s.p.Uint64()>>40) * (1.0 / (1 << 24)) }

// u53 is a uniform in [0, 1) with 53 random bits.
func (s uniformSource) u53() float64 { return float64(s.p.Uint64()>>11) * (1.0 / (1 << 53)) }

// fill draws n weights uniform in [−a, a): a·(2u − 1).
func (s uniformSource) fill(n int, a float32) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = a * (2*s.u24() - 1)
	}
	return w
}

// linear draws a [out][in] matrix with unit output variance for unit-RMS
// input, times gain: bound sqrt(3/in)·gain.
func (s uniformSource) linear(out, in int, gain float64) []float32 {
	return s.fill(out*in, float32(math.Sqrt(3/float64(in))*gain))
}

func ones(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// NewWeights draws a model for shape from seed. The draw order is part of
// the model's definition (docs/numeric-model.md §2).
func NewWeights(shape model.Shape, seed uint64) (*Weights, error) {
	if err := checkShape(&shape); err != nil {
		return nil, err
	}
	src := uniformSource{rand.NewPCG(seed, WeightStream)}
	H, V := shape.HiddenSize, shape.VocabSize
	w := &Weights{Shape: shape, DTRank: DTRank(&shape)}
	w.Embed = src.fill(V*H, float32(math.Sqrt(3)*EmbedGain))
	di, n, k, r := shape.DInner(), shape.MambaDState, shape.MambaDConv, w.DTRank
	// One mixer per cache entry, in registration order (for the presets,
	// every layer in order).
	for _, e := range shape.Entries() {
		lw := LayerWeights{Kind: e.Kind, Norm: ones(H), Layer: e.Layer}
		if lw.Kind == model.Mamba && shape.StateKind() != model.Mamba1 {
			sw, err := newStateWeights(src, &shape)
			if err != nil {
				return nil, err
			}
			lw.State = sw
		} else if lw.Kind == model.Mamba {
			m := &MambaWeights{}
			m.InProj = src.linear(2*di, H, 1)
			m.ConvW = src.fill(di*k, float32(1/math.Sqrt(float64(k))))
			m.ConvB = src.fill(di, float32(1/math.Sqrt(float64(k))))
			m.XProj = src.linear(r, di, 1)
			// B and C rows: bound sqrt(3/d_inner)·BCGain.
			bc := src.linear(2*n, di, BCGain)
			m.XProj = append(m.XProj, bc...)
			m.DTProj = src.fill(di*r, float32(1/math.Sqrt(float64(r))))
			m.DTBias = make([]float32, di)
			for d := range m.DTBias {
				dt := max(DTMin*exp64(src.u53()*lnDTRatio), DTFloor)
				// Inverse softplus: softplus(bias) = dt.
				m.DTBias[d] = float32(dt + math.Log1p(-math.Expm1(-dt)-1))
			}
			m.A = make([]float32, di*n)
			for d := 0; d < di; d++ {
				for j := 0; j < n; j++ {
					m.A[d*n+j] = -float32(j + 1)
				}
			}
			m.D = make([]float32, di)
			for k := range m.D {
				m.D[k] = DSkip
			}
			m.OutProj = src.linear(H, di, MixerOutGain)
			lw.Mamba = m
		} else {
			nh, nkv, hd := shape.NumAttentionHeads, shape.NumKVHeads, shape.HeadDim
			lw.Attn = &AttnWeights{
				Q: src.linear(nh*hd, H, 1),
				K: src.linear(nkv*hd, H, 1),
				V: src.linear(nkv*hd, H, 1),
				O: src.linear(H, nh*hd, MixerOutGain),
			}
		}
		w.Layers = append(w.Layers, lw)
	}
	w.FinalNorm = ones(H)
	w.LMHead = src.linear(V, H, LogitGain)
	return w, nil
}

// checkShape accepts shapes the mock can compute with: valid, float32
// activations and state (the caches are float32 buffers).
func checkShape(s *model.Shape) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("mock: shape %q: %w", s.Name, err)
	}
	if model.DTypeBytes(s.DType) != 4 || model.DTypeBytes(s.SSMStateDType) != 4 {
		return fmt.Errorf("mock: shape %q: dtype %s / ssm_state_dtype %s: the mock backend computes and caches in float32 only (use tiny-hybrid or set both to float32)",
			s.Name, s.DType, s.SSMStateDType)
	}
	return nil
}
