package plot

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"statesim/engine"
)

// A run with prefix caching draws its hit rate; the bins' tokens sum to
// the report's; a run without it draws no such chart.
func TestPrefixChart(t *testing.T) {
	y := `name: pc
model: {preset: tiny-attention}
engine: {vllm_version: fixed, max_num_batched_tokens: 512, max_num_seqs: 64, max_model_len: 2048, num_gpu_blocks_override: 300}
workload:
  kind: rollouts
  prompts: 4
  rollouts_per_prompt: 8
  steps: 2
  prompt_len: {dist: lognormal, median: 200, sigma: 0.5, min: 20, max: 800}
  output_len: {dist: constant, value: 20}
`
	for _, on := range []bool{true, false} {
		run, rep := replay(t, parseInline(t, y, "pc.yaml", fmt.Sprintf("engine.enable_prefix_caching=%v", on)), engine.Options{})
		var q, h int64
		for _, b := range run.Bins {
			q, h = q+b.PrefixQueries, h+b.PrefixHits
		}
		dir, files := write(t, run)
		drawn := contains(files, filepath.Join(dir, "pc-prefix.png"))
		if !on {
			if drawn || q != 0 {
				t.Errorf("caching off: prefix chart %v, %d query tokens", drawn, q)
			}
			continue
		}
		if !drawn || q != rep.PrefixCache.QueryTokens || h != rep.PrefixCache.HitTokens || h == 0 {
			t.Errorf("caching on: chart %v; bins %d of %d tokens hit, report %d of %d", drawn, h, q, rep.PrefixCache.HitTokens, rep.PrefixCache.QueryTokens)
		}
		var prefix []string
		for _, f := range files {
			if strings.Contains(f, "-prefix.") {
				prefix = append(prefix, f)
			}
		}
		checkFiles(t, prefix)
	}
}
