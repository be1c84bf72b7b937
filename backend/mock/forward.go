package mock

import (
	"fmt"
	"math"

	"statesim/model"
	"statesim/statecache"
)

// rowJob is one row's forward: tokens at positions [Start, Start+len(Tokens))
// against caches addressed through its block table.
type rowJob struct {
	tensors []*cache
	attn    [][]int32 // attention blocks per attention group
	slots   []int32   // state slot per Mamba group
	// ssm is the prefill kernel's state-index arithmetic (possibly
	// wrapping); decode kernels always index in 64 bits.
	ssm statecache.StateIndex
	// Speculative decoding: specK state columns past the first per Mamba
	// group (BlockTable.Spec, K per group), and the column a decode reads
	// (num_accepted_tokens − 1); kernel, a stale graph replay's slots
	// (Row.KernelSlots), which a decode reads instead.
	specK  int
	spec   []int32
	acc    int
	kernel []int32
	// ops: the Mamba cache mode's copies before the kernels and the
	// boundary states they store (modes.go).
	ops rowOps
	// kern, when set, runs the state kinds' recurrence (Config.StateKernels;
	// the engine's rows only, never the reference); layer is the cache
	// entry being computed.
	kern    StateKernels
	layer   int
	decode  bool
	hasInit bool
	start   int
	tokens  []int32
	// logitsFrom: logits are produced for chunk offsets [logitsFrom, n).
	logitsFrom int
	onLogits   func(i int, logits []float32)
}

// net runs the model's arithmetic; it owns scratch buffers only.
type net struct {
	w   *Weights
	geo Geometry
	H   int

	hid, nrm, mix []float32 // [n][H]
	q             []float32 // [n][heads·head_dim]
	xz, xc, dbc   []float32
	win, h, y     []float32
	scores        []float32
	weights       []float32   // softmax numerators, as scores
	kr, vr        [][]float32 // attention: each position's K and V rows
	o, acc        []float32
	logits        []float32
	nrm1          []float32
	dt            []float32 // [d_inner]: the scan's Δt
	arg, ex       []float32 // [d_inner][d_state]: the scan's exponent arguments and values
	gate, sil     []float32 // [d_inner]: silu(z) and siluInto's scratch
	st            stateScratch
	chunked       bool // the state kinds' prefill runs the chunked form
}

func newNet(w *Weights, geo Geometry) *net {
	s := &w.Shape
	di := s.DInner()
	return &net{
		w: w, geo: geo, H: s.HiddenSize,
		xz:     make([]float32, 2*di),
		xc:     make([]float32, di),
		dbc:    make([]float32, w.DTRank+2*s.MambaDState),
		win:    make([]float32, max(s.MambaDConv-1, 0)*di),
		h:      make([]float32, di*s.MambaDState),
		y:      make([]float32, di),
		o:      make([]float32, s.NumAttentionHeads*s.HeadDim),
		acc:    make([]float32, s.HeadDim),
		logits: make([]float32, s.VocabSize),
		nrm1:   make([]float32, s.HiddenSize),
		dt:     make([]float32, di),
		arg:    make([]float32, di*s.MambaDState),
		ex:     make([]float32, di*s.MambaDState),
		gate:   make([]float32, di),
		sil:    make([]float32, di),
	}
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n, n+n/4)
	}
	return b[:n]
}

