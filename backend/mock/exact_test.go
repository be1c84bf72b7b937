package mock

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"statesim/sched"
)

// privateRun drives the net directly over a private cache, splitting a
// sequence's positions into the given chunk sizes; decodeFrom marks the
// first position from which single-token chunks take the decode kernel.
// It returns the logits at every position and the final cache pages.
type privateRun struct {
	tensors []*cache
	attn    [][]int32
	slots   []int32
}

func newPrivate(m *Mock, L int) *privateRun {
	nm, na := m.cfg.Layout.NumMambaGroups(), m.cfg.Layout.NumAttnGroups()
	nb := (L + m.geo.BlockSize - 1) / m.geo.BlockSize
	// Deliberately scattered block ids: page order must not matter.
	pages := 1 + nm + na*nb
	perm := rand.New(rand.NewPCG(1, 2)).Perm(pages - 1)
	p := &privateRun{}
	for t := 0; t < m.geo.NumTensors; t++ {
		p.tensors = append(p.tensors, newCache(int64(pages), m.geo.PageElems, chunkGeometry(&m.geo)))
	}
	k := 0
	for g := 0; g < nm; g++ {
		p.slots = append(p.slots, int32(1+perm[k]))
		k++
	}
	for a := 0; a < na; a++ {
		var bl []int32
		for i := 0; i < nb; i++ {
			bl = append(bl, int32(1+perm[k]))
			k++
		}
		p.attn = append(p.attn, bl)
	}
	return p
}

func (p *privateRun) run(t *testing.T, m *Mock, tokens []int32, chunks []int, decodeFrom int) [][]float32 {
	t.Helper()
	var out [][]float32
	pos := 0
	for _, n := range chunks {
		j := rowJob{tensors: p.tensors, attn: p.attn, slots: p.slots, ssm: m.geo.StateIndex(),
			decode: n == 1 && pos >= decodeFrom, hasInit: pos > 0, start: pos, tokens: tokens[pos : pos+n],
			logitsFrom: 0, onLogits: func(_ int, l []float32) { out = append(out, slices.Clone(l)) }}
		if err := m.net.forward(&j); err != nil {
			t.Fatal(err)
		}
		pos += n
	}
	if pos != len(tokens) {
		t.Fatalf("chunks cover %d of %d positions", pos, len(tokens))
	}
	return out
}

