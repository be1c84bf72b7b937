package prop

import (
	"errors"
	"strings"
	"testing"

	"statesim/model"
	"statesim/setup"
)

// TestMatrixDrawsEveryDimension: every matrix draw builds a scenario (a
// refused combination relaxed, never an error), and a few hundred draws
// reach each dimension as run: async scheduling, speculative decoding,
// prefix caching in align and in all, CUDA graphs, several releases and
// each kind of state layer.
func TestMatrixDrawsEveryDimension(t *testing.T) {
	c := Matrix(DefaultConfig())
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	versions := map[string]bool{}
	for seed := int64(1); seed <= 300; seed++ {
		p := Sample(c, seed)
		sc, err := p.Scenario("x", "x.jsonl")
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, p, err)
		}
		e := &sc.Engine
		versions[e.VLLMVersion] = true
		seen["kind "+string(sc.Model.Shape.StateKind())] = true
		if e.AsyncScheduling {
			seen["async"] = true
		}
		if e.Speculative.Method != "" {
			seen["spec "+e.Speculative.Method] = true
			if e.AsyncScheduling {
				seen["spec+async"] = true
			}
		}
		if st, err := setup.Resolve(sc); err == nil && st.Mamba.PrefixCaching {
			m := st.Mamba
			seen["prefix "+m.Mode.String()] = true
		}
		if e.CUDAGraphMode == "full_and_piecewise" {
			seen["graphs"] = true
		}
	}
	for _, want := range []string{"async", "spec mtp", "spec eagle", "spec ngram", "spec+async", "prefix align", "prefix all", "graphs",
		"kind " + string(model.Mamba1), "kind " + string(model.Mamba2), "kind " + string(model.GatedDeltaNet), "kind " + string(model.KDA)} {
		if !seen[want] {
			t.Errorf("300 matrix draws never ran %q (saw %v)", want, seen)
		}
	}
	// Every release the matrix offers is drawn, and only those.
	if len(versions) != len(c.Versions) || len(c.Versions) < 2 {
		t.Errorf("300 matrix draws ran releases %v, want all of %v", versions, c.Versions)
	}
	for _, v := range c.Versions {
		if !versions[v] {
			t.Errorf("300 matrix draws never ran release %s of %v", v, c.Versions)
		}
	}
}

