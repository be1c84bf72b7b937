package mock

import (
	"fmt"
	"math"

	"statesim/model"
	"statesim/statecache"
)

// The state mixers beyond Mamba1 (docs/numeric-model.md §8). Every one is
// a gated linear recurrence over a state S[head][dv][dk]:
//
//	S ← S ⊙ e^g            (g ≤ 0: a log decay per key channel)
//	u = β·(v − S·k)        (the delta rule: GDN, KDA)   or   u = v   (Mamba2, linear attention)
//	S ← S + u ⊗ k
//	o = S·q
//
// Mamba2 maps k = B, q = C, v = Δt·x, g = −A·Δt (its SSD); GDN a scalar
// gate per head, KDA one per key channel. The decode kernel runs it token
// by token (fused_recurrent_gated_delta_rule, selective_state_update); the
// prefill kernel in chunks of TinyChunk tokens (chunk_gated_delta_rule,
// mamba_chunk_scan_combined) through the chunk's own algebra when
// Config.ChunkedPrefill is set. The chunked form rounds differently: the
// paths agree to float32 rounding, not bit for bit, and a deep random
// stand-in (MiniMax's 80 layers, Kimi-K3's 93) amplifies that rounding to
// 1e-3 in a log-prob over a 90-token request, the divergence threshold.
// So by default the prefill runs the recurrence too, as Mamba1's does, and
// a healthy request equals its reference exactly.

// stateScratch holds one row's per-token features for a state layer.
type stateScratch struct {
	xin         []float32 // [n][InDim]
	z           []float32 // [(K−1+n)][ConvDim]: the conv input sequence, window first
	cout        []float32 // [n][ConvDim]
	q, k, gate  []float32 // [n][Heads][DK]
	v, o, gz    []float32 // [n][Heads][DV]
	beta        []float32 // [n][Heads]
	skip        []float32 // [n][Heads·DV] Mamba2's x
	S           []float32 // [Heads][DV][DK]
	gam, ex, u  []float32 // chunk scratch
	kk, qk, tmp []float32
	y           []float32
}

func (j *rowJob) column(g, c int) int32 {
	if c == 0 {
		return j.slots[g]
	}
	return j.spec[g*j.specK+c-1]
}

// readSlot is the slot a decode kernel reads group g's state from: the
// accepted column (num_accepted_tokens − 1), or a stale graph replay's.
func (j *rowJob) readSlot(g int) int32 {
	if j.kernel != nil {
		return j.kernel[g]
	}
	return j.column(g, j.acc)
}

// page is block b's state part in tensor (conv window and recurrent
// state, the page's first chunk) for writing, or an error naming it.
func (m *net) page(tensor *cache, b int32) ([]float32, error) {
	return m.statePart(tensor, b, false, true)
}

// pageOf is block b's state part for reading. Only a stale graph replay
// reads the null block (nullOK: a padded state-index buffer entry).
func (m *net) pageOf(tensor *cache, b int32, nullOK bool) ([]float32, error) {
	return m.statePart(tensor, b, nullOK, false)
}

func (m *net) statePart(tensor *cache, b int32, nullOK, write bool) ([]float32, error) {
	low := b <= statecache.NullBlock
	if nullOK {
		low = b < statecache.NullBlock
	}
	if low || int64(b) >= tensor.pages {
		return nil, fmt.Errorf("mock: state slot %d outside a %d-element cache tensor", b, tensor.elems())
	}
	return tensor.span(b, 0, m.geo.StateOffset+m.geo.StateElems, write), nil
}

