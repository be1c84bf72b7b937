package setup_test

import (
	"fmt"
	"testing"

	"statesim/model"
	"statesim/scenarios"
	"statesim/setup"
)

// Every built-in scenario, preset and config keeps one block size: the
// attention groups' block is the layout's, the Mamba groups' is it too
// under prefix caching (max_model_len without), and cache_config.block_size
// after start-up is that block (the Mamba block for a model without
// attention layers).
func TestGroupBlockSizesBuiltins(t *testing.T) {
	check := func(name string, st *setup.Setup) {
		t.Helper()
		bs := st.Layout.BlockSize
		if len(st.Groups) != len(st.Layout.Groups) {
			t.Errorf("%s: %d group specs for %d groups", name, len(st.Groups), len(st.Layout.Groups))
		}
		for i, g := range st.Groups {
			want := bs
			if g.Kind == model.Mamba && !st.Mamba.PrefixCaching {
				want = st.Scenario.Engine.MaxModelLen
			}
			if g.BlockSize != want {
				t.Errorf("%s: group %d (%v) block size %d, want %d", name, i, g.Kind, g.BlockSize, want)
			}
		}
		// A model without attention layers has Mamba groups alone: their
		// block is the smallest (max_model_len without prefix caching).
		want := bs
		if st.Layout.NumAttnGroups() == 0 && len(st.Groups) > 0 {
			want = st.Groups[0].BlockSize
		}
		if st.CacheBlockSize != want {
			t.Errorf("%s: cache_config.block_size %d after start-up, want %d", name, st.CacheBlockSize, want)
		}
	}
	for _, name := range scenarios.Builtins() {
		check(name, load(t, name))
	}
	configs := map[string][]string{"hf_config": scenarios.BuiltinModels(), "preset": model.PresetNames()}
	for _, key := range []string{"hf_config", "preset"} {
		for _, name := range configs[key] {
			st, err := setup.Parse(modelDoc(key, name), name, nil)
			if err != nil {
				t.Errorf("%s %s: %v", key, name, err)
				continue
			}
			check(name, st)
			// The other prefix-caching setting, where vLLM accepts it.
			flip := fmt.Sprintf("engine.enable_prefix_caching=%v", !st.Mamba.PrefixCaching)
			if st, err := setup.Parse(modelDoc(key, name), name, []string{flip}); err == nil {
				check(name+" "+flip, st)
			}
		}
	}
}

// modelDoc is a scenario for one preset or config, with `statesim
// model`'s placeholder workload.
func modelDoc(key, name string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodel: {%s: %s}\nworkload: {kind: poisson, rate: 1, count: 1}\n", name, key, name)
}

// Without prefix caching a Mamba group's block is max_model_len
// (MambaModelConfig.verify_and_update_config), so a max_model_len below
// the attention block makes it the smallest group block, and
// cache_config.block_size follows it (EngineCore._initialize_kv_caches);
// with prefix caching in align mode the Mamba block is the attention
// block and nothing changes.
func TestCacheBlockSizeSmallestGroup(t *testing.T) {
	doc := []byte(`name: short
model: {preset: jamba-reasoning-3b}
engine: {max_model_len: 128}
workload:
  kind: poisson
  rate: 1
  count: 1
  prompt_len: {dist: constant, value: 64}
  output_len: {dist: constant, value: 16}
`)
	for _, tc := range []struct {
		caching          string
		mamba, cacheSize int
	}{{"false", 128, 128}, {"true", 176, 176}} {
		st, err := setup.Parse(doc, "short", []string{"engine.enable_prefix_caching=" + tc.caching})
		if err != nil {
			t.Fatal(err)
		}
		if st.Layout.BlockSize != 176 {
			t.Fatalf("caching %s: the unified block is %d, want 176 (the 3B shape)", tc.caching, st.Layout.BlockSize)
		}
		if st.MambaBlockSize != tc.mamba || st.CacheBlockSize != tc.cacheSize {
			t.Errorf("caching %s: mamba_block_size %d, block_size %d; want %d, %d", tc.caching, st.MambaBlockSize, st.CacheBlockSize, tc.mamba, tc.cacheSize)
		}
		// One GPU: the in-process worker reads the core's value. Two:
		// each worker process keeps the platform's unified block.
		if st.WorkerBlockSize != tc.cacheSize {
			t.Errorf("caching %s, tensor_parallel_size 1: the worker's block_size %d, want the core's %d", tc.caching, st.WorkerBlockSize, tc.cacheSize)
		}
		tp, err := setup.Parse(doc, "short", []string{"engine.enable_prefix_caching=" + tc.caching, "engine.tensor_parallel_size=2"})
		if err != nil {
			t.Fatal(err)
		}
		if tp.WorkerBlockSize != tp.Layout.BlockSize || tp.CacheBlockSize != tc.cacheSize {
			t.Errorf("caching %s, tensor_parallel_size 2: the worker's block_size %d, the core's %d; want the platform's %d and %d", tc.caching, tp.WorkerBlockSize, tp.CacheBlockSize, tp.Layout.BlockSize, tc.cacheSize)
		}
		// The align-mode chunking divides by cache_config.block_size;
		// without prefix caching there is none.
		if want := map[string]int{"true": tc.cacheSize}[tc.caching]; st.Sched.Config.MambaAlignBlockSize != want {
			t.Errorf("caching %s: align chunk block %d, want %d", tc.caching, st.Sched.Config.MambaAlignBlockSize, want)
		}
		for i, g := range st.Groups {
			if want := map[model.LayerKind]int{model.Attention: 176, model.Mamba: tc.mamba}[g.Kind]; g.BlockSize != want {
				t.Errorf("caching %s: group %d (%v) block size %d, want %d", tc.caching, i, g.Kind, g.BlockSize, want)
			}
		}
	}
}
