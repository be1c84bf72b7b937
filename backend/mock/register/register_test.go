package register_test

import (
	"encoding/json"
	"strings"
	"testing"

	"statesim"
	_ "statesim/backend/mock/register"
	"statesim/scenarios"
)

// A small bug-A scenario on the tiny model runs end to end through the
// engine with the mock backend, and the report carries its divergences.
const tinyImposter = `
name: tiny-imposter
seed: 5
model:
  preset: tiny-hybrid
engine:
  vllm_version: %VERSION%
  max_num_batched_tokens: 64
  max_num_seqs: 32
  max_model_len: 4096
  block_size: 16
  num_gpu_blocks_override: 60
  enable_chunked_prefill: true
  state_index_bits: 64
device:
  name: test
  memory_gib: 80
  activation_gib: 1
workload:
  kind: batches
  num_prompts: 200
  batch_size: 16
  prompt_len: {dist: lognormal, median: 30, sigma: 0.6, min: 4, max: 120}
  output_len: {dist: lognormal, median: 12, sigma: 0.5, min: 2, max: 40}
sampling:
  temperature: 0
backend:
  kind: mock
  divergence_threshold: 0.001
`

func runTiny(t *testing.T, version string) (*statesim.Report, map[string]any) {
	sc, err := scenarios.Parse([]byte(strings.ReplaceAll(tinyImposter, "%VERSION%", version)), "tiny-imposter", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := statesim.Run(sc, statesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep.Extra["mock"])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return rep, m
}

func TestMockThroughEngine(t *testing.T) {
	rep, m := runTiny(t, "v0.13")
	t.Logf("v0.13: %d requests, %d corrupted; mock: compared %v, divergent %v", rep.Requests, rep.CorruptedRequests, m["requests_compared"], m["requests_divergent"])
	if m["requests_compared"].(float64) != float64(rep.Requests) {
		t.Errorf("compared %v of %d requests", m["requests_compared"], rep.Requests)
	}
	if rep.CorruptedRequests == 0 || m["requests_divergent"].(float64) == 0 {
		t.Errorf("want bug A corruption and divergence under v0.13")
	}
	rep, m = runTiny(t, "fixed")
	if rep.CorruptedRequests != 0 || m["requests_divergent"].(float64) != 0 || m["max_delta"].(float64) != 0 {
		t.Errorf("fixed: %d corrupted, mock %v", rep.CorruptedRequests, m)
	}
}
