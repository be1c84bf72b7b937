//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"gorgonia.org/cu"

	"statesim/kernels"
)

// launcher runs kernels in order and keeps the first error, so that a
// layer reads as the list of its kernels.
type launcher struct {
	d   *Device
	err error
}

var block128 = [3]int{128, 1, 1}

func (l *launcher) launch(name string, grid, block [3]int, args ...any) {
	if l.err == nil {
		l.err = l.d.Launch(name, grid, block, 0, args...)
	}
}

// matmul is y[n×outN] = x[n×in] · wᵀ, rows ldx and ldy apart.
func (l *launcher) matmul(y, x, w cu.DevicePtr, n, outN, in, ldx, ldy int) {
	l.launch("matmul_nt", [3]int{ceilDiv(outN, 16), ceilDiv(n, 16), 1}, [3]int{16, 16, 1}, y, x, w, n, outN, in, ldx, ldy)
}

// forward runs every layer over the batch's tokens, leaving the residual
// stream (hidden states) in act.hid.
func (b *Backend) forward(bt *batch, ix devBatch, act activations) error {
	T, H := bt.numTokens(), b.cfg.Shape.HiddenSize
	l := &launcher{d: b.dev}
	l.launch("embed_tokens", [3]int{T, 1, 1}, block128, act.hid, b.embed, ix.tokens, H)
	if l.err != nil {
		return l.err
	}
	for li, lw := range b.layers {
		tensor := b.tensors[b.geo.LayerTensor[li]]
		group := b.geo.LayerGroup[li]
		l.launch("rms_norm", [3]int{T, 1, 1}, block128, act.nrm, act.hid, lw.norm, cu.DevicePtr(0), H, float32(normEps))
		if lw.mamba != nil {
			b.mambaLayer(l, lw.mamba, tensor, group, bt, ix, act)
		} else {
			b.attentionLayer(l, lw.attn, tensor, group, bt, ix, act)
		}
		l.launch("add_inplace", [3]int{ceilDiv(T*H, 256), 1, 1}, [3]int{256, 1, 1}, act.hid, act.mix, int64(T*H))
		if l.err != nil {
			return fmt.Errorf("layer %d: %w", li, l.err)
		}
	}
	return nil
}

// mambaLayer is one Mamba mixer over act.nrm into act.mix. The decode rows
// take the update kernels (one token, state read and written in place at
// the row's slot), the prefill rows the forward kernels (a scan from the
// slot's state when has_initial_state, else from zero), as vLLM's
// Mamba metadata splits them.
func (b *Backend) mambaLayer(l *launcher, m *mambaW, tensor cu.DevicePtr, group int, bt *batch, ix devBatch, act activations) {
	s, g := &b.cfg.Shape, &b.geo
	T, H := bt.numTokens(), s.HiddenSize
	di, N, K, R := s.DInner(), s.MambaDState, s.MambaDConv, b.dtRank
	nd, np := len(bt.dRows), len(bt.pRows)
	cacheIdx := ix.cacheIdx + cu.DevicePtr(4*group*bt.rows)
	states := tensor + cu.DevicePtr(4*g.StateOffset)

	l.matmul(act.xz, act.nrm, m.inProj, T, 2*di, H, H, 2*di)
	l.launch("causal_conv1d_update", [3]int{ceilDiv(di, 128), nd, 1}, block128,
		act.xc, act.xz, 2*di, m.convW, m.convB, tensor, g.PageElems, ix.dRows, ix.qsl, cacheIdx, di, K)
	l.launch("causal_conv1d_fwd", [3]int{ceilDiv(di, 128), np, 1}, block128,
		act.xc, act.xz, 2*di, m.convW, m.convB, tensor, g.PageElems, ix.pRows, ix.qsl, cacheIdx, ix.hasInit, di, K)
	l.matmul(act.dbc, act.xc, m.xProj, T, R+2*N, di, di, R+2*N)
	l.matmul(act.dtp, act.dbc, m.dtProj, T, di, R, R+2*N, di)
	b.stateUpdate(l, m, states, ix.dSlot+cu.DevicePtr(4*group*nd), nd, ix, act)
	scan := "selective_scan_fwd_u64"
	if b.cfg.IndexBits == 32 {
		scan = "selective_scan_fwd_u32" // bug B: slot × stride formed in 32 bits
	}
	l.launch(scan, [3]int{ceilDiv(di, 128), np, 1}, block128,
		act.y, act.xc, act.dtp, act.dbc, R+2*N, R, act.xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
		ix.pRows, ix.qsl, cacheIdx, ix.hasInit, di, N)
	l.matmul(act.mix, act.y, m.outProj, T, H, di, di, H)
}

