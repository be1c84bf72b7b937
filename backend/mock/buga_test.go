package mock

import (
	"testing"

	"statesim/invariant"
	"statesim/sched"
)

// imposterSchedule is bug A by hand. Request 0 runs alone and finishes,
// returning its blocks 1..4 (three state slots and one KV block) to the
// tail of the free queue. Requests 1 and 2 then arrive together with a
// budget of 16: request 1 takes 15 tokens (and blocks 5..8), request 2 the
// one token left and the recycled blocks 1..4. Under v0.13 that single
// token makes request 2 a decode: its Mamba decode kernels read request
// 0's final states.
func imposterSchedule(t *testing.T, v sched.Version, forcePrefill bool) *engine {
	e := newEngine(t, engineCfg{numBlocks: 9, budget: 16, version: v, trace: []int64{2}, forcePrefill: forcePrefill})
	e.run([]arrival{
		{step: 0, prompt: 20, maxTokens: 10, seed: 11},
	})
	e.run([]arrival{
		{step: e.step, prompt: 15, maxTokens: 10, seed: 12},
		{step: e.step, prompt: 20, maxTokens: 10, seed: 13},
	})
	return e
}

func TestBugAImposterDiverges(t *testing.T) {
	e := imposterSchedule(t, sched.V013, false)
	var stale *invariant.Violation
	for i, v := range e.viol {
		if v.Invariant == invariant.StaleSlotRead && v.RequestID == 2 {
			stale = &e.viol[i]
			break
		}
	}
	if stale == nil || !e.staleDecodeReaders()[2] {
		t.Fatalf("symbolic check did not report request 2's stale decode read; violations: %v", e.viol)
	}
	if stale.Slot != 1 || stale.PrevOwner != 0 {
		t.Fatalf("stale read %v: want slot 1, left by request 0", stale)
	}
	t.Log(stale)
	if e.rec.Count(invariant.NoDecodeBeforePrefill) == 0 {
		t.Fatalf("no no-decode-before-prefill violation recorded")
	}
	divs := e.divergent()
	d, ok := divs[2]
	if !ok {
		t.Fatalf("request 2 read request 0's state but the mock saw no divergence; stats %+v", e.mk.Stats())
	}
	if len(divs) != 1 {
		t.Errorf("divergent requests %v, want only request 2", divs)
	}
	tr, _ := e.mk.Trace(2)
	for _, tk := range tr.Tokens {
		t.Logf("token %2d: engine %3d lp %8.4f | ref lp %9.4f (ref greedy %3d lp %7.4f) Δ %.4f", tk.Index, tk.EngineToken, tk.EngineLogProb, tk.RefLogProb, tk.RefToken, tk.RefTokenLogProb, tk.Delta)
	}
	t.Logf("divergence %+v", d)
	if d.FirstBadToken != 0 {
		t.Errorf("first bad token %d, want 0 (the state is corrupt from the first prompt token)", d.FirstBadToken)
	}
	// Confident garbage: the engine is sure of a token the reference finds
	// very unlikely.
	if d.EngineLogProb < -1 || d.RefLogProb > d.EngineLogProb-5 || d.EngineToken == d.RefToken {
		t.Errorf("first bad token: engine %d at log-prob %.3f, reference %.3f (its own pick %d); want a confident engine and an unlikely token",
			d.EngineToken, d.EngineLogProb, d.RefLogProb, d.RefToken)
	}
	if d.MaxDelta < 5 {
		t.Errorf("max |Δ log-prob| %.3f, want a large gap", d.MaxDelta)
	}
	if d.CorruptStep < 0 {
		t.Errorf("divergent request carries no CorruptStep")
	}
}

// The same schedule is clean under the fix and under the seeds' diagnostic
// (every row through the prefill path).
func TestBugAFixedIsClean(t *testing.T) {
	for _, c := range []struct {
		v     sched.Version
		force bool
	}{{sched.Fixed, false}, {sched.V013, true}} {
		e := imposterSchedule(t, c.v, c.force)
		if n := e.rec.Total(); n != 0 {
			t.Errorf("%s force_prefill=%v: %d violations: %v", c.v, c.force, n, e.viol)
		}
		st := e.mk.Stats()
		if st.RequestsCompared != 3 || st.RequestsDivergent != 0 || st.MaxDelta != 0 {
			t.Errorf("%s force_prefill=%v: stats %+v, want 3 requests compared with Δ exactly 0", c.v, c.force, st)
		}
	}
}
