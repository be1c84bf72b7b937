//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"os"
	"sort"
	"unsafe"

	"gorgonia.org/cu"

	"statesim/backend"
	"statesim/backend/mock"
	"statesim/kernels"
	"statesim/model"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

// Config is what the backend needs from the scenario; the fields mean
// what they mean for mock.Config.
type Config struct {
	Shape       model.Shape
	Layout      model.Layout
	NumBlocks   int
	IndexBits   uint // 32 (bug B) or 64
	WeightSeed  uint64
	Temperature float64
	Threshold   float64
	// Shadow also runs the mock backend on every batch, so that the GPU's
	// log-probs can be compared with the mock engine's token by token.
	Shadow bool
}

// Parity compares the GPU engine with the mock engine run in the shadow,
// per generated token, up to the first token where the two sampled
// different ids (after which the sequences differ).
type Parity struct {
	TokensCompared int64   `json:"tokens_compared"`
	MaxDelta       float64 `json:"max_abs_delta_logprob"`
	// TokenMismatches counts requests whose sampled ids differ somewhere.
	TokenMismatches int64 `json:"token_mismatches"`
}

// Summary is the backend's report section.
type Summary struct {
	Device      string            `json:"device"`
	IndexBits   uint              `json:"index_bits"`
	Stats       mock.Stats        `json:"stats"`
	Divergences []mock.Divergence `json:"divergences"`
	// Shadow* are the mock engine's own comparison with its reference,
	// and Parity the GPU-against-mock comparison (Config.Shadow only).
	ShadowStats       *mock.Stats       `json:"shadow_stats,omitempty"`
	ShadowDivergences []mock.Divergence `json:"shadow_divergences,omitempty"`
	Parity            *Parity           `json:"parity,omitempty"`
}

type mambaW struct{ inProj, convW, convB, xProj, dtProj, dtBias, a, d, outProj cu.DevicePtr }
type attnW struct{ q, k, v, o cu.DevicePtr }
type layerW struct {
	norm  cu.DevicePtr
	mamba *mambaW
	attn  *attnW
}

// dbuf is a device buffer that grows.
type dbuf struct {
	p cu.DevicePtr
	n int64 // bytes
}

// reqData is what the GPU engine produced for one request in flight.
type reqData = mock.Generated

// Backend runs batches on the GPU.
type Backend struct {
	cfg    Config
	dev    *Device
	sym    *backend.Symbolic
	ref    *mock.Mock // weights and the CPU reference run
	shadow *mock.Mock
	geo    mock.Geometry
	dtRank int

	embed, finalNorm, lmHead cu.DevicePtr
	layers                   []layerW
	tensors                  []cu.DevicePtr
	vec4                     bool
	ssu16                    kernels.SSU16Variant // the d_state 16 decode kernel (SSU16Env)

	bufs   map[string]*dbuf
	reqs   map[statecache.RequestID]*reqData
	divs   []mock.Divergence
	stats  mock.Stats
	parity Parity
}

var _ backend.Backend = (*Backend)(nil)
var _ backend.Finisher = (*Backend)(nil)

const normEps = 1e-6 // the mock's

