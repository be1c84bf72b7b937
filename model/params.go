package model

// params counts a model's parameters from its config, layer by layer, for
// the weights' share of device memory (vLLM loads every parameter in the
// model dtype, sharded across TP ranks). Norm weights, biases of a few
// elements and routers' biases are left out: they are well under 0.1% of
// any model here. Tests compare the totals with published counts.
type params struct {
	h *hf
	s *Shape
	n int64
}

func newParams(h *hf, s *Shape) *params {
	p := &params{h: h, s: s}
	e := int64(s.VocabSize) * int64(s.HiddenSize)
	p.n = e
	if !h.boolOr(true, "tie_word_embeddings") {
		p.n += e // a separate lm_head
	}
	return p
}

func (p *params) add(n ...int) {
	t := int64(1)
	for _, x := range n {
		t *= int64(x)
	}
	p.n += t
}

func (p *params) done(notes string) {
	p.s.NumParameters = p.n
	p.s.ParameterNotes = notes
}

// attention: q, k, v and o projections.
func (p *params) attention() { p.attentionGated(false) }

// attentionGated: Qwen3-Next's attention doubles q_proj for its output gate.
func (p *params) attentionGated(gate bool) {
	s := p.s
	q := s.NumAttentionHeads * s.HeadDim
	if gate {
		p.add(s.HiddenSize, 2*q)
	} else {
		p.add(s.HiddenSize, q)
	}
	p.add(s.HiddenSize, 2*s.NumKVHeads*s.HeadDim)
	p.add(q, s.HiddenSize)
}

// mla: DeepSeek-style latent attention without a q LoRA (Kimi Linear).
func (p *params) mla(nope, v int) { p.mlaLoRA(nope, v, 0, false) }

// mlaLoRA: latent attention, with a q LoRA of rank qLora when > 0 and an
// output gate (one projection of hidden to heads × v) when gate (Kimi-K3).
func (p *params) mlaLoRA(nope, v, qLora int, gate bool) {
	s := p.s
	h := s.NumAttentionHeads
	if qLora > 0 {
		p.add(s.HiddenSize, qLora)             // q_a_proj
		p.add(qLora, h*(nope+s.QKRopeHeadDim)) // q_b_proj
	} else {
		p.add(s.HiddenSize, h*(nope+s.QKRopeHeadDim)) // q_proj
	}
	p.add(s.HiddenSize, s.KVLoraRank+s.QKRopeHeadDim) // kv_a_proj_with_mqa
	p.add(s.KVLoraRank, h*(nope+v))                   // kv_b_proj
	if gate {
		p.add(s.HiddenSize, h*v) // g_proj
	}
	p.add(h*v, s.HiddenSize) // o_proj
}

// mlp: gated (gate, up, down) or plain (up, down).
func (p *params) mlp(inter int, gated bool) {
	if gated {
		p.add(3, p.s.HiddenSize, inter)
	} else {
		p.add(2, p.s.HiddenSize, inter)
	}
}

// latentMoE: Kimi-K3's MoE, its routed experts on a latent width (with
// down and up projections from and to the hidden size).
func (p *params) latentMoE(experts, inter, shared, latent int) {
	p.add(2, p.s.HiddenSize, latent)
	p.moeOn(latent, experts, inter, shared)
}

// moe: routed experts (gated), a router and a shared expert.
func (p *params) moe(experts, inter, shared int) { p.moeOn(p.s.HiddenSize, experts, inter, shared) }

// moeOn is moe with the routed experts on width; the router and the
// shared expert stay on the hidden size.
func (p *params) moeOn(width, experts, inter, shared int) {
	p.add(experts, 3, width, inter)
	p.add(experts, p.s.HiddenSize)
	if shared > 0 {
		p.add(3, p.s.HiddenSize, shared)
	}
}

// mamba1: in_proj (x, z), conv1d, x_proj (dt, B, C), dt_proj, A, D, out_proj.
func (p *params) mamba1(di, n, k, dtRank int) {
	h := p.s.HiddenSize
	p.add(h, 2*di)
	p.add(di, k)
	p.add(di, dtRank+2*n)
	p.add(dtRank, di)
	p.add(di, n)
	p.add(di, h)
}

// mamba2: in_proj (z, x, B, C, dt), conv1d over x, B, C, A/D/dt_bias, the
// gated norm, out_proj.
func (p *params) mamba2() {
	m, h := &p.s.Mixer, p.s.HiddenSize
	conv := m.IntermediateSize + 2*m.NGroups*m.StateSize
	p.add(h, m.IntermediateSize+conv+m.NumHeads)
	p.add(conv, m.ConvKernel)
	p.add(3, m.NumHeads)
	p.add(m.IntermediateSize)
	p.add(m.IntermediateSize, h)
}

// gdn: Gated DeltaNet's in_proj_qkvz and in_proj_ba, conv1d, A/dt_bias,
// norm, out_proj.
func (p *params) gdn() {
	m, h := &p.s.Mixer, p.s.HiddenSize
	k, v := m.NumKHeads*m.HeadKDim, m.NumVHeads*m.HeadVDim
	p.add(h, 2*k+2*v)
	p.add(h, 2*m.NumVHeads)
	p.add(2*k+v, m.ConvKernel)
	p.add(2, m.NumVHeads)
	p.add(m.HeadVDim)
	p.add(v, h)
}

// shortConv: LFM2's in_proj (B, C, x), depthwise conv, out_proj.
func (p *params) shortConv(dim, k int) {
	h := p.s.HiddenSize
	p.add(h, 3*dim)
	p.add(dim, k)
	p.add(dim, h)
}

// linearAttention: MiniMax's qkv, output gate and out projections.
func (p *params) linearAttention() {
	m, h := &p.s.Mixer, p.s.HiddenSize
	hd := m.NumHeads * m.HeadDim
	p.add(h, 3*hd)
	p.add(h, hd)
	p.add(hd, h)
}

// kda: q, k, v projections and their short convolutions, the low-rank
// forget-gate and output-gate projections, beta, A/dt_bias, o_proj.
func (p *params) kda() { p.kdaGated(false) }

// kdaGated: with a full-rank output gate (Kimi-K3's use_full_rank_gate)
// g_proj maps hidden to heads × head dim instead of g_a, g_b.
func (p *params) kdaGated(fullRank bool) {
	m, h := &p.s.Mixer, p.s.HiddenSize
	hd := m.NumHeads * m.HeadDim
	p.add(3, h, hd)
	p.add(3, hd, m.ConvKernel)
	p.add(h, m.HeadDim)  // f_a
	p.add(m.HeadDim, hd) // f_b
	if fullRank {
		p.add(h, hd) // g_proj
	} else {
		p.add(h, m.HeadDim)  // g_a
		p.add(m.HeadDim, hd) // g_b
	}
	p.add(h, m.NumHeads) // b_proj
	p.add(2, hd)
	p.add(hd, h)
}
