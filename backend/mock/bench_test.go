package mock

import (
	"math/rand/v2"
	"testing"

	"statesim/sched"
)

// BenchmarkEngine runs a fixed workload (64 requests, prompts of 1..200
// tokens, 1..64 outputs, budget 512) through scheduler, symbolic and mock
// backends, reference runs and diffs included, and reports throughput in
// forward tokens per second: engine tokens (tok/s) and engine plus
// reference tokens (all-tok/s).
func BenchmarkEngine(b *testing.B) {
	var eng, all int64
	for i := 0; i < b.N; i++ {
		forgetReferences() // each iteration pays for its reference runs
		rng := rand.New(rand.NewPCG(1, 1))
		e := newEngine(b, engineCfg{numBlocks: 400, budget: 512, maxSeqs: 64, version: sched.Fixed})
		e.run(randomArrivals(rng, 64, 200, 64, 1))
		st := e.mk.Stats()
		eng += st.TokensComputed
		all += st.TokensComputed + st.ReferenceTokens
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(eng)/s, "tok/s")
	b.ReportMetric(float64(all)/s, "all-tok/s")
}

// BenchmarkDecodeStep is one decode token of the tiny model (the Mamba and
// attention kernels at a 100-token context), without scheduling.
func BenchmarkDecodeStep(b *testing.B) {
	m := testMock(b, 2)
	p := newPrivate(m, 256)
	tok := []int32{5}
	for i := 0; i < b.N; i++ {
		j := rowJob{tensors: p.tensors, attn: p.attn, slots: p.slots, ssm: m.geo.StateIndex(),
			decode: true, hasInit: true, start: 100, tokens: tok, logitsFrom: 0, onLogits: func(int, []float32) {}}
		if err := m.net.forward(&j); err != nil {
			b.Fatal(err)
		}
	}
}

// forgetReferences empties the Reference memo.
func forgetReferences() {
	references.Lock()
	references.byKey = nil
	references.Unlock()
}

// BenchmarkLogSumExp is one log-sum-exp over the tiny model's 256 logits:
// every sampled token and every reference position pays one.
func BenchmarkLogSumExp(b *testing.B) {
	l := make([]float32, 256)
	for i := range l {
		l[i] = float32(i%13) * 0.7
	}
	var s float64
	for b.Loop() {
		s += LogSumExp(l)
	}
	_ = s
}