// stateLayer runs one non-Mamba1 state mixer over the row's tokens.
func (m *net) stateLayer(w *StateWeights, tensor *cache, g int, j *rowJob, n int) error {
	d := &w.Dims
	geo := &m.geo
	sc := &m.st
	K1, cd := d.ConvK-1, d.ConvDim
	if d.ConvK <= 1 {
		K1 = 0
	}
	if err := m.copyState(tensor, g, j, K1*cd, cd, d.SpecConvColumns); err != nil {
		return err
	}
	own, err := m.page(tensor, j.slots[g])
	if err != nil {
		return err
	}
	read := own
	if j.decode {
		if read, err = m.pageOf(tensor, j.readSlot(g), j.kernel != nil); err != nil {
			return err
		}
	}
	spec := j.decode && j.specK > 0
	// Conv window: vLLM's Mamba2, GDN and KDA keep K − 1 + num_spec
	// columns in the first column's block and read from offset
	// num_accepted_tokens − 1 (causal_conv1d_update; get_conv_copy_spec);
	// ShortConv keeps K − 1 in every column.
	sc.z = grow(sc.z, (K1+n)*cd)
	clear(sc.z[:K1*cd])
	if j.decode || j.hasInit {
		src, off := read, 0
		if d.SpecConvColumns {
			if j.decode && j.kernel == nil {
				src = own
			}
			if j.decode {
				off = j.acc
			}
		}
		copy(sc.z[:K1*cd], src[off*cd:(off+K1)*cd])
	}
	S := grow(sc.S, d.StateElems())
	sc.S = S
	if j.kern != nil {
		clear(S) // the state lives with the kernels
	} else if j.decode || j.hasInit {
		copy(S, read[geo.StateOffset:geo.StateOffset+int64(len(S))])
	} else {
		clear(S)
	}
	m.stateFeatures(w, n)
	hv := d.Heads * d.DV
	sc.o = grow(sc.o, n*hv)
	switch {
	case d.Heads > 0 && j.kern != nil:
		if err := m.stateKernels(d, g, j, n, spec); err != nil {
			return err
		}
	case d.Heads > 0:
		if j.decode || !m.chunked || len(j.ops.bounds) > 0 {
			// All mode's boundary states need the state after every
			// token: the recurrence (a chunk boundary need not fall on a
			// block boundary of the row).
			for t := 0; t < n; t++ {
				m.recurStep(d, S, t)
				if len(j.ops.bounds) > 0 {
					if err := m.boundary(tensor, g, j, t, sc.z[(t+1)*cd:(t+1+K1)*cd], S); err != nil {
						return err
					}
				}
				if spec && t <= j.specK {
					col, err := m.page(tensor, j.column(g, t))
					if err != nil {
						return err
					}
					copy(col[geo.StateOffset:], S)
					if !d.SpecConvColumns {
						copy(col[:K1*cd], sc.z[(t+1)*cd:(t+1+K1)*cd])
					}
				}
			}
		} else {
			for t0 := 0; t0 < n; t0 += TinyChunk {
				m.chunk(d, S, t0, min(t0+TinyChunk, n))
			}
		}
		if !spec {
			copy(own[geo.StateOffset:], S)
		}
	case spec: // ShortConv: a window per column
		for t := 0; t <= min(j.specK, n-1); t++ {
			col, err := m.page(tensor, j.column(g, t))
			if err != nil {
				return err
			}
			copy(col[:K1*cd], sc.z[(t+1)*cd:(t+1+K1)*cd])
		}
	}
	// Store the conv window (the recurrent state went above).
	if !spec || d.SpecConvColumns {
		convLen := m.geo.ConvLen
		shift := n // the last K − 1 inputs at offset 0
		if spec {
			shift = 1 // the input after token a at offset a: the next offset is num_accepted − 1
		}
		for i := 0; i < convLen; i++ {
			dst := own[i*cd : (i+1)*cd]
			if s := i + shift; s < K1+n {
				copy(dst, sc.z[s*cd:(s+1)*cd])
			} else {
				clear(dst)
			}
		}
	}
	m.stateOut(w, n)
	return nil
}

