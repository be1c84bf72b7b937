package refmodel

import (
	"errors"
	"fmt"
	"math"

	"statesim/backend"
	"statesim/backend/mock"
	"statesim/model"
	"statesim/setup"
	"statesim/sim"
)

// Tolerance bounds |Δ log-prob| between this reference and the mock on a
// healthy request. The mock rounds every operation to float32 (a
// relative error of 6e-8 each); over a few layers, a 64-token scan and
// logits of standard deviation ≈ 12 that rounding moves a log-prob by
// at most 4.2e-5 over TestAgreesWithTheMock's 18 requests (prompts of 1
// to 64 tokens, up to 16 generated, three shapes). 1e-3 — the mock's own
// divergence threshold — leaves a factor of 20 for longer requests and
// sits three to four orders of magnitude below the differences a
// corrupted state causes (1 to 50).
const Tolerance = 1e-3

// Model is the mock's model in float64.
type Model struct {
	shape  model.Shape
	dtRank int
	embed  [][]float64 // [vocab][hidden]
	layers []layer
	final  []float64
	lmHead [][]float64 // [vocab][hidden]
}

type layer struct {
	norm  []float64
	st    *stateW // Mamba2, GDN, KDA, linear attention, ShortConv
	mamba *mambaW
	attn  *attnW
}

type mambaW struct {
	inProj  [][]float64 // [2·d_inner][hidden]
	convW   [][]float64 // [d_inner][d_conv]
	convB   []float64
	xProj   [][]float64 // [dt_rank + 2·d_state][d_inner]
	dtProj  [][]float64 // [d_inner][dt_rank]
	dtBias  []float64
	a       [][]float64 // [d_inner][d_state]
	d       []float64
	outProj [][]float64 // [hidden][d_inner]
}

type attnW struct {
	q, k, v, o [][]float64
}

// New converts the mock's weights for shape and seed (the scenario's
// backend.weight_seed, or its seed when that is 0) to float64.
func New(shape model.Shape, weightSeed uint64) (*Model, error) {
	w, err := mock.NewWeights(shape, weightSeed)
	if err != nil {
		return nil, err
	}
	s := &w.Shape
	H, V, di, N, K, R := s.HiddenSize, s.VocabSize, s.DInner(), s.MambaDState, s.MambaDConv, w.DTRank
	m := &Model{shape: *s, dtRank: R, embed: matrix(w.Embed, V, H), final: vector(w.FinalNorm), lmHead: matrix(w.LMHead, V, H)}
	for i := range w.Layers {
		lw := &w.Layers[i]
		l := layer{norm: vector(lw.Norm)}
		switch {
		case lw.State != nil:
			l.st = newStateW(lw.State, H)
		case lw.Mamba != nil:
			mw := lw.Mamba
			l.mamba = &mambaW{
				inProj: matrix(mw.InProj, 2*di, H), convW: matrix(mw.ConvW, di, K), convB: vector(mw.ConvB),
				xProj: matrix(mw.XProj, R+2*N, di), dtProj: matrix(mw.DTProj, di, R), dtBias: vector(mw.DTBias),
				a: matrix(mw.A, di, N), d: vector(mw.D), outProj: matrix(mw.OutProj, H, di),
			}
		case lw.Attn != nil:
			aw := lw.Attn
			qd, kvd := s.NumAttentionHeads*s.HeadDim, s.NumKVHeads*s.HeadDim
			l.attn = &attnW{q: matrix(aw.Q, qd, H), k: matrix(aw.K, kvd, H), v: matrix(aw.V, kvd, H), o: matrix(aw.O, H, qd)}
		default:
			return nil, fmt.Errorf("refmodel: layer %d has no mixer", i)
		}
		m.layers = append(m.layers, l)
	}
	return m, nil
}

