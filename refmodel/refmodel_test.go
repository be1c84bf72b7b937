package refmodel

import (
	"math"
	"sync"
	"testing"

	"statesim/backend/mock"
	"statesim/model"
)

// greedy generates n tokens after a request's prompt with the mock's
// float32 reference (the engine's arithmetic), one position at a time:
// its greedy pick at the last scored position becomes the next token.
func greedy(m *mock.Mock, seed uint64, prompt, n int) ([]int32, error) {
	toks := []int32{0}
	for len(toks) <= n {
		pts, err := m.Reference(seed, prompt, toks)
		if err != nil {
			return nil, err
		}
		toks[len(toks)-1] = pts[len(pts)-1].Greedy
		toks = append(toks, 0)
	}
	return toks[:n], nil
}

type sample struct {
	shape       string
	weightSeed  uint64
	reqSeed     uint64
	prompt, gen int
}

// samples are healthy requests over the float32 presets and a wider,
// deeper variant of the tiny hybrid, prompts from 1 token to 64.
func samples() []sample {
	var out []sample
	for i, c := range []struct {
		shape       string
		prompt, gen int
	}{{"tiny-hybrid", 1, 12}, {"tiny-hybrid", 7, 10}, {"tiny-hybrid", 64, 16}, {"tiny-attention", 5, 8}, {"tiny-attention", 40, 8}, {"wide-hybrid", 33, 8}} {
		for s := uint64(1); s <= 3; s++ {
			out = append(out, sample{c.shape, s, s*1000 + uint64(i), c.prompt, c.gen})
		}
	}
	return out
}

func shapeOf(name string) (model.Shape, error) {
	if name == "wide-hybrid" {
		s, err := model.Preset("tiny-hybrid")
		s.Name, s.NumLayers, s.HiddenSize, s.MambaDState, s.NumAttentionHeads, s.NumKVHeads = name, 8, 64, 16, 8, 2
		return s, err
	}
	return model.Preset(name)
}

// fixture is one healthy request scored by the mock's reference.
type fixture struct {
	sample
	shape model.Shape
	toks  []int32
	want  []mock.RefPoint
}

// fixtures are computed once: the mock's greedy generation is the
// costly part, and every comparison shares it.
var fixtures = sync.OnceValues(func() ([]fixture, error) {
	var out []fixture
	for _, c := range samples() {
		shape, err := shapeOf(c.shape)
		if err != nil {
			return nil, err
		}
		mk, err := mock.New(mock.Config{Shape: shape, Layout: shape.Layout(16), NumBlocks: 2, WeightSeed: c.weightSeed}, nil)
		if err != nil {
			return nil, err
		}
		toks, err := greedy(mk, c.reqSeed, c.prompt, c.gen)
		if err != nil {
			return nil, err
		}
		want, err := mk.Reference(c.reqSeed, c.prompt, toks)
		if err != nil {
			return nil, err
		}
		out = append(out, fixture{c, shape, toks, want})
	}
	return out, nil
})

// maxDelta scores every fixture with this package's reference (changed
// by perturb, when set) and returns the largest |Δ log-prob| from the
// mock's, and how many greedy picks differ.
func maxDelta(t *testing.T, perturb func(*Model)) (float64, int) {
	t.Helper()
	return scoreFixtures(t, perturb, math.Inf(1))
}

// scoreFixtures is maxDelta that stops after the first fixture whose
// largest |Δ| passes stop.
func scoreFixtures(t *testing.T, perturb func(*Model), stop float64) (float64, int) {
	t.Helper()
	fs, err := fixtures()
	if err != nil {
		t.Fatal(err)
	}
	worst, flips := 0.0, 0
	for _, f := range fs {
		ref, err := New(f.shape, f.weightSeed)
		if err != nil {
			t.Fatal(err)
		}
		if perturb != nil {
			perturb(ref)
		}
		got, err := ref.Score(ref.Prompt(f.reqSeed, f.prompt), f.toks)
		if err != nil {
			t.Fatal(err)
		}
		for k := range f.toks {
			worst = math.Max(worst, math.Abs(got[k].LogProb-f.want[k].LogProb))
			if got[k].Greedy != f.want[k].Greedy {
				flips++
			}
		}
		if worst > stop {
			break
		}
	}
	return worst, flips
}

