package plot

import (
	"path/filepath"
	"testing"

	"statesim/engine"
	"statesim/step"
)

// Blocks held per request: with the records' Held lists the chart is
// drawn, its per-bin maximum is the most one request held in any step
// (counted here from the same records), and align mode's Mamba tables
// keep it below all mode's on the same rollouts; without Held no chart.
func TestHeldChart(t *testing.T) {
	y := `name: held
model: {preset: tiny-hybrid}
engine: {vllm_version: v0.31, enable_prefix_caching: true, mamba_block_size: 32, max_num_batched_tokens: 256, max_num_seqs: 16, max_model_len: 2048, num_gpu_blocks_override: 600}
workload: {kind: rollouts, prompts: 2, rollouts_per_prompt: 4, steps: 1, prompt_len: {dist: constant, value: 600}, output_len: {dist: constant, value: 8}}
`
	most := map[string]int32{}
	for _, mode := range []string{"align", "all"} {
		var want int32
		run, _ := replay(t, parseInline(t, y, "held.yaml", "engine.mamba_cache_mode="+mode), engine.Options{Detail: step.Holdings, Observe: func(r *step.Record) {
			per := map[int64]int32{}
			for _, h := range r.Held {
				per[h.Table]++
				want = max(want, per[h.Table])
			}
		}})
		var got int32
		for _, b := range run.Bins {
			got = max(got, b.MaxHeldPerRequest)
		}
		if got != want || got == 0 {
			t.Errorf("%s: bins' most held per request %d, records' %d", mode, got, want)
		}
		most[mode] = got
		dir, files := write(t, run)
		if !contains(files, filepath.Join(dir, "held-held.png")) {
			t.Errorf("%s: no held chart in %v", mode, files)
		}
	}
	if most["align"] >= most["all"] {
		t.Errorf("most blocks one request holds: align %d, all %d; want align's bounded tables below all's", most["align"], most["all"])
	}
	if run, _ := replay(t, parseInline(t, y, "held.yaml"), engine.Options{}); run.HeldPerRequest {
		t.Error("no Held lists, yet the held chart is on")
	}
}
