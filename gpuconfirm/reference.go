package gpuconfirm

import (
	"fmt"
	"math"

	"statesim/backend/mock"
	"statesim/model"
	"statesim/statecache"
)

// BugBShape is Jamba Reasoning 3B's Mamba shape (d_inner 5120, d_state 16)
// with fp32 state and conv window, as the cuda backend caches them.
func BugBShape() (model.Shape, error) {
	s, err := model.Preset("jamba-reasoning-3b")
	if err != nil {
		return s, err
	}
	s.DType, s.SSMStateDType = "float32", "float32"
	return s, nil
}

// scanInputs are one prefill row's inputs to selective_scan_fwd, drawn
// from a fixed stream: per token the conv output xc [di], the dt
// projection dtp [di] (before bias and softplus), the B/C projections dbc
// [R+2N] (dt rank R columns first) and the gate half of xz [2di]; per
// layer A [di×N] (−(n+1), as Mamba's S4D-real init), D and the dt bias.
type scanInputs struct {
	T, di, N, R                  int
	xc, dtp, dbc, xz, A, D, bias []float32
}

func drawScan(src *splitmix, T, di, N, R int) *scanInputs {
	in := &scanInputs{T: T, di: di, N: N, R: R}
	in.xc, in.dtp, in.dbc, in.xz = src.floats(T*di, -1, 1), src.floats(T*di, -3, 0), src.floats(T*(R+2*N), -1, 1), src.floats(T*2*di, -2, 2)
	in.A, in.D, in.bias = make([]float32, di*N), src.floats(di, 0, 0.2), src.floats(di, -4, -2)
	for d := 0; d < di; d++ {
		for n := 0; n < N; n++ {
			in.A[d*N+n] = -float32(n + 1)
		}
	}
	return in
}

// dt is token t's softplus(dt + bias) in channel d, as the kernels
// compute it (identity above 20).
func (in *scanInputs) dt(t, d int) float64 {
	x := float64(in.dtp[t*in.di+d] + in.bias[d])
	if x <= 20 {
		return math.Log1p(math.Exp(x))
	}
	return x
}

// finalState is the state after the scan over all T tokens from zero, in
// float64: h ← exp(A·dt)·h + B·dt·x.
func (in *scanInputs) finalState() []float64 {
	di, N, R := in.di, in.N, in.R
	h := make([]float64, di*N)
	for d := 0; d < di; d++ {
		hd := h[d*N : d*N+N]
		for t := 0; t < in.T; t++ {
			dt, u := in.dt(t, d), float64(in.xc[t*di+d])
			for n := 0; n < N; n++ {
				hd[n] = math.Exp(float64(in.A[d*N+n])*dt)*hd[n] + float64(in.dbc[t*(R+2*N)+R+n])*dt*u
			}
		}
	}
	return h
}

// decode is the output of one state-update step with token 0's inputs
// from state h0: y = (C·h + D·x)·silu(z).
func (in *scanInputs) decode(h0 []float64) []float64 {
	di, N, R := in.di, in.N, in.R
	out := make([]float64, di)
	for d := 0; d < di; d++ {
		dt, u := in.dt(0, d), float64(in.xc[d])
		var acc float64
		for n := 0; n < N; n++ {
			h := math.Exp(float64(in.A[d*N+n])*dt)*h0[d*N+n] + float64(in.dbc[R+n])*dt*u
			acc += float64(in.dbc[R+N+n]) * h
		}
		z := float64(in.xz[di+d])
		out[d] = (acc + float64(in.D[d])*u) * z / (1 + math.Exp(-z))
	}
	return out
}

// relErr is ‖got − want‖ / ‖want‖, +Inf when got holds a NaN.
func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i, g := range got {
		if g != g {
			return math.Inf(1)
		}
		num += (float64(g) - want[i]) * (float64(g) - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}

// splitmix is SplitMix64: the experiment's inputs from a fixed seed.
type splitmix struct{ s uint64 }

func (x *splitmix) floats(n int, lo, hi float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		x.s += 0x9e3779b97f4a7c15
		z := x.s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		out[i] = lo + (hi-lo)*float32(z>>40)/(1<<24)
	}
	return out
}

// bugBPlan is where the bug-B experiment writes: the state geometry of
// shape's pages and the first slot whose 32-bit address wraps past the
// null block, with the blocks its write lands in under bits.
type bugBPlan struct {
	geo mock.Geometry
	ix  statecache.StateIndex // the kernel's, at bits
	BugB
}

// planBugB picks the slot: the first at or past the wrap whose 32-bit
// write misses the null block. The write may straddle two pages; the
// first is the victim (the same block id whatever bits is).
func planBugB(shape model.Shape, bits uint, tokens int) (*bugBPlan, error) {
	layout := shape.Layout(16)
	geo, err := mock.NewGeometry(&shape, &layout)
	if err != nil {
		return nil, err
	}
	ix := statecache.StateIndex{Stride: geo.PageElems, Bits: 32, Elems: geo.StateElems, Offset: geo.StateOffset}
	first := ix.FirstWrappingSlot()
	slot, victim, victimEnd := int32(-1), int32(-1), int32(-1)
	for s := first; s < first+4096; s++ {
		f, l, wrapped := ix.Span(int32(s))
		if wrapped && f > statecache.NullBlock {
			slot, victim, victimEnd = int32(s), f, l
			break
		}
	}
	if slot < 0 {
		return nil, fmt.Errorf("bug B: no slot in [%d, %d) wraps past the null block", first, first+4096)
	}
	ix.Bits = bits
	pred, predEnd, _ := ix.Span(slot)
	p := &bugBPlan{geo: geo, ix: ix, BugB: BugB{Bits: bits, Model: shape.Name, DInner: shape.DInner(), DState: shape.MambaDState,
		StrideElems: geo.PageElems, StateOffset: geo.StateOffset, NumSlots: int(slot) + 1, Slot: slot, FirstWrappingSlot: first,
		Predicted: pred, PredictedLast: predEnd, Victim: victim, VictimLast: victimEnd, Tokens: tokens}}
	p.BufferGiB = float64(4*p.elems()) / (1 << 30)
	return p, nil
}

// elems is the state buffer's size: every page up to the slot's.
func (p *bugBPlan) elems() int64 { return int64(p.NumSlots) * p.geo.PageElems }

// stateAt is the element offset of block's state in the buffer.
func (p *bugBPlan) stateAt(block int32) int64 {
	return int64(block)*p.geo.PageElems + p.geo.StateOffset
}
