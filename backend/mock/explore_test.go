package mock

import (
	"sort"
	"testing"

	"statesim/sched"
)

func TestExploreConfidence(t *testing.T) {
	e := newEngine(t, engineCfg{numBlocks: 400, budget: 64, version: sched.Fixed, trace: []int64{0, 1, 2, 3, 4, 5, 6, 7}})
	var arr []arrival
	for i := 0; i < 8; i++ {
		arr = append(arr, arrival{step: i, prompt: 10 + 7*i, maxTokens: 40, seed: uint64(100 + i)})
	}
	e.run(arr)
	var lps []float64
	for id := int64(0); id < 8; id++ {
		tr, _ := e.mk.Trace(id)
		toks := []int32{}
		for _, tk := range tr.Tokens {
			lps = append(lps, tk.EngineLogProb)
			toks = append(toks, tk.EngineToken)
		}
		t.Logf("req %d tokens %v", id, toks)
	}
	sort.Float64s(lps)
	t.Logf("logprob quantiles: 10%% %.3f 25%% %.3f 50%% %.3f 90%% %.3f", lps[len(lps)/10], lps[len(lps)/4], lps[len(lps)/2], lps[9*len(lps)/10])
	t.Logf("stats %+v divs %d", e.mk.Stats(), len(e.mk.Divergences()))
}
