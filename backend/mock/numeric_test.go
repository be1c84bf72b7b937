package mock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	_ "statesim/backend/mock" // backend kind "mock"
	"statesim/engine"
	"statesim/internal/runtest"
	"statesim/internal/testtier"
	"statesim/invariant"
	"statesim/report"
	"statesim/scenarios"
)

func runNumeric(t *testing.T, name string, sets ...string) *report.Report {
	t.Helper()
	rep := runtest.Run(t, name, engine.Options{}, sets...)
	if rep.Divergence == nil {
		t.Fatalf("%s: no divergence section: backend %s", name, rep.Backend)
	}
	return rep
}

// The imposters the cache check names are exactly the requests whose
// log-probs diverge, and the engine is confident where the reference
// says the token is unlikely.
func TestImposterMockDivergesWhereStaleReadsAre(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	rep := runNumeric(t, "imposter-mock")
	if len(rep.Imposters) == 0 {
		t.Fatal("no imposter in imposter-mock")
	}
	imp := map[int64]bool{}
	for _, im := range rep.Imposters {
		imp[im.RequestID] = true
	}
	div := map[int64]bool{}
	for _, d := range rep.DivergentRequests {
		div[d.RequestID] = true
		if !imp[d.RequestID] {
			t.Errorf("request %d diverges but is not an imposter", d.RequestID)
		}
		if d.EngineLogProb < -1 || d.RefLogProb > d.EngineLogProb-2 {
			t.Errorf("request %d: engine log-prob %.3f, reference %.3f: want a confident engine and an unlikely token", d.RequestID, d.EngineLogProb, d.RefLogProb)
		}
	}
	for id := range imp {
		if !div[id] {
			t.Errorf("imposter %d does not diverge", id)
		}
	}
	// The controls run the workload's first 96 prompts (six batches; the
	// long tier all 200): enough for v0.13 to misclassify a row of the
	// attention-only model, which the control must report and survive.
	prompts := "workload.num_prompts=" + strconv.Itoa(testtier.Sized(96, 200))
	for _, name := range []string{"imposter-mock-fixed", "imposter-mock-attention-only"} {
		rep := runNumeric(t, name, prompts)
		if rep.Divergence.RequestsDivergent != 0 || rep.Divergence.MaxDelta != 0 || rep.TotalViolations() != 0 {
			t.Errorf("%s: %d divergent, max Δ %g, %d violations", name, rep.Divergence.RequestsDivergent, rep.Divergence.MaxDelta, rep.TotalViolations())
		}
		if rep.Divergence.RequestsCompared != rep.Requests {
			t.Errorf("%s: compared %d of %d", name, rep.Divergence.RequestsCompared, rep.Requests)
		}
		if name == "imposter-mock-attention-only" && rep.MisclassifiedRows == 0 {
			t.Error("attention-only control: the misclassified rows should still be reported")
		}
	}
}

// Over many seeds and memory pressures: fixed + 64-bit never diverges;
// under v0.13 every divergent request is explained by a recorded stale read
// or wrapped write, and every imposter (a stale read that fed a decode)
// diverges. Bug B scaled down behaves the same way.
func TestNumericPropertyOverSeeds(t *testing.T) {
	t.Parallel() // an independent search or replay: the suite's longest, run beside the rest
	seeds := testtier.Sized(4, 12)
	var imposters, divergent int
	for s := 1; s <= seeds; s++ {
		blocks := 40 + 10*(s%4)
		sets := []string{fmt.Sprintf("seed=%d", s), fmt.Sprintf("engine.num_gpu_blocks_override=%d", blocks), "workload.num_prompts=64"}
		fixed := runNumeric(t, "imposter-mock", append(sets, "engine.vllm_version=fixed")...)
		if fixed.Divergence.RequestsDivergent != 0 || fixed.Divergence.MaxDelta != 0 {
			t.Errorf("seed %d fixed: %d divergent, max Δ %g", s, fixed.Divergence.RequestsDivergent, fixed.Divergence.MaxDelta)
		}
		for _, v := range []string{"v0.13", "v0.14"} {
			rep := runNumeric(t, "imposter-mock", append(sets, "engine.vllm_version="+v)...)
			div := map[int64]bool{}
			for _, d := range rep.DivergentRequests {
				div[d.RequestID] = true
				if d.CorruptStep < 0 {
					t.Errorf("seed %d %s: request %d diverges with no recorded corruption", s, v, d.RequestID)
				}
			}
			for _, im := range rep.Imposters {
				if !div[im.RequestID] {
					t.Errorf("seed %d %s: imposter %d read slot %d of request %d but did not diverge", s, v, im.RequestID, im.Slot, im.PrevOwner)
				}
			}
			imposters += len(rep.Imposters)
			divergent += len(rep.DivergentRequests)
		}
		b := runNumeric(t, "wrap16-mock", sets[0], "workload.num_prompts=48")
		for _, d := range b.DivergentRequests {
			if d.CorruptStep < 0 {
				t.Errorf("seed %d wrap16: request %d diverges with no recorded corruption", s, d.RequestID)
			}
		}
		if b.Count(invariant.WrongAddressWrite) == 0 || b.Divergence.RequestsDivergent == 0 {
			t.Errorf("seed %d wrap16: %d wrapped writes, %d divergent", s, b.Count(invariant.WrongAddressWrite), b.Divergence.RequestsDivergent)
		}
	}
	if imposters == 0 || divergent == 0 {
		t.Errorf("the search space never produced bug A: %d imposters, %d divergent", imposters, divergent)
	}
	t.Logf("%d seeds: %d imposters, %d divergent requests under v0.13/v0.14", seeds, imposters, divergent)
}

// Every built-in model config runs on the mock (its tiny stand-in for any
// shape but a float32 Mamba1's): a fixed vLLM over a small batch, with
// chunked prefills and decodes, equals the reference exactly.
func TestEveryBuiltinModelRunsOnTheMock(t *testing.T) {
	for _, name := range scenarios.BuiltinModels() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "s.yaml")
			yaml := fmt.Sprintf(`name: every-model
seed: 7
model:
  hf_config: %s
engine:
  vllm_version: fixed
  max_num_batched_tokens: 24
  max_num_seqs: 4
  num_gpu_blocks_override: 40
  state_index_bits: 64
workload:
  kind: batches
  num_prompts: 6
  batch_size: 6
  prompt_len: {dist: uniform, min: 1, max: 40}
  output_len: {dist: uniform, min: 1, max: 8}
backend:
  kind: mock
`, name)
			if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			rep := runNumeric(t, path)
			d := rep.Divergence
			if d.RequestsCompared != 6 || d.TokensCompared == 0 || d.RequestsDivergent != 0 || d.MaxDelta != 0 {
				t.Errorf("%s: %d requests compared (%d tokens), %d divergent, max |Δ| %g; want 6, none, 0", name, d.RequestsCompared, d.TokensCompared, d.RequestsDivergent, d.MaxDelta)
			}
		})
	}
}
