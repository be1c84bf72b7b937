package engine

import (
	"fmt"
	"testing"

	"statesim/invariant"
	"statesim/scenarios"
	"statesim/step"
)

// hybridRollouts is tiny-hybrid (block size 32 after page unification;
// mamba_block_size 32 keeps all mode there instead of at Mamba1's
// 2048-token chunk) with prefix caching on in a Mamba cache mode, over
// rollouts of shared prompts, chunked by a budget that does not divide
// the block.
func hybridRollouts(t *testing.T, mode string, budget int, sets ...string) *scenarios.Scenario {
	t.Helper()
	y := fmt.Sprintf(`name: hybrid-rollouts
seed: 3
model: {preset: tiny-hybrid}
engine: {vllm_version: v0.31, enable_prefix_caching: true, mamba_cache_mode: %s, mamba_block_size: 32, max_num_batched_tokens: %d, max_num_seqs: 8, max_model_len: 2048, num_gpu_blocks_override: 400}
workload: {kind: rollouts, prompts: 2, rollouts_per_prompt: 3, steps: 2, prompt_len: {dist: constant, value: 150}, output_len: {dist: constant, value: 6}}
`, mode, budget)
	sc, err := scenarios.Parse([]byte(y), "hybrid-rollouts.yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Rollouts on a hybrid in align and all mode: later rollouts restore the
// shared prompt's state from the cache, every restore checks out, and the
// step records' counts agree with the pool (block conservation).
func TestMambaModesRolloutsRestoreClean(t *testing.T) {
	for _, mode := range []string{"align", "all"} {
		var restored int64
		rep, err := Run(hybridRollouts(t, mode, 40), Options{Observe: func(r *step.Record) { restored += r.PrefixHits }})
		if err != nil {
			t.Fatal(err)
		}
		if rep.TotalViolations() != 0 {
			t.Errorf("%s: %+v", mode, rep.Violations)
		}
		if rep.PrefixCache == nil || rep.PrefixCache.HitTokens == 0 || restored != rep.PrefixCache.HitTokens {
			t.Errorf("%s: prefix cache %+v, step records' hits %d: want hits, restored through the Mamba groups", mode, rep.PrefixCache, restored)
		}
		var mambaGroups int
		for _, g := range rep.PrefixCache.Groups {
			if g.Kind == "mamba "+mode {
				mambaGroups++
			}
		}
		if mambaGroups == 0 || rep.PrefixCache.MambaCacheMode != mode {
			t.Errorf("%s: report groups %+v, mode %q: want the Mamba groups' lines", mode, rep.PrefixCache.Groups, rep.PrefixCache.MambaCacheMode)
		}
		if rep.Finished != rep.Requests {
			t.Errorf("%s: %d of %d finished", mode, rep.Finished, rep.Requests)
		}
	}
}

// Chunk alignment is what keeps align mode honest: without it 40-token
// chunks (0, 40, 80, 120, 150) end mid-block, the allocation of 120..150
// caches the copy source, which holds the 120-token state, under the
// 128-token boundary's hash, and a rollout restoring from it reads the
// wrong state. The restore check names both sides; with alignment on the
// same run is clean.
func TestMambaAlignUnalignedChunksCaughtOnRestore(t *testing.T) {
	staleReadCaught(t, hybridRollouts(t, "align", 40), Options{noChunkAlign: true}, "without chunk alignment",
		"restores through a prefix hit", "the cache says block", "the bytes hold")
	if rep, err := Run(hybridRollouts(t, "align", 40), Options{}); err != nil || rep.TotalViolations() != 0 {
		t.Errorf("aligned: %v, %+v", err, rep.Violations)
	}
}

// Model Runner V2 seeds a new or resumed request's running column in
// units of cache_config.block_size, V1 in the Mamba block's, and copies
// a hit's state from it (#53142, #55600): with a group on a smaller
// block the two differ. Only a DFlash drafter's groups make one in
// statesim (TestV2SeedBelowTheMambaBlock), and DFlash is its own
// speculative method, so for the plain and MTP paths a 16-token
// cache_config.block_size stands in for one on tiny-hybrid's 32-token
// block: under V2 the rollouts' restores read past the hit and are
// caught, with and without MTP (backend/align_spec.go keeps the runner's
// own index there); V1 and V2 with the settled value run clean.
func TestMambaAlignV2SeedUnits(t *testing.T) {
	for _, sc := range []struct {
		name string
		make func(runner string) *scenarios.Scenario
	}{
		{"plain", func(ru string) *scenarios.Scenario {
			return hybridRollouts(t, "align", 40, "engine.model_runner="+ru)
		}},
		{"MTP", func(ru string) *scenarios.Scenario {
			return alignMTP(t, 1, "engine.model_runner="+ru, "engine.patches=[+55898, +48375]")
		}},
	} {
		for _, tc := range []struct {
			runner string
			cache  int
			caught bool
		}{{"v1", 16, false}, {"v2", 0, false}, {"v2", 16, true}} {
			rep, err := Run(sc.make(tc.runner), Options{cacheBlockSize: tc.cache})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Count(invariant.StaleSlotRead) > 0; got != tc.caught {
				t.Errorf("%s, runner %s, cache_config.block_size %d: stale-slot-read %v, want %v: %+v", sc.name, tc.runner, tc.cache, got, tc.caught, rep.Violations)
			}
			if rep.Finished != rep.Requests {
				t.Errorf("%s, runner %s, cache_config.block_size %d: %d/%d finished", sc.name, tc.runner, tc.cache, rep.Finished, rep.Requests)
			}
		}
	}
}
