//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"gorgonia.org/cu"

	"statesim/backend"
	"statesim/backend/mock"
	"statesim/kernels"
	"statesim/model"
	"statesim/sched"
	"statesim/sim"
)

// StateBackend runs the state kinds beyond Mamba1 (Mamba2, GDN, KDA,
// linear attention) and speculative decoding: the mock's tiny stand-in
// with every state layer's recurrence (the initial state's read, the
// decode kernel token by token or the prefill's chunked scan, the writes
// to the slot or to each draft's state column) run by the kernels of
// kernels/state.cu over recurrent-state caches in device memory, the
// state's address formed on the device from the slot. Projections, conv
// and attention stay the mock's, on the CPU; the mock engine runs in its
// shadow for parity.
type StateBackend struct {
	*mock.Mock
	kern   *stateKernels
	shadow *mock.Mock
}

var (
	_ backend.Backend  = (*StateBackend)(nil)
	_ backend.Finisher = (*StateBackend)(nil)
	_ backend.Flusher  = (*StateBackend)(nil)
	_ backend.Differ   = (*StateBackend)(nil)
	_ backend.Extra    = (*StateBackend)(nil)
)

// usesStateKernels: a shape whose state kind is not Mamba1, or drafts
// (the full-GPU engine models neither).
func usesStateKernels(env *backend.Env) bool {
	return env.Shape.NumMambaLayers() > 0 && env.Shape.StateKind() != model.Mamba1 || env.Setup.Spec.On()
}

// NewStateBackend builds the hybrid engine on dev.
func NewStateBackend(dev *Device, env *backend.Env) (*StateBackend, error) {
	if env.Shape.NumMambaLayers() > 0 && env.Shape.StateKind() == model.Mamba1 {
		return nil, fmt.Errorf("cuda: speculative decoding on a Mamba1 model: the GPU runs drafts for Mamba2, GDN, KDA and linear attention only; use backend.kind mock")
	}
	cfg := mock.ConfigOf(env)
	ids := make([]int64, 1<<16)
	for i := range ids {
		ids[i] = int64(i)
	}
	cfg.TraceIDs = ids
	k := &stateKernels{dev: dev, bufs: map[string]*dbuf{}}
	gpu := cfg
	gpu.StateKernels = k
	m, err := mock.New(gpu, env.Sym)
	if err != nil {
		return nil, err
	}
	shadow, err := mock.New(cfg, nil)
	if err != nil {
		return nil, err
	}
	k.geo = m.Geometry()
	if dev.caches != nil {
		dev.caches.Close()
	}
	n := int64(cfg.NumBlocks) * k.geo.PageElems
	for t := 0; t < k.geo.NumTensors; t++ {
		p, err := dev.Alloc(4 * n)
		if err != nil {
			k.free()
			return nil, err
		}
		k.tensors = append(k.tensors, p)
		// Zeroed once, as vLLM's caches; never on free.
		if err := dev.Zero(p, n); err != nil {
			k.free()
			return nil, err
		}
	}
	dev.caches = k
	return &StateBackend{Mock: m, kern: k, shadow: shadow}, nil
}

func (b *StateBackend) Name() string { return "cuda" }

// Execute runs the step on the GPU engine, then on the mock in its shadow.
func (b *StateBackend) Execute(out *sched.Output, now sim.Time) error {
	if err := b.Mock.Execute(out, now); err != nil {
		return err
	}
	return b.shadow.Execute(out, now)
}

func (b *StateBackend) Finish(r *sched.Request) {
	b.Mock.Finish(r)
	b.shadow.Finish(r)
}

func (b *StateBackend) FlushPending() {
	b.Mock.FlushPending()
	b.shadow.FlushPending()
}

// ReportExtra is the cuda section: the device, the shadow's comparison
// with the reference and the GPU engine's parity with it, token by token
// up to the first token where the two sampled different ids.
func (b *StateBackend) ReportExtra() (string, any) {
	b.FlushPending()
	st := b.shadow.Stats()
	par := &Parity{}
	for id := int64(0); id < 1<<16; id++ {
		g, ok1 := b.Mock.Trace(id)
		s, ok2 := b.shadow.Trace(id)
		if !ok1 || !ok2 {
			continue
		}
		for i := range min(len(g.Tokens), len(s.Tokens)) {
			if g.Tokens[i].EngineToken != s.Tokens[i].EngineToken {
				par.TokenMismatches++
				break
			}
			par.TokensCompared++
			par.MaxDelta = max(par.MaxDelta, math.Abs(g.Tokens[i].EngineLogProb-s.Tokens[i].EngineLogProb))
		}
	}
	return "cuda", Summary{Device: b.kern.dev.Name, IndexBits: 64, ShadowStats: &st, ShadowDivergences: b.shadow.Divergences(),
		Parity: par, StateKernelLaunches: b.kern.launches}
}

