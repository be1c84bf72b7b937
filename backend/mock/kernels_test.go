package mock

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"statesim/model"
	"statesim/sched"
)

// hostKernels is StateKernels over caches of its own, in float64, as the
// CUDA backend's device caches stand beside the mock's: what it reads is
// only what earlier calls wrote there.
type hostKernels struct {
	geo     Geometry
	tensors map[int][]float64
	calls   int
}

func (k *hostKernels) state(tensor int, slot int32) []float64 {
	t := k.tensors[tensor]
	need := (int(slot) + 1) * int(k.geo.PageElems)
	if len(t) < need {
		t = append(t, make([]float64, need-len(t))...)
		k.tensors[tensor] = t
	}
	off := int(slot)*int(k.geo.PageElems) + int(k.geo.StateOffset)
	return t[off : off+int(k.geo.StateElems)]
}

func (k *hostKernels) Run(c *StateCall) error {
	k.calls++
	d := c.Dims
	S := make([]float64, d.StateElems())
	if c.Read >= 0 {
		copy(S, k.state(c.Tensor, c.Read))
	}
	for t := 0; t < c.N; t++ {
		for h := 0; h < d.Heads; h++ {
			for p := 0; p < d.DV; p++ {
				row := S[(h*d.DV+p)*d.DK:][:d.DK]
				base := (t*d.Heads + h) * d.DK
				var kv float64
				for i := range row {
					row[i] *= math.Exp(float64(c.Gate[base+i]))
					kv += row[i] * float64(c.K[base+i])
				}
				u := float64(c.V[(t*d.Heads+h)*d.DV+p])
				if d.Delta {
					u = float64(c.Beta[t*d.Heads+h]) * (u - kv)
				}
				var o float64
				for i := range row {
					row[i] += u * float64(c.K[base+i])
					o += row[i] * float64(c.Q[base+i])
				}
				c.O[(t*d.Heads+h)*d.DV+p] = float32(o)
			}
		}
		if c.PerToken && t < len(c.Write) {
			copy(k.state(c.Tensor, c.Write[t]), S)
		}
	}
	if !c.PerToken {
		copy(k.state(c.Tensor, c.Write[0]), S)
	}
	return nil
}

// With the recurrence handed to kernels over caches of their own (as the
// CUDA backend runs it), a GDN run under bug A's scheduler diverges on the
// same requests as the mock's own, and healthy requests stay within
// float rounding: the calls carry every slot the rows address.
func TestStateKernelsSeeTheSameSlots(t *testing.T) {
	base := model.Shape{Name: "gdn", NumLayers: 4, AttnLayerPeriod: 4, AttnLayerOffset: 2, HiddenSize: 64, VocabSize: 256,
		NumAttentionHeads: 4, NumKVHeads: 2, HeadDim: 16, DType: "bfloat16", Mixer: model.Mixer{Kind: model.GatedDeltaNet}}
	shape := TinyShape(&base)
	arr := randomArrivals(rand.New(rand.NewPCG(7, 8)), 40, 24, 12, 2)
	divergent := func(kern bool) (map[int64]Divergence, int) {
		c := engineCfg{numBlocks: 60, budget: 24, maxSeqs: 16, version: sched.V013, weightSeed: 3, shape: &shape}
		var hk *hostKernels
		if kern {
			c.kern = func(g Geometry) StateKernels { hk = &hostKernels{geo: g, tensors: map[int][]float64{}}; return hk }
		}
		e := newEngine(t, c)
		e.run(arr)
		e.mk.FlushPending()
		calls := 0
		if hk != nil {
			calls = hk.calls
		}
		return e.divergent(), calls
	}
	own, _ := divergent(false)
	got, calls := divergent(true)
	if calls == 0 {
		t.Fatal("no state call reached the kernels")
	}
	if len(own) == 0 {
		t.Fatal("no divergent request under v0.13: the schedule shows nothing")
	}
	ids := func(m map[int64]Divergence) string { return fmt.Sprint(slices.Sorted(maps.Keys(m))) }
	if ids(own) != ids(got) {
		t.Errorf("divergent with the mock's recurrence %s, with the kernels' %s", ids(own), ids(got))
	}
}
