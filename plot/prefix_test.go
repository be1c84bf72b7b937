package plot

import (
	"path/filepath"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/scenarios"
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
		sc, err := scenarios.Parse([]byte(y), "pc.yaml", []string{"engine.enable_prefix_caching=" + map[bool]string{true: "true", false: "false"}[on]})
		if err != nil {
			t.Fatal(err)
		}
		rec := NewRecorder()
		rep, err := engine.Run(sc, engine.Options{Observe: rec.Observe})
		if err != nil {
			t.Fatal(err)
		}
		run := rec.Done(rep, sc.Engine.MaxNumBatchedTokens)
		var q, h int64
		for _, b := range run.Bins {
			q, h = q+b.PrefixQueries, h+b.PrefixHits
		}
		dir := t.TempDir()
		files, err := Write(run, dir)
		if err != nil {
			t.Fatal(err)
		}
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