// stateFeatures computes every token's in_proj, conv and recurrence
// inputs (q, k, v, gate, β) and the output gate.
func (m *net) stateFeatures(w *StateWeights, n int) {
	d := &w.Dims
	sc := &m.st
	H := m.H
	K1, cd := max(d.ConvK-1, 0), d.ConvDim
	hk, hv := d.Heads*d.DK, d.Heads*d.DV
	sc.xin = grow(sc.xin, n*d.InDim)
	sc.cout = grow(sc.cout, n*cd)
	sc.q, sc.k, sc.gate = grow(sc.q, n*hk), grow(sc.k, n*hk), grow(sc.gate, n*hk)
	sc.v, sc.gz = grow(sc.v, n*hv), grow(sc.gz, n*max(hv, cd))
	sc.beta = grow(sc.beta, n*max(d.Heads, 1))
	sc.skip = grow(sc.skip, n*hv)
	sc.tmp = grow(sc.tmp, max(d.InDim, cd, hv))
	for t := 0; t < n; t++ {
		xin := sc.xin[t*d.InDim : (t+1)*d.InDim]
		matVec(xin, w.InProj, m.nrm[t*H:(t+1)*H])
		// The conv input, appended to the sequence after the window.
		cin := sc.z[(K1+t)*cd : (K1+t+1)*cd]
		switch d.Kind {
		case model.Mamba2:
			di := d.Heads * d.DV
			copy(cin, xin[di:di+cd])
		case model.GatedDeltaNet, model.KDA:
			copy(cin, xin[:cd])
		case model.ShortConv:
			for c := range cin {
				cin[c] = xin[c] * xin[2*cd+c] // B ⊙ x
			}
		}
		co := sc.cout[t*cd : (t+1)*cd]
		for c := range co {
			cw := w.ConvW[c*d.ConvK : (c+1)*d.ConvK]
			acc := w.ConvB[c]
			for i := 0; i < d.ConvK; i++ {
				acc += float32(cw[i] * sc.z[(t+i)*cd+c])
			}
			co[c] = acc
		}
		if d.Kind != model.ShortConv && cd > 0 {
			siluInto(co, co, sc.tmp)
		}
		q, k, g := sc.q[t*hk:(t+1)*hk], sc.k[t*hk:(t+1)*hk], sc.gate[t*hk:(t+1)*hk]
		v, gz, beta := sc.v[t*hv:(t+1)*hv], sc.gz[t*max(hv, cd):(t+1)*max(hv, cd)], sc.beta[t*max(d.Heads, 1):]
		switch d.Kind {
		case model.Mamba2:
			di, gn := d.Heads*d.DV, d.Groups*d.DK
			x, B, C := co[:di], co[di:di+gn], co[di+gn:di+2*gn]
			copy(sc.skip[t*hv:(t+1)*hv], x)
			siluInto(gz[:di], xin[:di], sc.tmp)
			per := d.Heads / d.Groups
			for h := 0; h < d.Heads; h++ {
				dt := softplus32(xin[2*di+2*gn+h] + w.DTBias[h])
				a := -float32(w.A[h] * dt)
				grp := h / per
				copy(k[h*d.DK:(h+1)*d.DK], B[grp*d.DK:(grp+1)*d.DK])
				copy(q[h*d.DK:(h+1)*d.DK], C[grp*d.DK:(grp+1)*d.DK])
				for c := 0; c < d.DK; c++ {
					g[h*d.DK+c] = a
				}
				for p := 0; p < d.DV; p++ {
					v[h*d.DV+p] = dt * x[h*d.DV+p]
				}
			}
		case model.GatedDeltaNet, model.KDA:
			kd := d.KHeads * d.DK
			qc, kc, vc := co[:kd], co[kd:2*kd], co[2*kd:2*kd+hv]
			copy(v, vc)
			rest := xin[2*kd+hv:]
			siluInto(gz[:hv], rest[:hv], sc.tmp)
			rest = rest[hv:]
			scale := float32(1 / math.Sqrt(float64(d.DK)))
			per := d.Heads / d.KHeads
			for h := 0; h < d.Heads; h++ {
				kh := h / per
				qh, kh2 := q[h*d.DK:(h+1)*d.DK], k[h*d.DK:(h+1)*d.DK]
				l2norm(qh, qc[kh*d.DK:(kh+1)*d.DK])
				l2norm(kh2, kc[kh*d.DK:(kh+1)*d.DK])
				for c := range qh {
					qh[c] *= scale
				}
				beta[h] = sigmoid32(rest[h])
				for c := 0; c < d.DK; c++ {
					gi := h // GDN: one gate per head
					if d.PerChannelGate {
						gi = h*d.DK + c
					}
					dt := softplus32(rest[d.Heads+gi] + w.DTBias[gi])
					g[h*d.DK+c] = -float32(w.A[h] * dt)
				}
			}
		case model.LinearAttention:
			siluInto(q, xin[:hk], sc.tmp)
			siluInto(k, xin[hk:2*hk], sc.tmp)
			for h := 0; h < d.Heads; h++ {
				// Unit keys keep the undecayed state's growth in check (the
				// stand-in's choice; MiniMax normalises the output only).
				l2norm(k[h*d.DK:(h+1)*d.DK], k[h*d.DK:(h+1)*d.DK])
			}
			siluInto(v, xin[2*hk:2*hk+hv], sc.tmp)
			siluInto(gz[:hv], xin[2*hk+hv:2*hk+2*hv], sc.tmp)
			scale := float32(1 / math.Sqrt(float64(d.DK)))
			for c := range q {
				q[c] *= scale
			}
			for h := 0; h < d.Heads; h++ {
				for c := 0; c < d.DK; c++ {
					g[h*d.DK+c] = -w.A[h]
				}
			}
		case model.ShortConv:
			for c := 0; c < cd; c++ {
				gz[c] = xin[cd+c] * co[c] // C ⊙ conv(B ⊙ x)
			}
		}
	}
}