// forward runs one row through every layer, layer by layer, tokens in
// order within a layer.
func (m *net) forward(j *rowJob) error {
	s := &m.w.Shape
	H, n := m.H, len(j.tokens)
	m.hid, m.nrm, m.mix = grow(m.hid, n*H), grow(m.nrm, n*H), grow(m.mix, n*H)
	for i, t := range j.tokens {
		if t < 0 || int(t) >= s.VocabSize {
			return fmt.Errorf("mock: token %d outside vocabulary of %d", t, s.VocabSize)
		}
		copy(m.hid[i*H:(i+1)*H], m.w.Embed[int(t)*H:(int(t)+1)*H])
	}
	for li := range m.w.Layers {
		lw := &m.w.Layers[li]
		for i := 0; i < n; i++ {
			rmsNorm(m.nrm[i*H:(i+1)*H], m.hid[i*H:(i+1)*H], lw.Norm)
		}
		tensor := j.tensors[m.geo.LayerTensor[li]]
		g := m.geo.LayerGroup[li]
		j.layer = li
		var err error
		switch {
		case lw.State != nil:
			err = m.stateLayer(lw.State, tensor, g, j, n)
		case lw.Kind == model.Mamba:
			err = m.mamba(lw.Mamba, tensor, g, j, n)
		default:
			err = m.attention(lw.Attn, tensor, j.attn[g], j, n)
		}
		if err != nil {
			return fmt.Errorf("layer %d: %w", lw.Layer, err)
		}
		for k := range m.hid {
			m.hid[k] += m.mix[k]
		}
	}
	for i := j.logitsFrom; i < n; i++ {
		rmsNorm(m.nrm1, m.hid[i*H:(i+1)*H], m.w.FinalNorm)
		matVec(m.logits, m.w.LMHead, m.nrm1)
		j.onLogits(i, m.logits)
	}
	return nil
}

// mamba runs a Mamba1 mixer over the row's tokens. The decode kernel reads
// the conv window and SSM state from the slot (64-bit index) and writes
// them back; the prefill kernel starts from zeros unless hasInit, and
// addresses the SSM state through j.ssm (which may wrap), element by
// element, so a wrapped write really lands in another page. Under
// speculative decoding a decode reads the accepted column (or a stale
// graph replay's slot) and writes the conv window and state after its
// t-th token to column t; vLLM's Mamba1 conv state has no extra columns
// (mamba1_state_shape takes no num_spec), so each column keeps its own.
func (m *net) mamba(w *MambaWeights, tensor *cache, g int, j *rowJob, n int) error {
	geo := &m.geo
	if err := m.copyState(tensor, g, j, int(geo.ConvElems), 0, false); err != nil {
		return err
	}
	slot := j.slots[g]
	at := func(b int32, write bool) (conv, ssm []float32, err error) {
		if b < statecache.NullBlock || b == statecache.NullBlock && (j.kernel == nil || b != j.readSlot(g)) || int64(b) >= tensor.pages {
			return nil, nil, fmt.Errorf("mock: state slot %d outside a %d-element cache tensor", b, tensor.elems())
		}
		return tensor.span(b, 0, geo.ConvElems, write), tensor.span(b, geo.StateOffset, geo.StateElems, write), nil
	}
	conv, ssm, err := at(slot, true)
	if err != nil {
		return err
	}
	// wrapAt is where a prefill's SSM state lives when the index
	// arithmetic sends it off its own page (element index; −1: its own).
	wrapAt := int64(-1)
	if !j.decode {
		if wrapAt, err = m.ssmAt(j.ssm, slot, tensor); err != nil {
			return err
		}
	}
	switch {
	case j.decode:
		rc, rs, err := at(j.readSlot(g), false)
		if err != nil {
			return err
		}
		copy(m.win, rc)
		copy(m.h, rs)
	case j.hasInit:
		copy(m.win, conv)
		if wrapAt >= 0 {
			tensor.gather(m.h, wrapAt)
		} else {
			copy(m.h, ssm)
		}
	default:
		clear(m.win)
		clear(m.h)
	}
	H := m.H
	spec := j.decode && j.specK > 0
	for i := 0; i < n; i++ {
		m.mambaStep(w, m.nrm[i*H:(i+1)*H], m.mix[i*H:(i+1)*H])
		if len(j.ops.bounds) > 0 {
			if err := m.boundary(tensor, g, j, i, m.win, m.h); err != nil {
				return err
			}
		}
		if spec && i <= j.specK {
			cc, cs, err := at(j.column(g, i), true)
			if err != nil {
				return err
			}
			copy(cc, m.win)
			copy(cs, m.h)
		}
	}
	if !spec {
		copy(conv, m.win)
		if wrapAt >= 0 {
			tensor.scatter(wrapAt, m.h)
		} else {
			copy(ssm, m.h)
		}
	}
	return nil
}