// stateKernels is mock.StateKernels on the device: one buffer per raw
// tensor of the mock's pages (numBlocks × PageElems float32), of which the
// kernels use each page's recurrent state.
type stateKernels struct {
	dev      *Device
	geo      mock.Geometry
	tensors  []cu.DevicePtr
	bufs     map[string]*dbuf
	launches int64
}

// Close frees the caches (a later backend on the device takes over).
func (k *stateKernels) Close() {
	k.free()
	if k.dev.caches == k {
		k.dev.caches = nil
	}
}

func (k *stateKernels) free() {
	for _, p := range k.tensors {
		k.dev.Free(p)
	}
	k.tensors = nil
	for _, x := range k.bufs {
		if x.p != 0 {
			k.dev.Free(x.p)
		}
	}
	k.bufs = map[string]*dbuf{}
}

// Run launches the call's kernel: the recurrent one on the decode path
// (gdn_recurrent_decode with the delta rule, mamba2_state_update
// without), the chunked one on the prefill path (gdn_chunk_prefill,
// mamba2_ssd_scan), and reads the outputs back.
func (k *stateKernels) Run(c *mock.StateCall) error {
	d := c.Dims
	if d.DK%4 != 0 || d.DK > kernels.StateMaxDK || d.DV > kernels.StateChunkThreads || k.geo.PageElems%4 != 0 || k.geo.StateOffset%4 != 0 {
		return fmt.Errorf("cuda: state of %d×%d×%d at element %d of %d-element pages: the state kernels take dk a multiple of 4 up to %d, dv up to %d, 16-byte aligned pages",
			d.Heads, d.DV, d.DK, k.geo.StateOffset, k.geo.PageElems, kernels.StateMaxDK, kernels.StateChunkThreads)
	}
	if c.Tensor < 0 || c.Tensor >= len(k.tensors) || len(c.Write) == 0 {
		return fmt.Errorf("cuda: state call on tensor %d with %d write slots", c.Tensor, len(c.Write))
	}
	var in [5]cu.DevicePtr // q, k, v, g, beta
	for i, x := range [][]float32{c.Q, c.K, c.V, c.Gate, c.Beta} {
		p, err := putIn(k.dev, k.bufs, fmt.Sprint("in", i), x)
		if err != nil {
			return err
		}
		in[i] = p
	}
	q, kk, v, g, beta := in[0], in[1], in[2], in[3], in[4]
	o, err := growBuf(k.dev, k.bufs, "o", int64(4*len(c.O)))
	if err != nil {
		return err
	}
	seq, err := putIn(k.dev, k.bufs, "cu_seqlens", []int32{0, int32(c.N)})
	if err != nil {
		return err
	}
	rd, err := putIn(k.dev, k.bufs, "read_slot", []int32{c.Read})
	if err != nil {
		return err
	}
	wr, err := putIn(k.dev, k.bufs, "write_slots", c.Write)
	if err != nil {
		return err
	}
	state, page, off := k.tensors[c.Tensor], k.geo.PageElems, k.geo.StateOffset
	perToken := 0
	if c.PerToken {
		perToken = 1
	}
	if c.Decode {
		name := "mamba2_state_update"
		if d.Delta {
			name = "gdn_recurrent_decode"
		}
		err = k.dev.Launch(name, [3]int{1, d.Heads, (d.DV + kernels.StateRecRows - 1) / kernels.StateRecRows}, [3]int{kernels.StateRecThreads, 1, 1}, 0,
			state, page, off, seq, rd, wr, len(c.Write), perToken, q, kk, v, g, beta, 1, o, d.Heads, d.DK, d.DV)
	} else {
		if c.PerToken {
			return fmt.Errorf("cuda: a prefill writes one final state")
		}
		name := "mamba2_ssd_scan"
		if d.Delta {
			name = "gdn_chunk_prefill"
		}
		l := min(mock.TinyChunk, kernels.StateMaxChunk)
		err = k.dev.Launch(name, [3]int{1, d.Heads, 1}, [3]int{kernels.StateChunkThreads, 1, 1}, kernels.StateChunkShared(l, d.DK),
			state, page, off, seq, rd, wr, q, kk, v, g, beta, 1, o, d.Heads, d.DK, d.DV, l)
	}
	if err != nil {
		return err
	}
	k.launches++
	return Download(c.O, o)
}