// recurStep advances S by token t and sets its output o[t].
func (m *net) recurStep(d *Dims, S []float32, t int) {
	sc := &m.st
	hk, hv := d.Heads*d.DK, d.Heads*d.DV
	sc.ex = grow(sc.ex, d.DK)
	for h := 0; h < d.Heads; h++ {
		q, k := sc.q[t*hk+h*d.DK:][:d.DK], sc.k[t*hk+h*d.DK:][:d.DK]
		v, o := sc.v[t*hv+h*d.DV:][:d.DV], sc.o[t*hv+h*d.DV:][:d.DV]
		expInto(sc.ex, sc.gate[t*hk+h*d.DK:][:d.DK])
		b := sc.beta[t*max(d.Heads, 1)+h]
		for p := 0; p < d.DV; p++ {
			row := S[(h*d.DV+p)*d.DK:][:d.DK]
			for c := range row {
				row[c] *= sc.ex[c]
			}
			u := v[p]
			if d.Delta {
				u = b * (v[p] - dot(row, k))
			}
			for c := range row {
				row[c] += float32(u * k[c])
			}
			o[p] = dot(row, q)
		}
	}
}

// chunk runs tokens [t0, t1) through the chunked form: with Γ_t the
// cumulative log decay inside the chunk,
//
//	u_t = β_t·(v_t − S0·(e^Γ_t ⊙ k_t) − Σ_{s<t} ⟨k_t ⊙ e^(Γ_t−Γ_s), k_s⟩·u_s)   (u_t = v_t without the delta rule)
//	o_t = S0·(e^Γ_t ⊙ q_t) + Σ_{s≤t} ⟨q_t ⊙ e^(Γ_t−Γ_s), k_s⟩·u_s
//	S   = S0 ⊙ e^Γ_end + Σ_s u_s ⊗ (k_s ⊙ e^(Γ_end−Γ_s))
//
// (the WY form FLA's chunk_gated_delta_rule solves by a triangular
// inverse, and Mamba2's SSD chunk: intra-chunk from C·Bᵀ, the state
// passed between chunks).
func (m *net) chunk(d *Dims, S []float32, t0, t1 int) {
	sc := &m.st
	L, DK, DV := t1-t0, d.DK, d.DV
	hk, hv := d.Heads*DK, d.Heads*DV
	sc.gam = grow(sc.gam, L*DK)
	sc.ex = grow(sc.ex, DK)
	sc.u = grow(sc.u, L*DV)
	sc.kk = grow(sc.kk, DK)
	sc.y = grow(sc.y, DV)
	for h := 0; h < d.Heads; h++ {
		gam := sc.gam[:L*DK]
		for i := 0; i < L; i++ {
			g := sc.gate[(t0+i)*hk+h*DK:][:DK]
			for c := range g {
				prev := float32(0)
				if i > 0 {
					prev = gam[(i-1)*DK+c]
				}
				gam[i*DK+c] = prev + g[c]
			}
		}
		Sh := S[h*DV*DK : (h+1)*DV*DK]
		// decayed(a, i, s): a ⊙ e^(Γ_i − Γ_s) (s < 0: Γ_s = 0, the chunk start).
		decayed := func(dst, a []float32, i, s int) {
			for c := range dst {
				x := gam[i*DK+c]
				if s >= 0 {
					x -= gam[s*DK+c]
				}
				dst[c] = x
			}
			expInto(dst, dst)
			for c := range dst {
				dst[c] *= a[c]
			}
		}
		for i := 0; i < L; i++ {
			t := t0 + i
			k, q := sc.k[t*hk+h*DK:][:DK], sc.q[t*hk+h*DK:][:DK]
			v := sc.v[t*hv+h*DV:][:DV]
			u := sc.u[i*DV : (i+1)*DV]
			copy(u, v)
			if d.Delta {
				decayed(sc.kk, k, i, -1)
				for p := range u {
					u[p] -= dot(Sh[p*DK:(p+1)*DK], sc.kk)
				}
				for s := 0; s < i; s++ {
					decayed(sc.kk, k, i, s)
					a := dot(sc.kk, sc.k[(t0+s)*hk+h*DK:][:DK])
					us := sc.u[s*DV : (s+1)*DV]
					for p := range u {
						u[p] -= float32(a * us[p])
					}
				}
				b := sc.beta[t*max(d.Heads, 1)+h]
				for p := range u {
					u[p] *= b
				}
			}
			o := sc.o[t*hv+h*DV:][:DV]
			decayed(sc.kk, q, i, -1)
			for p := range o {
				o[p] = dot(Sh[p*DK:(p+1)*DK], sc.kk)
			}
			for s := 0; s <= i; s++ {
				decayed(sc.kk, q, i, s)
				a := dot(sc.kk, sc.k[(t0+s)*hk+h*DK:][:DK])
				us := sc.u[s*DV : (s+1)*DV]
				for p := range o {
					o[p] += float32(a * us[p])
				}
			}
		}
		// The state passed on.
		last := L - 1
		for c := 0; c < DK; c++ {
			sc.ex[c] = gam[last*DK+c]
		}
		expInto(sc.ex, sc.ex)
		for p := 0; p < DV; p++ {
			row := Sh[p*DK : (p+1)*DK]
			for c := range row {
				row[c] *= sc.ex[c]
			}
		}
		for s := 0; s < L; s++ {
			ks := sc.k[(t0+s)*hk+h*DK:][:DK]
			decayed(sc.kk, ks, last, s)
			us := sc.u[s*DV : (s+1)*DV]
			for p := 0; p < DV; p++ {
				row := Sh[p*DK : (p+1)*DK]
				for c := range row {
					row[c] += float32(us[p] * sc.kk[c])
				}
			}
		}
	}
}

