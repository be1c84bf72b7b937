package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"statesim/invariant"
	"statesim/setup"
)

// Model Runner V2 seeds a request that resumes over a cached prefix at
// (num_computed_tokens − 1) // cache_config.block_size
// (MambaHybridModelState.add_request, mamba_hybrid.py @ 6adad0876), and
// the engine core has lowered cache_config.block_size to the smallest
// group block (core.py). A DFlash drafter whose sliding-window group ends
// at 256 tokens beside Qwen3.5-4B's 528 (11 KV heads × 192: a page that
// divides the unified one, the hash block 16 and no fine-grained hits)
// makes that the divisor: the second request's 8448-token hit seeds
// column 32 instead of 15, a position its table does not hold, and the
// check catches the read. #53798 (open; #55507, #55601 the same) divides
// by the Mamba block, and the same run is clean.
func TestV2SeedBelowTheMambaBlock(t *testing.T) {
	dir := t.TempDir()
	var trace strings.Builder
	ids := make([]string, 90)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	fmt.Fprintf(&trace, "{\"timestamp\": 0, \"input_tokens\": 9000, \"output_tokens\": 4, \"hash_ids\": [%s]}\n", strings.Join(ids, ", "))
	fmt.Fprintf(&trace, "{\"timestamp\": 5, \"input_tokens\": 9050, \"output_tokens\": 4, \"hash_ids\": [%s, 91]}\n", strings.Join(ids, ", "))
	if err := os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := filepath.Abs("scenarios/models/qwen3.5-4b.json") // TestMain runs from the root
	if err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`name: seed-units
model: {hf_config: %s}
engine:
  vllm_version: v0.31
  enable_prefix_caching: true
  num_gpu_blocks_override: 4000
  max_num_batched_tokens: 8448
  speculative:
    method: dflash
    num_speculative_tokens: 1
    accepted: 0
    draft: {num_hidden_layers: 1, num_key_value_heads: 11, head_dim: 192, sliding_window: 2048}
workload: {kind: trace, path: %s, hash_field: hash_ids, hash_block_tokens: 100, prompt_len: {dist: trace, value: 0}, output_len: {dist: trace, value: 0}}
`, cfg, filepath.Join(dir, "t.jsonl"))
	for _, tc := range []struct {
		patches string
		caught  bool
	}{{"[]", true}, {"[+53798]", false}} {
		st, err := setup.Parse([]byte(doc), filepath.Join(dir, "s.yaml"), []string{"engine.patches=" + tc.patches})
		if err != nil {
			t.Fatal(err)
		}
		if st.CacheBlockSize != 256 || st.MambaBlockSize != 528 || st.SchedulerBlockSize != 8448 || st.HashBlockSize != 16 {
			t.Fatalf("blocks: cache_config %d, Mamba %d, scheduler %d, hash %d; the test assumes 256, 528, 8448, 16", st.CacheBlockSize, st.MambaBlockSize, st.SchedulerBlockSize, st.HashBlockSize)
		}
		rep, err := RunSetup(st, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.PrefixCache == nil || rep.PrefixCache.HitTokens != 8448 {
			t.Fatalf("patches %s: prefix hit %+v, want 8448 tokens (16 Mamba blocks, one scheduler block)", tc.patches, rep.PrefixCache)
		}
		if got := rep.Count(invariant.StaleSlotRead) > 0; got != tc.caught {
			t.Errorf("patches %s: stale-slot-read %v, want %v: %+v", tc.patches, got, tc.caught, rep.Violations)
		}
		if rep.Finished != rep.Requests {
			t.Errorf("patches %s: %d/%d finished", tc.patches, rep.Finished, rep.Requests)
		}
	}
}