// TestAsyncOffWhereRefused: async scheduling drawn on the v0 control or
// a numeric backend runs off (vLLM's v0 has no async scheduler; the
// numeric backends do not model it); elsewhere it runs as drawn.
func TestAsyncOffWhereRefused(t *testing.T) {
	base := Params{Requests: []Request{{Prompt: 40, Output: 3}}, MaxNumBatchedTokens: 64, MaxNumSeqs: 2, StateIndexBits: 64,
		Seed: 1, Preset: "tiny-hybrid", Version: "v0.31", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic", AsyncScheduling: true}
	for _, c := range []struct {
		version, backend string
		want             bool
	}{{"v0.31", "symbolic", true}, {"v0", "symbolic", false}, {"v0.31", "mock", false}} {
		p := base
		p.Version, p.Backend = c.version, c.backend
		sc, err := p.Scenario("x", "x.jsonl")
		if err != nil {
			t.Fatalf("%s on %s: %v", c.version, c.backend, err)
		}
		if sc.Engine.AsyncScheduling != c.want || strings.Contains(p.String(), "async") != c.want {
			t.Errorf("%s on %s: async %v (%s), want %v", c.version, c.backend, sc.Engine.AsyncScheduling, p.String(), c.want)
		}
	}
}

// TestSetsResizeThePool: a --set that turns speculative decoding on sizes
// the pool for its 1 + K state columns (a 1-token request needs 13 blocks
// on tiny-hybrid at K = 3), so liveness holds; an override of the pool
// itself is kept.
func TestSetsResizeThePool(t *testing.T) {
	p := &Params{Requests: []Request{{Prompt: 1, Output: 1}}, MaxNumBatchedTokens: 1, MaxNumSeqs: 1, StateIndexBits: 64,
		Seed: 1, Preset: "tiny-hybrid", Version: "v0.31", Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic"}
	sets := []string{"engine.speculative.method=mtp", "engine.speculative.num_speculative_tokens=3"}
	r := NewRunner(t.TempDir(), sets)
	o := r.Run(p)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if got, want := o.Scenario.Engine.NumGPUBlocksOverride, p.poolSize(3, false); got != want || got <= p.poolSize(0, false) {
		t.Errorf("pool %d blocks, want %d (K = 0 sizes it %d)", got, want, p.poolSize(0, false))
	}
	if err := All()[5].Check(r, p); err != nil {
		t.Errorf("liveness: %v", err)
	}
	r = NewRunner(t.TempDir(), append(sets, "engine.num_gpu_blocks_override=40"))
	if sc, err := r.Build(p, "x"); err != nil || sc.Engine.NumGPUBlocksOverride != 40 {
		t.Errorf("an explicit pool override was replaced: %v %v", sc.Engine.NumGPUBlocksOverride, err)
	}
}

// TestLogprobsUnderDraftsOnMamba1: the numeric backend runs draft tokens
// (issue 36), and on the default draw's Mamba1 presets the builder is
// never handed num_accepted_tokens (issue 32), so a draft row prefills and
// keeps the state after its rejected drafts: the log-prob property fails
// with a divergent request, instead of being skipped.
func TestLogprobsUnderDraftsOnMamba1(t *testing.T) {
	ps, _ := ByName([]string{"logprobs-match-reference"})
	r := NewRunner(t.TempDir(), []string{"engine.speculative.method=mtp", "engine.speculative.num_speculative_tokens=2"})
	res, err := Check(r, DefaultConfig(), ps[0], Options{Seed: 1, Trials: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Holds || res.Unavailable || res.Err == nil || !strings.Contains(res.Err.Error(), "diverge from the reference") {
		t.Fatalf("want a divergence, got holds %v, unavailable %v, err %v", res.Holds, res.Unavailable, res.Err)
	}
}

// TestShrinkKeepsTheMatrixValid: shrinking a matrix counterexample keeps
// every candidate a runnable scenario; the shrunk one still shows what
// failed (here: a property that fails on async scheduling with
// speculative decoding as run).
func TestShrinkKeepsTheMatrixValid(t *testing.T) {
	bad := Property{Name: "no-async-spec", Check: func(r *Runner, p *Params) error {
		sc, err := r.Build(p, "x")
		if err != nil {
			return err
		}
		if sc.Engine.AsyncScheduling && sc.Engine.Speculative.Method != "" {
			return errors.New("async with spec")
		}
		return nil
	}}
	res, err := Check(NewRunner(t.TempDir(), nil), Matrix(DefaultConfig()), bad, Options{Seed: 3, Trials: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.Holds || res.Err == nil || res.Err.Error() != "async with spec" {
		t.Fatalf("want the async+spec failure kept through shrinking, got holds %v err %v", res.Holds, res.Err)
	}
	if len(res.Shrunk.Requests) != 1 || res.Shrunk.SpecK != 1 {
		t.Errorf("shrunk to %s, want 1 request at K = 1", res.Shrunk)
	}
}

// TestAlignThresholdRaised: a 32-token prompt on tiny-hybrid (block 32)
// with a long-prefill threshold of 1 in align mode: v0.22 refuses the
// threshold at start-up (#35122), so the scenario drawn raises it to the
// block; v0.31 advances inside the block (#50000) and keeps it; both
// runs end.
func TestAlignThresholdRaised(t *testing.T) {
	p := &Params{Requests: []Request{{Prompt: 32, Output: 1}}, MaxNumBatchedTokens: 32, MaxNumSeqs: 1, StateIndexBits: 64,
		LongPrefillTokenThreshold: 1, Seed: 1, Preset: "tiny-hybrid", Version: "v0.22", Policy: "fcfs", ChunkedPrefill: true,
		Backend: "symbolic", CacheMode: "align"}
	r := NewRunner(t.TempDir(), nil)
	live := All()[5]
	for _, v := range []string{"v0.22", "v0.31"} {
		q := *p
		q.Version = v
		sc, err := q.Scenario("x", "x.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if v == "v0.22" {
			want = 32
		}
		if got := sc.Engine.LongPrefillTokenThreshold; got != want {
			t.Errorf("%s: threshold %d, want %d", v, got, want)
		}
		if err := live.Check(r, &q); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestLogprobsOnAStandIn: a model the mock runs as its tiny stand-in
// (Mamba2 here) is cross-checked against the float64 reference of the
// same stand-in, not of the full shape, so a healthy run holds.
func TestLogprobsOnAStandIn(t *testing.T) {
	ps, _ := ByName([]string{"logprobs-match-reference"})
	cfg := DefaultConfig()
	cfg.Presets = []string{"tiny-hybrid-mamba2"}
	res, err := Check(NewRunner(t.TempDir(), nil), cfg, ps[0], Options{Seed: 1, Trials: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Holds || res.Unavailable {
		t.Fatalf("want the property to hold on the stand-in, got holds %v, unavailable %v, err %v", res.Holds, res.Unavailable, res.Err)
	}
}