// stateOut turns each token's recurrence output into the mixer output.
func (m *net) stateOut(w *StateWeights, n int) {
	d := &w.Dims
	sc := &m.st
	H := m.H
	hv, cd := d.Heads*d.DV, d.ConvDim
	sc.y = grow(sc.y, max(hv, cd))
	for t := 0; t < n; t++ {
		out := m.mix[t*H : (t+1)*H]
		gz := sc.gz[t*max(hv, cd):]
		if d.Kind == model.ShortConv {
			matVec(out, w.OutProj, gz[:cd])
			continue
		}
		o, y := sc.o[t*hv:(t+1)*hv], sc.y[:hv]
		if d.Kind == model.Mamba2 {
			// y = (o + D·x) ⊙ silu(z), then a gated RMSNorm over d_inner.
			x := sc.skip[t*hv : (t+1)*hv]
			for h := 0; h < d.Heads; h++ {
				for p := 0; p < d.DV; p++ {
					i := h*d.DV + p
					y[i] = (o[i] + float32(w.D[h]*x[i])) * gz[i]
				}
			}
			rmsNorm(y, y, w.Norm)
		} else {
			// Per head: RMSNorm(o) ⊙ silu(z) (FusedRMSNormGated).
			for h := 0; h < d.Heads; h++ {
				yh := y[h*d.DV : (h+1)*d.DV]
				rmsNorm(yh, o[h*d.DV:(h+1)*d.DV], w.Norm)
				for p := range yh {
					yh[p] *= gz[h*d.DV+p]
				}
			}
		}
		matVec(out, w.OutProj, y)
	}
}