// TestAgreesWithTheMock: on healthy requests the float64 reference and
// the mock's float32 one give every token the same log-prob within
// Tolerance, and pick the same greedy tokens.
func TestAgreesWithTheMock(t *testing.T) {
	worst, flips := maxDelta(t, nil)
	t.Logf("largest |Δ log-prob| float64 vs float32: %.3g (tolerance %g); greedy picks that differ: %d", worst, Tolerance, flips)
	if worst > Tolerance {
		t.Errorf("the references differ by %g, above the tolerance %g", worst, Tolerance)
	}
	if flips > 0 {
		t.Errorf("%d greedy picks differ", flips)
	}
}

// TestCatchesArithmeticMistakes: the comparison is not blind. Mistakes a
// port could make — a conv tap off by one, a time step without softplus,
// a missing D skip, an attention scale left out — each move some
// log-prob past the tolerance (the first fixture that shows it is
// enough).
func TestCatchesArithmeticMistakes(t *testing.T) {
	for name, mistake := range map[string]func(*Model){
		"conv taps reversed": func(m *Model) {
			for _, l := range m.layers {
				if l.mamba != nil {
					for _, row := range l.mamba.convW {
						for i, j := 0, len(row)-1; i < j; i, j = i+1, j-1 {
							row[i], row[j] = row[j], row[i]
						}
					}
				}
			}
		},
		"A doubled": func(m *Model) {
			for _, l := range m.layers {
				if l.mamba != nil {
					for _, row := range l.mamba.a {
						for i := range row {
							row[i] *= 2
						}
					}
				}
			}
		},
		"no D skip": func(m *Model) {
			for _, l := range m.layers {
				if l.mamba != nil {
					clear(l.mamba.d)
				}
			}
		},
		"KV heads swapped": func(m *Model) {
			for _, l := range m.layers {
				if l.attn != nil {
					hd := m.shape.HeadDim
					for i := 0; i < hd; i++ {
						l.attn.k[i], l.attn.k[hd+i] = l.attn.k[hd+i], l.attn.k[i]
					}
				}
			}
		},
	} {
		if worst, _ := scoreFixtures(t, mistake, Tolerance); worst <= Tolerance {
			t.Errorf("%s: largest |Δ| %g, within the tolerance: the comparison cannot see it", name, worst)
		}
	}
}

func TestPromptTokenMatchesTheMock(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		for pos := 0; pos < 70; pos++ {
			if a, b := PromptToken(seed, pos, 256), mock.PromptToken(seed, pos, 256); a != b {
				t.Fatalf("seed %d, position %d: %d, the mock %d", seed, pos, a, b)
			}
		}
	}
}

// TestAgreesWithTheMockStateKinds: for every state kind beyond Mamba1 (the
// mock's tiny stand-ins), the float64 token-by-token reference gives every
// token of a healthy request the log-prob of the mock's reference, run
// through the recurrent prefill and through the chunked one (prompts
// spanning several chunks), within Tolerance.
func TestAgreesWithTheMockStateKinds(t *testing.T) {
	worst := 0.0
	for _, kind := range []model.StateKind{model.Mamba2, model.GatedDeltaNet, model.KDA, model.LinearAttention, model.ShortConv} {
		base := model.Shape{Name: string(kind), NumLayers: 4, AttnLayerPeriod: 4, AttnLayerOffset: 2, HiddenSize: 64, VocabSize: 256,
			NumAttentionHeads: 4, NumKVHeads: 2, HeadDim: 16, DType: "bfloat16", Mixer: model.Mixer{Kind: kind}}
		shape := mock.TinyShape(&base)
		for _, chunked := range []bool{false, true} {
			mk, err := mock.New(mock.Config{Shape: shape, Layout: shape.Layout(16), NumBlocks: 2, WeightSeed: 5, ChunkedPrefill: chunked}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := New(shape, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, prompt := range []int{1, 19} {
				toks, err := greedy(mk, 77, prompt, 6)
				if err != nil {
					t.Fatal(err)
				}
				want, err := mk.Reference(77, prompt, toks)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ref.Score(ref.Prompt(77, prompt), toks)
				if err != nil {
					t.Fatal(err)
				}
				for k := range toks {
					d := math.Abs(got[k].LogProb - want[k].LogProb)
					worst = math.Max(worst, d)
					if d > Tolerance {
						t.Errorf("%s (chunked prefill %t), prompt %d, token %d: |Δ log-prob| %.3g > %g", kind, chunked, prompt, k, d, Tolerance)
					}
				}
			}
		}
	}
	t.Logf("largest |Δ log-prob| float64 vs the mock's state kinds: %.3g", worst)
}
