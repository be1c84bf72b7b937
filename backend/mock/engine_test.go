package mock_test

import (
	"strconv"
	"strings"
	"testing"

	_ "statesim/backend/mock"
	"statesim/engine"
	"statesim/internal/testtier"
	"statesim/report"
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
  num_prompts: %PROMPTS%
  batch_size: 16
  prompt_len: {dist: lognormal, median: 30, sigma: 0.6, min: 4, max: 120}
  output_len: {dist: lognormal, median: 12, sigma: 0.5, min: 2, max: 40}
sampling:
  temperature: 0
backend:
  kind: mock
  divergence_threshold: 0.001
`

func runTiny(t *testing.T, version string) *report.Report {
	// 96 prompts (six batches) already recycle a slot into an imposter
	// under v0.13; the long tier runs the 200 of the seeds' incident.
	y := strings.NewReplacer("%VERSION%", version, "%PROMPTS%", strconv.Itoa(testtier.Sized(96, 200))).Replace(tinyImposter)
	return runMock(t, y, "tiny-imposter")
}

// runMock runs scenario y through the engine; its report must carry the
// mock's comparison.
func runMock(t *testing.T, y, name string) *report.Report {
	t.Helper()
	sc, err := scenarios.Parse([]byte(y), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := engine.Run(sc, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Divergence == nil {
		t.Fatal("the mock's comparison is missing from the report")
	}
	return rep
}

func TestMockThroughEngine(t *testing.T) {
	t.Parallel() // independent runs; the package's longest tests go side by side
	rep := runTiny(t, "v0.13")
	d := rep.Divergence
	t.Logf("v0.13: %d requests, %d corrupted; mock: compared %d, divergent %d", rep.Requests, rep.CorruptedRequests, d.RequestsCompared, d.RequestsDivergent)
	if d.RequestsCompared != rep.Requests {
		t.Errorf("compared %d of %d requests", d.RequestsCompared, rep.Requests)
	}
	if rep.CorruptedRequests == 0 || d.RequestsDivergent == 0 || int64(len(rep.DivergentRequests)) != d.RequestsDivergent {
		t.Errorf("want bug A corruption and divergence under v0.13: %+v, %d listed", d, len(rep.DivergentRequests))
	}
	rep = runTiny(t, "fixed")
	if d := rep.Divergence; rep.CorruptedRequests != 0 || d.RequestsDivergent != 0 || d.MaxDelta != 0 {
		t.Errorf("fixed: %d corrupted, mock %+v", rep.CorruptedRequests, d)
	}
}

// Under async scheduling a step runs on the GPU before the previous one's
// output is applied: the mock samples when the step runs and hands the
// tokens over when the scheduler applies them. A healthy release then
// equals its reference exactly, every output token compared, with and
// without drafts (the sampler's accepted drafts drawn with the step).
func TestMockAsyncScheduling(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, model, extra string }{
		{"plain", "tiny-hybrid", ""},
		{"mtp", "tiny-hybrid-mamba2", "  speculative:\n    method: mtp\n    num_speculative_tokens: 2\n    acceptance_rate: 0.6\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := strings.NewReplacer("%VERSION%", "fixed", "%PROMPTS%", "32", "tiny-hybrid\n", c.model+"\n",
				"  state_index_bits: 64\n", "  state_index_bits: 64\n  async_scheduling: true\n"+c.extra).Replace(tinyImposter)
			rep := runMock(t, y, "tiny-async")
			for _, w := range rep.Warnings {
				if strings.Contains(w, "Async scheduling") {
					t.Fatalf("async scheduling turned off: %s", w)
				}
			}
			d := rep.Divergence
			t.Logf("%d requests, %d steps, %d output tokens; mock: %+v", rep.Requests, rep.Steps, rep.OutputTokens, *d)
			if d.RequestsCompared != rep.Requests || d.TokensCompared != rep.OutputTokens {
				t.Errorf("compared %d of %d requests, %d of %d output tokens", d.RequestsCompared, rep.Requests, d.TokensCompared, rep.OutputTokens)
			}
			if rep.CorruptedRequests != 0 || d.RequestsDivergent != 0 || d.MaxDelta != 0 {
				t.Errorf("a healthy async run: %d corrupted, mock %+v", rep.CorruptedRequests, *d)
			}
		})
	}
}
