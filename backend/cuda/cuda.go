//go:build cuda

package cuda

import (
	"fmt"
	"os"
	"sort"

	"gorgonia.org/cu"

	"statesim/backend"
	"statesim/backend/mock"
	"statesim/kernels"
	"statesim/sched"
	"statesim/sim"
	"statesim/statecache"
)

type mambaW struct{ inProj, convW, convB, xProj, dtProj, dtBias, a, d, outProj cu.DevicePtr }
type attnW struct{ q, k, v, o cu.DevicePtr }
type layerW struct {
	norm  cu.DevicePtr
	mamba *mambaW
	attn  *attnW
}

// Backend runs batches on the GPU.
type Backend struct {
	cfg    Config
	dev    *Device
	sym    *backend.Symbolic
	ref    *mock.Mock // weights and the CPU reference run
	shadow *mock.Mock
	geo    mock.Geometry
	pack   packing
	dtRank int

	embed, finalNorm, lmHead cu.DevicePtr
	layers                   []layerW
	tensors                  []cu.DevicePtr
	vec4                     bool
	ssu16                    kernels.SSU16Variant // the d_state 16 decode kernel (SSU16Env)

	bufs   map[string]*dbuf
	reqs   map[statecache.RequestID]*inflight
	divs   []mock.Divergence
	stats  mock.Stats
	parity Parity
}

const normEps = 1e-6 // the mock's

// New uploads the mock's weights for cfg and allocates zeroed caches on
// dev, first freeing the caches of the backend dev held before. sym may be
// nil for a numeric-only run.
func New(dev *Device, cfg Config, sym *backend.Symbolic) (*Backend, error) {
	if err := cfg.check(); err != nil {
		return nil, err
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
	if dev.caches != nil {
		dev.caches.Close()
	}
	b := &Backend{cfg: cfg, dev: dev, sym: sym, ref: ref, geo: ref.Geometry(), dtRank: ref.Weights().DTRank,
		bufs: map[string]*dbuf{}, reqs: map[statecache.RequestID]*inflight{}}
	b.pack = packing{vocab: cfg.Shape.VocabSize, blockSize: b.geo.BlockSize, numBlocks: cfg.NumBlocks,
		mambaGroups: cfg.Layout.NumMambaGroups(), attnGroups: cfg.Layout.NumAttnGroups()}
	b.stats.Threshold = cfg.Threshold
	if cfg.Shadow {
		// Every request's per-token comparison is kept, for Parity.
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
	dev.caches = b
	if err := b.allocate(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// allocate uploads the weights and takes the zeroed caches.
func (b *Backend) allocate() error {
	if err := b.upload(); err != nil {
		return err
	}
	g, s := &b.geo, &b.cfg.Shape
	b.vec4 = s.MambaDState%4 == 0 && g.PageElems%4 == 0 && g.StateOffset%4 == 0
	var err error
	if b.ssu16, err = ssu16FromEnv(); err != nil {
		return err
	}
	for t := 0; t < g.NumTensors; t++ {
		n := int64(b.cfg.NumBlocks) * g.PageElems
		p, err := b.dev.Alloc(4 * n)
		if err != nil {
			return err
		}
		b.tensors = append(b.tensors, p)
		// Zeroed once at start-up, as vLLM's caches; never on free.
		if err := b.dev.Zero(p, n); err != nil {
			return err
		}
	}
	return nil
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
		// Appended before the tensors are filled, so Close frees a layer
		// whose upload failed halfway.
		b.layers = append(b.layers, l)
		lp := &b.layers[len(b.layers)-1]
		if m := lw.Mamba; m != nil {
			lp.mamba = &mambaW{}
			d := lp.mamba
			for _, x := range []struct {
				p *cu.DevicePtr
				v []float32
			}{{&d.inProj, m.InProj}, {&d.convW, m.ConvW}, {&d.convB, m.ConvB}, {&d.xProj, m.XProj}, {&d.dtProj, m.DTProj},
				{&d.dtBias, m.DTBias}, {&d.a, m.A}, {&d.d, m.D}, {&d.outProj, m.OutProj}} {
				if *x.p, err = up(x.v); err != nil {
					return err
				}
			}
		} else {
			lp.attn = &attnW{}
			a := lp.attn
			for _, x := range []struct {
				p *cu.DevicePtr
				v []float32
			}{{&a.q, lw.Attn.Q}, {&a.k, lw.Attn.K}, {&a.v, lw.Attn.V}, {&a.o, lw.Attn.O}} {
				if *x.p, err = up(x.v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Close frees the backend's device memory (the comparison it holds stays
// readable).
func (b *Backend) Close() {
	for _, p := range b.allocs() {
		b.dev.Free(p)
	}
	b.embed, b.finalNorm, b.lmHead = 0, 0, 0
	b.bufs, b.tensors, b.layers = map[string]*dbuf{}, nil, nil
	if c, ok := b.dev.caches.(*Backend); ok && c == b {
		b.dev.caches = nil
	}
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

// Execute replays the step on the symbolic backend (and the shadow mock),
// then runs the batch on the GPU.
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
	if err := b.copyBlocks(out.BlockCopies); err != nil {
		return fmt.Errorf("cuda: step %d: %w", out.Step, err)
	}
	if err := b.run(out); err != nil {
		return fmt.Errorf("cuda: step %d: %w", out.Step, err)
	}
	return nil
}

// copyBlocks refuses a step's copies-on-write: they come only from
// fine-grained prefix hits, and setup refuses prefix caching on this
// backend (it does not model shared blocks), so a copy here is a caller's
// error, not a step to run.
func (b *Backend) copyBlocks(copies []statecache.BlockCopy) error {
	if len(copies) == 0 {
		return nil
	}
	return fmt.Errorf("%d copies-on-write: the cuda backend runs no prefix caching", len(copies))
}

// run is one step on the device, in the model runner's order: pack the
// rows into the kernels' index arrays, upload them, run every layer over
// all the step's tokens, then compute and sample the sampled rows' tokens.
func (b *Backend) run(out *sched.Output) error {
	if len(out.Rows) == 0 {
		return nil
	}
	bt, err := b.pack.pack(out, b.reqs)
	if err != nil {
		return err
	}
	ix, err := b.uploadBatch(bt)
	if err != nil {
		return err
	}
	act, err := b.activations(bt.numTokens())
	if err != nil {
		return err
	}
	if err := b.forward(bt, ix, act); err != nil {
		return err
	}
	b.stats.TokensComputed += int64(bt.numTokens())
	return b.sample(bt.samples, act.hid)
}