// stateUpdate is the decode rows' selective_state_update: the d_state 16
// kernels (_n16/_b16) when the page layout allows float4 access, else the
// generic _v4 or _v1.
func (b *Backend) stateUpdate(l *launcher, m *mambaW, states, slots cu.DevicePtr, nd int, ix devBatch, act activations) {
	s, g := &b.cfg.Shape, &b.geo
	di, N, R := s.DInner(), s.MambaDState, b.dtRank
	if b.vec4 && N == 16 {
		name, bx, gy, threads, rpb := kernels.SSU16Launch(nd, di, b.dev.SMs, b.ssu16)
		l.launch(name, [3]int{bx, gy, 1}, [3]int{threads, 1, 1},
			act.y, act.xc, act.dtp, act.dbc, R+2*N, R, act.xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
			ix.dTok, slots, nd, rpb, di)
		return
	}
	name, vec := "selective_state_update_v1", 1
	if b.vec4 {
		name, vec = "selective_state_update_v4", 4
	}
	bx := ceilDiv(di*N/vec, 128)
	gy, rpb := kernels.SSUGrid(nd, bx, kernels.SSUBlocksPerSM, b.dev.SMs)
	l.launch(name, [3]int{bx, gy, 1}, block128,
		act.y, act.xc, act.dtp, act.dbc, R+2*N, R, act.xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
		ix.dTok, slots, nd, rpb, di, N)
}

// attentionLayer is one attention layer over act.nrm into act.mix: Q, K,
// V projections, K and V written to the paged cache at the slot mapping,
// then paged attention over each token's block table.
func (b *Backend) attentionLayer(l *launcher, a *attnW, tensor cu.DevicePtr, group int, bt *batch, ix devBatch, act activations) {
	s, g := &b.cfg.Shape, &b.geo
	T, H := bt.numTokens(), s.HiddenSize
	nh, nkv, hd, bs := s.NumAttentionHeads, s.NumKVHeads, s.HeadDim, g.BlockSize
	qd, kvd := nh*hd, nkv*hd
	tables := ix.blockTables + cu.DevicePtr(4*group*bt.rows*bt.maxBlocks)
	slots := ix.slotMapping + cu.DevicePtr(8*group*T)

	l.matmul(act.q, act.nrm, a.q, T, qd, H, H, qd)
	l.matmul(act.k, act.nrm, a.k, T, kvd, H, H, kvd)
	l.matmul(act.v, act.nrm, a.v, T, kvd, H, H, kvd)
	l.launch("reshape_and_cache", [3]int{T, 1, 1}, block128, tensor, act.k, act.v, slots, kvd, bs, g.PageElems, g.KVElems)
	l.launch("paged_attention", [3]int{T, nh, 1}, [3]int{32, 1, 1}, act.o, act.q, tensor, tables, bt.maxBlocks,
		ix.tokRow, ix.tokPos, nh, nkv, hd, bs, g.PageElems, g.KVElems, float32(1/math.Sqrt(float64(hd))))
	l.matmul(act.mix, act.o, a.o, T, H, qd, qd, H)
}