func softplus32(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(float64(exp32(x))))
}

func sigmoid32(x float32) float32 { return 1 / (1 + exp32(-x)) }

// l2norm sets y = x / sqrt(Σx² + 1e-6) (FLA's use_qk_l2norm_in_kernel).
func l2norm(y, x []float32) {
	var ss float32
	for _, v := range x {
		ss += float32(v * v)
	}
	inv := float32(1 / math.Sqrt(float64(ss+normEps)))
	for i, v := range x {
		y[i] = v * inv
	}
}

// StateCall is one state layer's recurrence over one row, for kernels that
// keep the recurrent state caches themselves (the CUDA backend's): the
// row's features, the slot its initial state comes from and the slots it
// writes, as the mock would address them in its own pages.
type StateCall struct {
	Dims   *Dims
	Tensor int   // the layer's raw tensor
	Read   int32 // the initial state's slot; −1: zeros (no initial state)
	// Write: the state after token t goes to Write[t] (PerToken: a draft
	// decode's columns), else the final state to Write[0].
	Write    []int32
	PerToken bool
	Decode   bool // the decode kernel (token by token); else the prefill's chunked scan
	N        int
	// Q, K, Gate [N][heads][dk] (the gate per key channel, log decay), V
	// [N][heads][dv], Beta [N][heads] (delta rule only); O receives
	// [N][heads][dv].
	Q, K, Gate, V, Beta, O []float32
}

// StateKernels runs state calls against caches of its own.
type StateKernels interface {
	Run(c *StateCall) error
}

// stateKernels hands the row's recurrence to j.kern.
func (m *net) stateKernels(d *Dims, g int, j *rowJob, n int, spec bool) error {
	sc := &m.st
	c := &StateCall{Dims: d, Tensor: m.geo.LayerTensor[j.layer], Read: -1, Decode: j.decode, N: n,
		Q: sc.q[:n*d.Heads*d.DK], K: sc.k[:n*d.Heads*d.DK], Gate: sc.gate[:n*d.Heads*d.DK],
		V: sc.v[:n*d.Heads*d.DV], Beta: sc.beta[:n*d.Heads], O: sc.o[:n*d.Heads*d.DV]}
	switch {
	case j.decode:
		c.Read = j.readSlot(g)
	case j.hasInit:
		c.Read = j.slots[g]
	}
	if spec {
		c.PerToken = true
		for t := 0; t <= min(j.specK, n-1); t++ {
			c.Write = append(c.Write, j.column(g, t))
		}
	} else {
		c.Write = []int32{j.slots[g]}
	}
	return j.kern.Run(c)
}