// ssmAt is the element where the prefill kernel's index arithmetic ix puts
// slot's SSM state, or −1 for the slot's own page. Over the model's own
// pages that is the arithmetic's address itself, which may straddle two
// pages. The tiny stand-in's pages are not the model's bytes: a wrapped
// address that falls exactly on another page's state (the stride a power
// of two, as prefix caching's padded pages make it) lands on that page's
// tiny state, the bytes its next reader takes; any other would land
// where the tiny page holds nothing faithful, and is refused.
func (m *net) ssmAt(ix statecache.StateIndex, slot int32, tensor *cache) (int64, error) {
	geo := &m.geo
	base := ix.Base(slot)
	own := uint64(slot) * uint64(ix.Stride)
	if base == own {
		return -1, nil
	}
	e := geo.StateOffset + int64(base)
	if geo.Tiny {
		if base%uint64(ix.Stride) != 0 {
			return 0, fmt.Errorf("mock: the prefill's %d-bit state index for slot %d wraps to element %d, not a page boundary of the %d-element stride: the tiny stand-in's pages cannot place it (a float32 shape such as tiny-hybrid can)",
				ix.Bits, slot, base, ix.Stride)
		}
		e = int64(base/uint64(ix.Stride))*geo.PageElems + geo.StateOffset
	}
	if e < 0 || e+geo.StateElems > tensor.elems() {
		return 0, fmt.Errorf("mock: state slot %d (SSM at element %d) outside a %d-element cache tensor", slot, e, tensor.elems())
	}
	return e, nil
}

// mambaStep is one token of the Mamba1 mixer: the same function serves
// the decode kernel and every step of the prefill scan.
func (m *net) mambaStep(w *MambaWeights, in, out []float32) {
	s := &m.w.Shape
	di, N, K, R := s.DInner(), s.MambaDState, s.MambaDConv, m.w.DTRank
	matVec(m.xz, w.InProj, in)
	x, z := m.xz[:di], m.xz[di:2*di]
	xc := m.xc[:di]
	// Causal conv1d over (window, x); the window keeps the last K−1 raw
	// inputs, oldest first: win[k·d_inner + d].
	win := m.win
	convW, convB := w.ConvW[:di*K], w.ConvB[:di]
	for d := range xc {
		cw := convW[d*K : d*K+K]
		acc := convB[d]
		for k := 0; k < K-1; k++ {
			acc += float32(cw[k] * win[k*di+d])
		}
		acc += float32(cw[K-1] * x[d])
		xc[d] = acc
	}
	siluInto(xc, xc, m.sil)
	if K > 1 {
		copy(win, win[di:])
		copy(win[(K-2)*di:], x)
	}
	matVec(m.dbc, w.XProj, xc)
	dtRaw, B, C := m.dbc[:R], m.dbc[R:R+N], m.dbc[R+N:R+2*N]
	gate := m.gate[:di]
	siluInto(gate, z, m.sil)
	dtProj, dtBias, A, D, hAll, yAll := w.DTProj[:di*R], w.DTBias[:di], w.A[:di*N], w.D[:di], m.h[:di*N], m.y[:di]
	// Every channel's Δt, then every e^(A·Δt) in one pass, then the
	// state update channel by channel.
	dts, arg, ex := m.dt[:di], m.arg[:di*N], m.ex[:di*N]
	for d := range dts {
		dts[d] = dot(dtRaw, dtProj[d*R:d*R+R]) + dtBias[d]
	}
	softplusInto(dts, m.sil)
	for d, dt := range dts {
		a, ar := A[d*N:d*N+N], arg[d*N:d*N+N]
		ar = ar[:len(a)]
		for k, ak := range a {
			ar[k] = ak * dt
		}
	}
	expInto(ex, arg)
	B, C = B[:N], C[:N]
	for d := range yAll {
		u := xc[d]
		du := dts[d] * u
		h := hAll[d*N : d*N+N][:len(B)]
		e := ex[d*N : d*N+N][:len(B)]
		var y float32
		for k, ek := range e {
			hk := float32(ek*h[k]) + float32(B[k]*du)
			h[k] = hk
			y += float32(C[k] * hk)
		}
		y += float32(D[d] * u)
		yAll[d] = y * gate[d]
	}
	matVec(out, w.OutProj, yAll)
}

