package mock

import (
	"math"
	"math/rand/v2"
	"testing"

	"statesim/model"
)

// The chunked form and the token-by-token recurrence compute the same
// state and outputs, to float32 rounding, for each kind of gate and with
// and without the delta rule, from a nonzero initial state, over a length
// that spans a partial chunk.
func TestChunkMatchesRecurrence(t *testing.T) {
	for _, c := range []struct {
		name         string
		delta, perCh bool
		gscale       float64
	}{{"mamba2", false, false, 0.5}, {"gdn", true, false, 0.5}, {"kda", true, true, 0.5}, {"linear-slow", false, false, 0.004}} {
		t.Run(c.name, func(t *testing.T) {
			d := Dims{Kind: model.GatedDeltaNet, Heads: 2, DK: 8, DV: 8, Delta: c.delta, PerChannelGate: c.perCh}
			rng := rand.New(rand.NewPCG(1, 2))
			n := 21
			hk, hv := d.Heads*d.DK, d.Heads*d.DV
			var a, b net
			for _, m := range []*net{&a, &b} {
				m.st.q, m.st.k, m.st.gate = make([]float32, n*hk), make([]float32, n*hk), make([]float32, n*hk)
				m.st.v, m.st.o, m.st.beta = make([]float32, n*hv), make([]float32, n*hv), make([]float32, n*d.Heads)
			}
			fill := func(x []float32, lo, hi float64) {
				for i := range x {
					x[i] = float32(lo + (hi-lo)*rng.Float64())
				}
			}
			fill(a.st.q, -1, 1)
			fill(a.st.k, -0.4, 0.4)
			fill(a.st.v, -1, 1)
			fill(a.st.beta, 0, 1)
			for i := range a.st.gate {
				a.st.gate[i] = -float32(c.gscale * rng.Float64())
				if !c.perCh && i%d.DK != 0 {
					a.st.gate[i] = a.st.gate[i-i%d.DK]
				}
			}
			copy(b.st.q, a.st.q)
			copy(b.st.k, a.st.k)
			copy(b.st.v, a.st.v)
			copy(b.st.beta, a.st.beta)
			copy(b.st.gate, a.st.gate)
			S0 := make([]float32, d.StateElems())
			fill(S0, -1, 1)
			Sa, Sb := append([]float32(nil), S0...), append([]float32(nil), S0...)
			for i := 0; i < n; i++ {
				a.recurStep(&d, Sa, i)
			}
			for t0 := 0; t0 < n; t0 += TinyChunk {
				b.chunk(&d, Sb, t0, min(t0+TinyChunk, n))
			}
			worst := 0.0
			for i := range Sa {
				worst = max(worst, math.Abs(float64(Sa[i]-Sb[i]))/(1+math.Abs(float64(Sa[i]))))
			}
			for i := range a.st.o {
				worst = max(worst, math.Abs(float64(a.st.o[i]-b.st.o[i]))/(1+math.Abs(float64(a.st.o[i]))))
			}
			if worst > 1e-5 {
				t.Errorf("chunked and recurrent differ by %.3g (relative)", worst)
			}
		})
	}
}