// New uploads the mock's weights for cfg and allocates zeroed caches on
// dev. sym may be nil for a numeric-only run.
func New(dev *Device, cfg Config, sym *backend.Symbolic) (*Backend, error) {
	if cfg.IndexBits != 32 && cfg.IndexBits != 64 {
		return nil, fmt.Errorf("cuda: state_index_bits %d: the kernels index the state in 32 (bug B) or 64 bits only", cfg.IndexBits)
	}
	s := &cfg.Shape
	if s.NumMambaLayers() > 0 && (s.MambaDState != 4 && s.MambaDState != 8 && s.MambaDState != 16 || s.MambaDConv > 8) {
		return nil, fmt.Errorf("cuda: d_state %d, d_conv %d: the kernels take d_state 4, 8 or 16 and d_conv ≤ 8", s.MambaDState, s.MambaDConv)
	}
	if s.NumAttentionLayers() > 0 && s.HeadDim > 128 {
		return nil, fmt.Errorf("cuda: head_dim %d: the attention kernel takes at most 128", s.HeadDim)
	}
	// The mock with no symbolic backend and a two-page pool: only its
	// weights and its reference run (private caches) are used.
	ref, err := mock.New(mock.Config{Shape: cfg.Shape, Layout: cfg.Layout, NumBlocks: 2, IndexBits: 64,
		WeightSeed: cfg.WeightSeed, Temperature: cfg.Temperature, Threshold: cfg.Threshold}, nil)
	if err != nil {
		return nil, err
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = mock.DefaultThreshold
	}
	b := &Backend{cfg: cfg, dev: dev, sym: sym, ref: ref, geo: ref.Geometry(), dtRank: ref.Weights().DTRank,
		bufs: map[string]*dbuf{}, reqs: map[statecache.RequestID]*reqData{}}
	b.stats.Threshold = cfg.Threshold
	if cfg.Shadow {
		ids := make([]int64, 1<<16)
		for i := range ids {
			ids[i] = int64(i)
		}
		b.shadow, err = mock.New(mock.Config{Shape: cfg.Shape, Layout: cfg.Layout, NumBlocks: cfg.NumBlocks, IndexBits: cfg.IndexBits,
			WeightSeed: cfg.WeightSeed, Temperature: cfg.Temperature, Threshold: cfg.Threshold, TraceIDs: ids}, nil)
		if err != nil {
			return nil, err
		}
	}
	if err := b.upload(); err != nil {
		b.Close()
		return nil, err
	}
	g := &b.geo
	b.vec4 = s.MambaDState%4 == 0 && g.PageElems%4 == 0 && g.StateOffset%4 == 0
	if b.ssu16, err = ssu16FromEnv(); err != nil {
		b.Close()
		return nil, err
	}
	for t := 0; t < g.NumTensors; t++ {
		n := int64(cfg.NumBlocks) * g.PageElems
		p, err := dev.Alloc(4 * n)
		if err != nil {
			b.Close()
			return nil, err
		}
		// Zeroed once at start-up, as vLLM's caches; never on free.
		if err := dev.Zero(p, n); err != nil {
			b.Close()
			return nil, err
		}
		b.tensors = append(b.tensors, p)
	}
	return b, nil
}

func (b *Backend) upload() error {
	w := b.ref.Weights()
	up := func(v []float32) (cu.DevicePtr, error) { return NewBuffer(b.dev, v) }
	var err error
	if b.embed, err = up(w.Embed); err != nil {
		return err
	}
	if b.finalNorm, err = up(w.FinalNorm); err != nil {
		return err
	}
	if b.lmHead, err = up(w.LMHead); err != nil {
		return err
	}
	for _, lw := range w.Layers {
		var l layerW
		if l.norm, err = up(lw.Norm); err != nil {
			return err
		}
		if m := lw.Mamba; m != nil {
			d := &mambaW{}
			for _, x := range []struct {
				p *cu.DevicePtr
				v []float32
			}{{&d.inProj, m.InProj}, {&d.convW, m.ConvW}, {&d.convB, m.ConvB}, {&d.xProj, m.XProj}, {&d.dtProj, m.DTProj},
				{&d.dtBias, m.DTBias}, {&d.a, m.A}, {&d.d, m.D}, {&d.outProj, m.OutProj}} {
				if *x.p, err = up(x.v); err != nil {
					return err
				}
			}
			l.mamba = d
		} else {
			a := &attnW{}
			for _, x := range []struct {
				p *cu.DevicePtr
				v []float32
			}{{&a.q, lw.Attn.Q}, {&a.k, lw.Attn.K}, {&a.v, lw.Attn.V}, {&a.o, lw.Attn.O}} {
				if *x.p, err = up(x.v); err != nil {
					return err
				}
			}
			l.attn = a
		}
		b.layers = append(b.layers, l)
	}
	return nil
}

// Close frees the backend's device memory.
func (b *Backend) Close() {
	for _, p := range b.allocs() {
		b.dev.Free(p)
	}
	b.bufs, b.tensors, b.layers = map[string]*dbuf{}, nil, nil
}