// statePages returns the request's Mamba pages and the KV of every
// position, in logical order, for comparison across block ids.
func (p *privateRun) logical(m *Mock, L int) []float32 {
	var out []float32
	buf := make([]float32, m.geo.PageElems)
	for _, s := range p.slots {
		base := int64(s) * m.geo.PageElems
		p.tensors[0].gather(buf[:m.geo.StateOffset+m.geo.StateElems], base)
		out = append(out, buf[:m.geo.StateOffset+m.geo.StateElems]...)
	}
	kv := m.geo.KVElems / int64(m.geo.BlockSize)
	for _, bl := range p.attn {
		for pos := 0; pos < L; pos++ {
			base := int64(bl[pos/m.geo.BlockSize])*m.geo.PageElems + int64(pos%m.geo.BlockSize)*kv
			p.tensors[0].gather(buf[:kv], base)
			out = append(out, buf[:kv]...)
			p.tensors[0].gather(buf[:kv], base+m.geo.KVElems)
			out = append(out, buf[:kv]...)
		}
	}
	return out
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func testMock(t testing.TB, numBlocks int) *Mock {
	shape := tinyShape(t)
	m, err := New(Config{Shape: shape, Layout: shape.Layout(16), NumBlocks: numBlocks, WeightSeed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// One sequence computed in one prefill, in chunks, token by token through
// the decode kernel, and token by token through the prefill kernel with
// initial state gives bit-identical logits at every position and
// bit-identical final state and KV.
func TestKernelPathsBitIdentical(t *testing.T) {
	m := testMock(t, 2)
	const L = 77
	tokens := make([]int32, L)
	for i := range tokens {
		tokens[i] = PromptToken(42, i, m.cfg.Shape.VocabSize)
	}
	ones := make([]int, L)
	for i := range ones {
		ones[i] = 1
	}
	cases := []struct {
		name       string
		chunks     []int
		decodeFrom int
	}{
		{"whole", []int{L}, L},
		{"chunks", []int{1, 7, 7, 30, 2, 1, 29}, L},
		{"decode", ones, 0}, // even the first token: the slot is zero
		{"prefill-1", ones, L},
		{"mixed", append([]int{20, 1, 1, 1, 33}, ones[:21]...), 20},
	}
	var ref [][]float32
	var refCache []float32
	for _, c := range cases {
		p := newPrivate(m, L)
		got := p.run(t, m, tokens, c.chunks, c.decodeFrom)
		cache := p.logical(m, L)
		if ref == nil {
			ref, refCache = got, cache
			continue
		}
		for i := range got {
			if !bitsEqual(got[i], ref[i]) {
				t.Fatalf("%s: logits at position %d differ from one whole prefill", c.name, i)
			}
		}
		if !bitsEqual(cache, refCache) {
			t.Fatalf("%s: final state/KV differ from one whole prefill", c.name)
		}
	}
}

// The same holds through the scheduler: one request alone, under budgets
// and versions that route it whole, chunked, token by token through the
// decode kernel (v0.14 with a budget of 1), or all through prefill.
func TestScheduledPathsBitIdentical(t *testing.T) {
	type run struct {
		name   string
		budget int
		v      sched.Version
		force  bool
	}
	var want []float64
	var wantTok []int32
	for _, r := range []run{
		{"whole", 1000, sched.Fixed, false},
		{"chunks-7", 7, sched.Fixed, false},
		{"decode-every-token", 1, sched.V014, false},
		{"prefill-every-token", 1, sched.Fixed, false},
		{"force-prefill", 5, sched.V013, true},
	} {
		e := newEngine(t, engineCfg{numBlocks: 20, budget: r.budget, version: r.v, forcePrefill: r.force, weightSeed: 3})
		e.keepRes = true
		e.run([]arrival{{prompt: 45, maxTokens: 30, seed: 9}})
		st := e.mk.Stats()
		if st.RequestsCompared != 1 || st.MaxDelta != 0 {
			t.Fatalf("%s: stats %+v, want Δ exactly 0 against the reference", r.name, st)
		}
		if r.name == "decode-every-token" && e.sym.Stats.MambaPrefillRows != 0 {
			t.Fatalf("%s: %d prefill rows, want every row on the decode path", r.name, e.sym.Stats.MambaPrefillRows)
		}
		lp, tok := e.logprobs[0], e.tokens[0]
		if want == nil {
			want, wantTok = lp, tok
			continue
		}
		if !slices.Equal(tok, wantTok) || !slices.Equal(lp, want) {
			t.Fatalf("%s: tokens/log-probs differ from the whole-prefill run:\n%v\n%v", r.name, tok, wantTok)
		}
	}
}

// Requests batched together (mixed decode, extend and prefill rows, chunked
// by a small budget) compute exactly what each computes alone.
func TestBatchedEqualsAlone(t *testing.T) {
	arr := []arrival{
		{step: 0, prompt: 50, maxTokens: 12, seed: 1},
		{step: 0, prompt: 3, maxTokens: 20, seed: 2},
		{step: 1, prompt: 17, maxTokens: 8, seed: 3},
		{step: 2, prompt: 64, maxTokens: 5, seed: 4},
		{step: 2, prompt: 1, maxTokens: 15, seed: 5},
		{step: 5, prompt: 33, maxTokens: 9, seed: 6},
	}
	for _, v := range []sched.Version{sched.Fixed, sched.V014} {
		batched := newEngine(t, engineCfg{numBlocks: 100, budget: 24, version: v, weightSeed: 5, temperature: 0.8})
		batched.keepRes = true
		batched.run(arr)
		if batched.rec.Total() != 0 || batched.mk.Stats().MaxDelta != 0 {
			t.Fatalf("%s: batched run not clean: %v, %+v", v, batched.viol, batched.mk.Stats())
		}
		for i, a := range arr {
			alone := newEngine(t, engineCfg{numBlocks: 100, budget: 1000, version: v, weightSeed: 5, temperature: 0.8})
			alone.keepRes = true
			a.step = 0
			alone.run([]arrival{a})
			id := int64(i)
			if !slices.Equal(alone.tokens[0], batched.tokens[id]) || !slices.Equal(alone.logprobs[0], batched.logprobs[id]) {
				t.Fatalf("%s: request %d batched differs from alone:\n%v\n%v", v, i, batched.tokens[id], alone.tokens[0])
			}
		}
	}
}