// attention writes the row's K/V into its paged cache, then lets each
// token attend to positions [0, its own] read back through the block
// table (causal; no positional rotation).
func (m *net) attention(w *AttnWeights, tensor *cache, blocks []int32, j *rowJob, n int) error {
	s := &m.w.Shape
	geo := &m.geo
	H, nh, nkv, hd := m.H, s.NumAttentionHeads, s.NumKVHeads, s.HeadDim
	qd, kvd := nh*hd, nkv*hd
	bs := geo.BlockSize
	end := j.start + n
	if need := (end + bs - 1) / bs; len(blocks) < need {
		return fmt.Errorf("mock: %d positions need %d attention blocks, the table holds %d", end, need, len(blocks))
	}
	for _, b := range blocks[:(end+bs-1)/bs] {
		if b <= statecache.NullBlock || int64(b) >= tensor.pages {
			return fmt.Errorf("mock: attention block %d outside a %d-element cache tensor", b, tensor.elems())
		}
	}
	// kr[p] and vr[p] are position p's K and V rows (every KV head,
	// head_dim apart): the row's own positions written here, the
	// earlier ones read back through the block table.
	m.kr, m.vr = growRows(m.kr, end), growRows(m.vr, end)
	for p := 0; p < end; p++ {
		b, off := blocks[p/bs], int64(p%bs)*int64(kvd)
		own := p >= j.start
		m.kr[p] = tensor.span(b, off, int64(kvd), own)
		m.vr[p] = tensor.span(b, geo.KVElems+off, int64(kvd), own)
	}
	m.q = grow(m.q, n*qd)
	for i := 0; i < n; i++ {
		in := m.nrm[i*H : (i+1)*H]
		matVec(m.q[i*qd:(i+1)*qd], w.Q, in)
		matVec(m.kr[j.start+i], w.K, in)
		matVec(m.vr[j.start+i], w.V, in)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	perKV := nh / nkv
	acc := m.acc[:hd]
	for i := 0; i < n; i++ {
		kr, vr := m.kr[:j.start+i+1], m.vr[:j.start+i+1]
		m.scores, m.weights = grow(m.scores, len(kr)), grow(m.weights, len(kr))
		sc, ex := m.scores[:len(kr)], m.weights[:len(kr)]
		for hq := 0; hq < nh; hq++ {
			g := hq / perKV * hd
			q := m.q[i*qd+hq*hd:][:len(acc)]
			mx := float32(math.Inf(-1))
			for t, k := range kr {
				v := float32(dot(q, k[g:g+hd]) * scale)
				sc[t] = v
				mx = max(mx, v)
			}
			for t := range sc {
				sc[t] -= mx
			}
			expInto(ex, sc)
			var sum float32
			clear(acc)
			for t, e := range ex {
				sum += e
				v := vr[t][g:][:len(acc)]
				for k, vv := range v {
					acc[k] += float32(e * vv)
				}
			}
			o := m.o[hq*hd:][:len(acc)]
			for k := range o {
				o[k] = acc[k] / sum
			}
		}
		matVec(m.mix[i*H:(i+1)*H], w.O, m.o)
	}
	return nil
}

func growRows(b [][]float32, n int) [][]float32 {
	if cap(b) < n {
		return make([][]float32, n, n+n/4)
	}
	return b[:n]
}