func vector(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func matrix(x []float32, rows, cols int) [][]float64 {
	if len(x) != rows*cols {
		panic(fmt.Sprintf("refmodel: %d weights for a %d×%d matrix", len(x), rows, cols))
	}
	out := make([][]float64, rows)
	for r := range out {
		out[r] = vector(x[r*cols : (r+1)*cols])
	}
	return out
}

// PromptToken is a request's prompt token at position pos
// (docs/numeric-model.md §5): Mix(seed ⊕ Mix(pos ⊕ "prompt")) mod vocab.
func PromptToken(seed uint64, pos, vocab int) int32 {
	const salt = 0x70726f6d7074 // "prompt"
	return int32(sim.Mix(seed^sim.Mix(uint64(pos)^salt)) % uint64(vocab))
}

// Prompt is a request's first n prompt tokens.
func (m *Model) Prompt(seed uint64, n int) []int32 {
	out := make([]int32, n)
	for p := range out {
		out[p] = PromptToken(seed, p, m.shape.VocabSize)
	}
	return out
}

// Point is the reference's view of one generated position.
type Point struct {
	// LogProb is the log-probability of the scored token.
	LogProb float64
	// Greedy is the reference's own most likely token there.
	Greedy int32
}

// Score runs prompt followed by generated[:len−1] from zero state and
// returns, for each generated token k, its log-probability where it was
// generated (teacher forcing: the reference follows the engine's tokens,
// so a near-tie cannot make the two runs part ways).
func (m *Model) Score(prompt, generated []int32) ([]Point, error) {
	if len(prompt) == 0 {
		return nil, errors.New("refmodel: empty prompt")
	}
	if len(generated) == 0 {
		return nil, nil
	}
	st := m.newState()
	seq := append(append([]int32(nil), prompt...), generated[:len(generated)-1]...)
	out := make([]Point, len(generated))
	for p, tok := range seq {
		k := p - (len(prompt) - 1) // the generated token these logits predict
		logits, err := m.step(st, tok, p, k >= 0)
		if err != nil {
			return nil, err
		}
		if k >= 0 {
			out[k] = Point{LogProb: logProb(logits, generated[k]), Greedy: argmax(logits)}
		}
	}
	return out, nil
}

// state is one request's recurrent and attention caches, per layer.
type state struct {
	sc   []*stateCache // the other state kinds
	win  [][][]float64 // Mamba: the last d_conv−1 conv inputs, oldest first
	h    [][][]float64 // Mamba: SSM state [d_inner][d_state]
	keys [][][]float64 // attention: per position, [kv_heads·head_dim]
	vals [][][]float64
}

func (m *Model) newState() *state {
	s := &m.shape
	n := len(m.layers)
	st := &state{win: make([][][]float64, n), h: make([][][]float64, n), keys: make([][][]float64, n), vals: make([][][]float64, n), sc: make([]*stateCache, n)}
	for i, l := range m.layers {
		if l.st != nil {
			st.sc[i] = newStateCache(&l.st.d)
			continue
		}
		if l.mamba != nil {
			st.win[i] = zeros(s.MambaDConv-1, s.DInner())
			st.h[i] = zeros(s.DInner(), s.MambaDState)
		}
	}
	return st
}

func zeros(rows, cols int) [][]float64 {
	out := make([][]float64, rows)
	for r := range out {
		out[r] = make([]float64, cols)
	}
	return out
}

// step feeds the token at position pos through every layer and returns
// the logits when wantLogits.
func (m *Model) step(st *state, tok int32, pos int, wantLogits bool) ([]float64, error) {
	s := &m.shape
	if tok < 0 || int(tok) >= s.VocabSize {
		return nil, fmt.Errorf("refmodel: token %d outside the vocabulary of %d", tok, s.VocabSize)
	}
	hid := append([]float64(nil), m.embed[tok]...)
	for i, l := range m.layers {
		x := rmsNorm(hid, l.norm)
		var mix []float64
		if l.st != nil {
			mix = l.st.step(st.sc[i], x)
		} else if l.mamba != nil {
			mix = m.mambaStep(l.mamba, st.win[i], st.h[i], x)
		} else {
			mix = m.attend(l.attn, st, i, x, pos)
		}
		for k := range hid {
			hid[k] += mix[k]
		}
	}
	if !wantLogits {
		return nil, nil
	}
	return mul(m.lmHead, rmsNorm(hid, m.final)), nil
}

// mambaStep is one token of the Mamba1 mixer: causal conv1d over the
// window and the new input, SiLU, the input-dependent projections, the
// selective scan update with a softplus time step, the D skip and the
// SiLU gate.
func (m *Model) mambaStep(w *mambaW, win, h [][]float64, in []float64) []float64 {
	s := &m.shape
	di, N, K, R := s.DInner(), s.MambaDState, s.MambaDConv, m.dtRank
	xz := mul(w.inProj, in)
	x, z := xz[:di], xz[di:]
	u := make([]float64, di)
	for d := range u {
		acc := w.convB[d] + w.convW[d][K-1]*x[d]
		for k := 0; k < K-1; k++ {
			acc += w.convW[d][k] * win[k][d]
		}
		u[d] = silu(acc)
	}
	if K > 1 {
		first := win[0]
		copy(win, win[1:])
		win[K-2] = first
		copy(win[K-2], x)
	}
	dbc := mul(w.xProj, u)
	dtRaw, B, C := dbc[:R], dbc[R:R+N], dbc[R+N:R+2*N]
	g := make([]float64, di)
	for d := range g {
		dt := softplus(dotf(dtRaw, w.dtProj[d]) + w.dtBias[d])
		var y float64
		for n := 0; n < N; n++ {
			h[d][n] = math.Exp(w.a[d][n]*dt)*h[d][n] + dt*B[n]*u[d]
			y += C[n] * h[d][n]
		}
		y += w.d[d] * u[d]
		g[d] = y * silu(z[d])
	}
	return mul(w.outProj, g)
}

// attend is causal grouped-query attention without positional rotation:
// the new position's key and value join the request's own, and each
// query head attends over positions [0, pos] of its KV head.
func (m *Model) attend(w *attnW, st *state, li int, in []float64, pos int) []float64 {
	s := &m.shape
	nh, nkv, hd := s.NumAttentionHeads, s.NumKVHeads, s.HeadDim
	if len(st.keys[li]) != pos {
		panic(fmt.Sprintf("refmodel: layer %d holds %d positions at position %d", li, len(st.keys[li]), pos))
	}
	q := mul(w.q, in)
	st.keys[li] = append(st.keys[li], mul(w.k, in))
	st.vals[li] = append(st.vals[li], mul(w.v, in))
	scale := 1 / math.Sqrt(float64(hd))
	o := make([]float64, nh*hd)
	for a := 0; a < nh; a++ {
		g := a / (nh / nkv)
		qa := q[a*hd : (a+1)*hd]
		scores := make([]float64, pos+1)
		mx := math.Inf(-1)
		for t := range scores {
			scores[t] = dotf(qa, st.keys[li][t][g*hd:(g+1)*hd]) * scale
			mx = math.Max(mx, scores[t])
		}
		var sum float64
		for t := range scores {
			scores[t] = math.Exp(scores[t] - mx)
			sum += scores[t]
		}
		for t, e := range scores {
			v := st.vals[li][t][g*hd : (g+1)*hd]
			for k := range v {
				o[a*hd+k] += e / sum * v[k]
			}
		}
	}
	return mul(w.o, o)
}

func mul(w [][]float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for o, row := range w {
		y[o] = dotf(row, x)
	}
	return y
}

func dotf(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func rmsNorm(x, gamma []float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+1e-6)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * inv * gamma[i]
	}
	return y
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// softplus is log(1 + e^x), x itself above 20 as PyTorch's.
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func argmax(l []float64) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

// logProb is l[tok] − log Σ exp(l).
func logProb(l []float64, tok int32) float64 {
	mx := l[argmax(l)]
	var sum float64
	for _, v := range l {
		sum += math.Exp(v - mx)
	}
	return l[tok] - mx - math.Log(sum)
}

// ForSetup is the model a numeric backend runs for st: its shape, and
// the weight seed the mock takes from the run (mock.ConfigOf), so that
// the two cannot drift apart.
func ForSetup(st *setup.Setup) (*Model, error) {
	shape := st.Shape
	cfg := mock.ConfigOf(&backend.Env{Setup: st, Shape: &shape})
	if !mock.Exact(&shape) {
		// The mock runs the tiny stand-in of a shape it cannot compute
		// at full size (mock.New): the reference scores the same model.
		shape = mock.TinyShape(&shape)
	}
	return New(shape, cfg.WeightSeed)
}