func (b *Backend) allocs() []cu.DevicePtr {
	var out []cu.DevicePtr
	add := func(p cu.DevicePtr) {
		if p != 0 {
			out = append(out, p)
		}
	}
	add(b.embed)
	add(b.finalNorm)
	add(b.lmHead)
	for _, l := range b.layers {
		add(l.norm)
		if m := l.mamba; m != nil {
			for _, p := range []cu.DevicePtr{m.inProj, m.convW, m.convB, m.xProj, m.dtProj, m.dtBias, m.a, m.d, m.outProj} {
				add(p)
			}
		}
		if a := l.attn; a != nil {
			for _, p := range []cu.DevicePtr{a.q, a.k, a.v, a.o} {
				add(p)
			}
		}
	}
	for _, p := range b.tensors {
		add(p)
	}
	names := make([]string, 0, len(b.bufs))
	for n := range b.bufs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(b.bufs[n].p)
	}
	return out
}

func (b *Backend) Name() string { return "cuda" }

// SSU16Env names the environment variable that forces the d_state 16
// decode kernel: "n16" or "b16"; unset, empty or "auto" leaves the choice to
// kernels.SSU16Launch (by size). It exists so that `gpu-confirm` can check
// parity through _b16 on models too small for the size rule to pick it.
const SSU16Env = "STATESIM_SSU16"

func ssu16FromEnv() (kernels.SSU16Variant, error) {
	switch v := os.Getenv(SSU16Env); v {
	case "", "auto":
		return kernels.SSU16Auto, nil
	case "n16":
		return kernels.SSU16Slab, nil
	case "b16":
		return kernels.SSU16Bulk, nil
	default:
		return 0, fmt.Errorf("cuda: %s=%q: want n16, b16 or auto", SSU16Env, v)
	}
}

// Tensors are the raw cache tensors on the device.
func (b *Backend) Tensors() []cu.DevicePtr { return b.tensors }

// buf returns scratch buffer name with room for n bytes.
func (b *Backend) buf(name string, n int64) (cu.DevicePtr, error) {
	x := b.bufs[name]
	if x == nil {
		x = &dbuf{}
		b.bufs[name] = x
	}
	if n > x.n {
		if x.p != 0 {
			b.dev.Free(x.p)
			x.p, x.n = 0, 0
		}
		c := max(n+n/2, 1024)
		p, err := b.dev.Alloc(c)
		if err != nil {
			return 0, err
		}
		x.p, x.n = p, c
	}
	return x.p, nil
}

// put uploads v into scratch buffer name.
func put[T int32 | int64 | float32](b *Backend, name string, v []T) (cu.DevicePtr, error) {
	var z T
	p, err := b.buf(name, int64(len(v))*int64(unsafe.Sizeof(z)))
	if err != nil {
		return 0, err
	}
	return p, Upload(p, v)
}

// sample is one row that produces a token this step.
type sample struct {
	rd   *reqData
	tok  int // batch token index whose logits are needed
	pos  int // the position of the token sampled (c+q)
	step int64
}

// Execute replays the step on the symbolic backend (and the shadow mock),
// then runs the batch on the GPU: every layer over all the step's tokens,
// the Mamba layers split into the decode rows (state update kernels) and
// the prefill rows (scan kernels), as the model runner splits them.
func (b *Backend) Execute(out *sched.Output, now sim.Time) error {
	if b.sym != nil {
		if err := b.sym.Execute(out, now); err != nil {
			return err
		}
	}
	if b.shadow != nil {
		if err := b.shadow.Execute(out, now); err != nil {
			return err
		}
	}
	if err := b.run(out); err != nil {
		return fmt.Errorf("cuda: step %d: %w", out.Step, err)
	}
	return nil
}

