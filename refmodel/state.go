package refmodel

import (
	"math"

	"statesim/backend/mock"
	"statesim/model"
)

// stateW is one Mamba2, GDN, KDA, linear-attention or ShortConv mixer in
// float64 (docs/numeric-model.md §8), written token by token from the
// definitions: the delta rule as S ← S·diag(e^g)·(I − β k kᵀ) + β v kᵀ,
// Mamba2 as h ← e^(Δt·A)·h + Δt·x·Bᵀ with y = h·C + D·x.
type stateW struct {
	d       mock.Dims
	inProj  [][]float64
	convW   [][]float64
	convB   []float64
	dtBias  []float64
	a, dsk  []float64
	norm    []float64
	outProj [][]float64
}

func newStateW(w *mock.StateWeights, H int) *stateW {
	d := w.Dims
	out := d.Heads * d.DV
	if d.Kind == model.ShortConv {
		out = d.ConvDim
	}
	s := &stateW{d: d, inProj: matrix(w.InProj, d.InDim, H), convB: vector(w.ConvB), dtBias: vector(w.DTBias),
		a: vector(w.A), dsk: vector(w.D), norm: vector(w.Norm), outProj: matrix(w.OutProj, H, out)}
	if d.ConvDim > 0 && d.ConvK > 1 {
		s.convW = matrix(w.ConvW, d.ConvDim, d.ConvK)
	}
	return s
}

// stateCache is one layer's conv window (oldest first) and state
// S[head][dv][dk].
type stateCache struct {
	win [][]float64
	S   [][][]float64
}

func newStateCache(d *mock.Dims) *stateCache {
	c := &stateCache{win: zeros(max(d.ConvK-1, 0), d.ConvDim)}
	for h := 0; h < d.Heads; h++ {
		c.S = append(c.S, zeros(d.DV, d.DK))
	}
	return c
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func unit(x []float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss+1e-6)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * inv
	}
	return out
}

func (w *stateW) step(c *stateCache, in []float64) []float64 {
	d := &w.d
	xin := mul(w.inProj, in)
	var cin []float64
	switch d.Kind {
	case model.Mamba2:
		di := d.Heads * d.DV
		cin = xin[di : di+d.ConvDim]
	case model.GatedDeltaNet, model.KDA:
		cin = xin[:d.ConvDim]
	case model.ShortConv:
		cin = make([]float64, d.ConvDim)
		for i := range cin {
			cin[i] = xin[i] * xin[2*d.ConvDim+i]
		}
	}
	conv := make([]float64, d.ConvDim)
	for ch := range conv {
		acc := w.convB[ch] + w.convW[ch][d.ConvK-1]*cin[ch]
		for k := 0; k < d.ConvK-1; k++ {
			acc += w.convW[ch][k] * c.win[k][ch]
		}
		if d.Kind == model.ShortConv {
			conv[ch] = acc
		} else {
			conv[ch] = silu(acc)
		}
	}
	if len(c.win) > 0 {
		c.win = append(c.win[1:], append([]float64(nil), cin...))
	}
	if d.Kind == model.ShortConv {
		y := make([]float64, d.ConvDim)
		for i := range y {
			y[i] = xin[d.ConvDim+i] * conv[i]
		}
		return mul(w.outProj, y)
	}
	hv := d.Heads * d.DV
	y := make([]float64, hv)
	for h := 0; h < d.Heads; h++ {
		var q, k, v, decay []float64
		beta := 1.0
		decay = make([]float64, d.DK)
		switch d.Kind {
		case model.Mamba2:
			di, gn := hv, d.Groups*d.DK
			g := h / (d.Heads / d.Groups)
			dt := softplus(xin[2*di+2*gn+h] + w.dtBias[h])
			k = conv[di+g*d.DK : di+(g+1)*d.DK]
			q = conv[di+gn+g*d.DK : di+gn+(g+1)*d.DK]
			v = make([]float64, d.DV)
			for p := range v {
				v[p] = dt * conv[h*d.DV+p]
			}
			for i := range decay {
				decay[i] = math.Exp(-w.a[h] * dt)
			}
		case model.GatedDeltaNet, model.KDA:
			kd := d.KHeads * d.DK
			kh := h / (d.Heads / d.KHeads)
			q = unit(conv[kh*d.DK : (kh+1)*d.DK])
			for i := range q {
				q[i] /= math.Sqrt(float64(d.DK))
			}
			k = unit(conv[kd+kh*d.DK : kd+(kh+1)*d.DK])
			v = conv[2*kd+h*d.DV : 2*kd+(h+1)*d.DV]
			rest := xin[2*kd+2*hv:]
			beta = sigmoid(rest[h])
			for i := range decay {
				gi := h
				if d.PerChannelGate {
					gi = h*d.DK + i
				}
				decay[i] = math.Exp(-w.a[h] * softplus(rest[d.Heads+gi]+w.dtBias[gi]))
			}
		case model.LinearAttention:
			hk := d.Heads * d.DK
			q, k, v = make([]float64, d.DK), make([]float64, d.DK), make([]float64, d.DV)
			for i := range q {
				q[i] = silu(xin[h*d.DK+i]) / math.Sqrt(float64(d.DK))
				k[i] = silu(xin[hk+h*d.DK+i])
			}
			k = unit(k)
			for i := range v {
				v[i] = silu(xin[2*hk+h*d.DV+i])
			}
			for i := range decay {
				decay[i] = math.Exp(-w.a[h])
			}
		}
		S := c.S[h]
		for p := range S {
			for i := range S[p] {
				S[p][i] *= decay[i]
			}
			pred := 0.0
			if d.Delta {
				pred = dotf(S[p], k)
			}
			for i := range S[p] {
				if d.Delta {
					S[p][i] += beta * (v[p] - pred) * k[i]
				} else {
					S[p][i] += v[p] * k[i]
				}
			}
			y[h*d.DV+p] = dotf(S[p], q)
		}
	}
	switch d.Kind {
	case model.Mamba2:
		di := hv
		for i := range y {
			y[i] = (y[i] + w.dsk[i/d.DV]*conv[i]) * silu(xin[i])
		}
		return mul(w.outProj, rmsNorm(y[:di], w.norm))
	default:
		z := xin[2*d.KHeads*d.DK+hv:]
		if d.Kind == model.LinearAttention {
			z = xin[3*d.Heads*d.DK:]
		}
		for h := 0; h < d.Heads; h++ {
			n := rmsNorm(y[h*d.DV:(h+1)*d.DV], w.norm)
			for p := range n {
				y[h*d.DV+p] = n[p] * silu(z[h*d.DV+p])
			}
		}
	}
	return mul(w.outProj, y)
}