func (b *Backend) run(out *sched.Output) error {
	s := &b.cfg.Shape
	g := &b.geo
	H, V := s.HiddenSize, s.VocabSize
	nr := len(out.Rows)
	if nr == 0 {
		return nil
	}
	nm, na := b.cfg.Layout.NumMambaGroups(), b.cfg.Layout.NumAttnGroups()
	bs := g.BlockSize
	qsl := make([]int32, nr+1)
	hasInit := make([]int32, nr)
	var dRows, pRows, tokens, tokRow, tokPos []int32
	cacheIdx := make([]int32, nm*nr)
	maxB := 1
	var samples []sample
	for i := range out.Rows {
		row := &out.Rows[i]
		r := row.Req
		rd := b.reqs[r.ID]
		if rd == nil {
			rd = &reqData{Seed: r.Seed, Prompt: r.NumPromptTokens}
			b.reqs[r.ID] = rd
		}
		if len(rd.Tokens) != r.NumOutputTokens || rd.Prompt != r.NumPromptTokens {
			return fmt.Errorf("request %d: engine holds %d+%d tokens, the backend %d+%d", r.ID, r.NumPromptTokens, r.NumOutputTokens, rd.Prompt, len(rd.Tokens))
		}
		c, q := row.NumComputed, row.NumScheduled
		if q <= 0 || c+q > r.NumTokens() {
			return fmt.Errorf("request %d: scheduled positions [%d, %d) outside the %d known tokens", r.ID, c, c+q, r.NumTokens())
		}
		qsl[i] = int32(len(tokens))
		for p := c; p < c+q; p++ {
			tokens = append(tokens, rd.TokenAt(p, V))
			tokRow = append(tokRow, int32(i))
			tokPos = append(tokPos, int32(p))
		}
		if row.HasInitialState {
			hasInit[i] = 1
		}
		if row.Path == sched.PathDecode {
			if q != 1 {
				return fmt.Errorf("request %d: %d tokens on the decode path", r.ID, q)
			}
			dRows = append(dRows, int32(i))
		} else {
			pRows = append(pRows, int32(i))
		}
		if nm > 0 && len(r.Blocks.Mamba) != nm {
			return fmt.Errorf("request %d holds %d state slots for %d Mamba groups", r.ID, len(r.Blocks.Mamba), nm)
		}
		for gi, slot := range r.Blocks.Mamba {
			if slot <= statecache.NullBlock || int(slot) >= b.cfg.NumBlocks {
				return fmt.Errorf("request %d: state slot %d outside the pool of %d", r.ID, slot, b.cfg.NumBlocks)
			}
			cacheIdx[gi*nr+i] = slot
		}
		maxB = max(maxB, ceilDiv(c+q, bs))
		if r.Status == sched.Running && c+q >= r.NumTokens() {
			samples = append(samples, sample{rd: rd, tok: len(tokens) - 1, pos: c + q, step: out.Step})
		}
	}
	qsl[nr] = int32(len(tokens))
	T := len(tokens)
	// The decode kernels take each decode row's token and slots directly.
	dTok := make([]int32, len(dRows))
	dSlot := make([]int32, nm*len(dRows))
	for k, i := range dRows {
		dTok[k] = qsl[i]
		for gi := 0; gi < nm; gi++ {
			dSlot[gi*len(dRows)+k] = cacheIdx[gi*nr+int(i)]
		}
	}
	// Attention block tables and slot mappings, per attention group.
	bt := make([]int32, na*nr*maxB)
	slotMap := make([]int64, na*T)
	for i := range out.Rows {
		r := out.Rows[i].Req
		if len(r.Blocks.Attn) != na {
			return fmt.Errorf("request %d holds %d attention block tables for %d groups", r.ID, len(r.Blocks.Attn), na)
		}
		end := out.Rows[i].NumComputed + out.Rows[i].NumScheduled
		for gi, blocks := range r.Blocks.Attn {
			need := ceilDiv(end, bs)
			if len(blocks) < need {
				return fmt.Errorf("request %d: %d positions need %d attention blocks, the table holds %d", r.ID, end, need, len(blocks))
			}
			for j, blk := range blocks[:need] {
				if blk <= statecache.NullBlock || int(blk) >= b.cfg.NumBlocks {
					return fmt.Errorf("request %d: attention block %d outside the pool of %d", r.ID, blk, b.cfg.NumBlocks)
				}
				bt[(gi*nr+i)*maxB+j] = blk
			}
		}
	}
	for t := 0; t < T; t++ {
		r := out.Rows[tokRow[t]].Req
		p := int(tokPos[t])
		for gi, blocks := range r.Blocks.Attn {
			slotMap[gi*T+t] = int64(blocks[p/bs])*int64(bs) + int64(p%bs)
		}
	}

	up := []struct {
		name string
		v    []int32
	}{{"qsl", qsl}, {"hasInit", hasInit}, {"dRows", dRows}, {"pRows", pRows}, {"tokens", tokens},
		{"tokRow", tokRow}, {"tokPos", tokPos}, {"cacheIdx", cacheIdx}, {"bt", bt}, {"dTok", dTok}, {"dSlot", dSlot}}
	P := map[string]cu.DevicePtr{}
	for _, u := range up {
		p, err := put(b, u.name, u.v)
		if err != nil {
			return err
		}
		P[u.name] = p
	}
	pSlot, err := put(b, "slotMap", slotMap)
	if err != nil {
		return err
	}
	di, N, K, R := s.DInner(), s.MambaDState, s.MambaDConv, b.dtRank
	nh, nkv, hd := s.NumAttentionHeads, s.NumKVHeads, s.HeadDim
	f32 := func(name string, n int) (cu.DevicePtr, error) { return b.buf(name, 4*int64(max(n, 1))) }
	var hid, nrm, mix, xz, xc, dbc, dtp, y, q, k, v, o cu.DevicePtr
	for _, x := range []struct {
		p *cu.DevicePtr
		n string
		c int
	}{{&hid, "hid", T * H}, {&nrm, "nrm", T * H}, {&mix, "mix", T * H}, {&xz, "xz", T * 2 * di}, {&xc, "xc", T * di},
		{&dbc, "dbc", T * (R + 2*N)}, {&dtp, "dtp", T * di}, {&y, "y", T * di}, {&q, "q", T * nh * hd},
		{&k, "k", T * nkv * hd}, {&v, "v", T * nkv * hd}, {&o, "o", T * nh * hd}} {
		if *x.p, err = f32(x.n, x.c); err != nil {
			return err
		}
	}
	d := b.dev
	blk := [3]int{128, 1, 1}
	mm := func(yp, xp, wp cu.DevicePtr, n, outN, in, ldx, ldy int) error {
		return d.Launch("matmul_nt", [3]int{ceilDiv(outN, 16), ceilDiv(n, 16), 1}, [3]int{16, 16, 1}, 0,
			yp, xp, wp, n, outN, in, ldx, ldy)
	}
	if err := d.Launch("embed_tokens", [3]int{T, 1, 1}, blk, 0, hid, b.embed, P["tokens"], H); err != nil {
		return err
	}
	nd, np := len(dRows), len(pRows)
	for li, l := range b.layers {
		tensor := b.tensors[g.LayerTensor[li]]
		gi := g.LayerGroup[li]
		if err := d.Launch("rms_norm", [3]int{T, 1, 1}, blk, 0, nrm, hid, l.norm, cu.DevicePtr(0), H, float32(normEps)); err != nil {
			return err
		}
		if m := l.mamba; m != nil {
			ci := P["cacheIdx"] + cu.DevicePtr(4*gi*nr)
			ds := P["dSlot"] + cu.DevicePtr(4*gi*nd)
			states := tensor + cu.DevicePtr(4*g.StateOffset)
			steps := []func() error{
				func() error { return mm(xz, nrm, m.inProj, T, 2*di, H, H, 2*di) },
				func() error {
					return d.Launch("causal_conv1d_update", [3]int{ceilDiv(di, 128), nd, 1}, blk, 0,
						xc, xz, 2*di, m.convW, m.convB, tensor, g.PageElems, P["dRows"], P["qsl"], ci, di, K)
				},
				func() error {
					return d.Launch("causal_conv1d_fwd", [3]int{ceilDiv(di, 128), np, 1}, blk, 0,
						xc, xz, 2*di, m.convW, m.convB, tensor, g.PageElems, P["pRows"], P["qsl"], ci, P["hasInit"], di, K)
				},
				func() error { return mm(dbc, xc, m.xProj, T, R+2*N, di, di, R+2*N) },
				func() error { return mm(dtp, dbc, m.dtProj, T, di, R, R+2*N, di) },
				func() error {
					switch {
					case b.vec4 && N == 16:
						name, bx, gy, threads, rpb := kernels.SSU16Launch(nd, di, d.SMs, b.ssu16)
						return d.Launch(name, [3]int{bx, gy, 1}, [3]int{threads, 1, 1}, 0,
							y, xc, dtp, dbc, R+2*N, R, xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
							P["dTok"], ds, nd, rpb, di)
					default:
						name, vec := "selective_state_update_v1", 1
						if b.vec4 {
							name, vec = "selective_state_update_v4", 4
						}
						bx := ceilDiv(di*N/vec, 128)
						gy, rpb := kernels.SSUGrid(nd, bx, kernels.SSUBlocksPerSM, d.SMs)
						return d.Launch(name, [3]int{bx, gy, 1}, blk, 0,
							y, xc, dtp, dbc, R+2*N, R, xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
							P["dTok"], ds, nd, rpb, di, N)
					}
				},
				func() error {
					name := "selective_scan_fwd_u64"
					if b.cfg.IndexBits == 32 {
						name = "selective_scan_fwd_u32"
					}
					return d.Launch(name, [3]int{ceilDiv(di, 128), np, 1}, blk, 0,
						y, xc, dtp, dbc, R+2*N, R, xz, 2*di, m.a, m.d, m.dtBias, states, g.PageElems,
						P["pRows"], P["qsl"], ci, P["hasInit"], di, N)
				},
				func() error { return mm(mix, y, m.outProj, T, H, di, di, H) },
			}
			for _, st := range steps {
				if err := st(); err != nil {
					return fmt.Errorf("layer %d: %w", li, err)
				}
			}
		} else {
			a := l.attn
			qd, kvd := nh*hd, nkv*hd
			btg := P["bt"] + cu.DevicePtr(4*gi*nr*maxB)
			sm := pSlot + cu.DevicePtr(8*gi*T)
			steps := []func() error{
				func() error { return mm(q, nrm, a.q, T, qd, H, H, qd) },
				func() error { return mm(k, nrm, a.k, T, kvd, H, H, kvd) },
				func() error { return mm(v, nrm, a.v, T, kvd, H, H, kvd) },
				func() error {
					return d.Launch("reshape_and_cache", [3]int{T, 1, 1}, blk, 0, tensor, k, v, sm, kvd, bs, g.PageElems, g.KVElems)
				},
				func() error {
					return d.Launch("paged_attention", [3]int{T, nh, 1}, [3]int{32, 1, 1}, 0, o, q, tensor, btg, maxB,
						P["tokRow"], P["tokPos"], nh, nkv, hd, bs, g.PageElems, g.KVElems, float32(1/math.Sqrt(float64(hd))))
				},
				func() error { return mm(mix, o, a.o, T, H, qd, qd, H) },
			}
			for _, st := range steps {
				if err := st(); err != nil {
					return fmt.Errorf("layer %d: %w", li, err)
				}
			}
		}
		if err := d.Launch("add_inplace", [3]int{ceilDiv(T*H, 256), 1, 1}, [3]int{256, 1, 1}, 0, hid, mix, int64(T*H)); err != nil {
			return err
		}
	}
	b.stats.TokensComputed += int64(T)
	if len(samples) == 0 {
		return nil
	}
	S := len(samples)
	idx := make([]int32, S)
	for i, sp := range samples {
		idx[i] = int32(sp.tok)
	}
	pIdx, err := put(b, "sampleIdx", idx)
	if err != nil {
		return err
	}
	normed, err := f32("normed", S*H)
	if err != nil {
		return err
	}
	logits, err := f32("logits", S*V)
	if err != nil {
		return err
	}
	logp, err := f32("logp", S*V)
	if err != nil {
		return err
	}
	if err := d.Launch("rms_norm", [3]int{S, 1, 1}, blk, 0, normed, hid, b.finalNorm, pIdx, H, float32(normEps)); err != nil {
		return err
	}
	if err := mm(logits, normed, b.lmHead, S, V, H, H, V); err != nil {
		return err
	}
	if err := d.Launch("log_softmax", [3]int{S, 1, 1}, [3]int{256, 1, 1}, 0, logp, logits, V); err != nil {
		return err
	}
	host := make([]float32, S*V)
	if err := Download(host, logp); err != nil {
		return err
	}
	for i, sp := range samples {
		lp := host[i*V : (i+1)*V]
		// Sampling is shift-invariant, so log-probs stand in for logits.
		tok := mock.Sample(lp, b.cfg.Temperature, sp.rd.Seed, sp.pos)
		sp.rd.Tokens = append(sp.rd.Tokens, tok)
		sp.rd.LogProbs = append(sp.rd.LogProbs, float64(lp[tok]))
		sp.rd.Steps = append(sp.rd.Steps, sp.step)
	}
	b.stats.TokensSampled += int64(S)
	return nil
}
