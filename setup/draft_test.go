package setup_test

import (
	"strings"
	"testing"

	"statesim/engine"
	"statesim/setup"
)

// dflashDoc is Qwen3-Next with a sliding-window DFlash drafter of one
// layer, 8 KV heads × 128 (4096 B a token against the target's 2048).
const dflashDoc = `name: dflash
model: {hf_config: ../scenarios/models/qwen3-next-80b-a3b.json}
engine:
  vllm_version: v0.31
  enable_prefix_caching: true
  num_gpu_blocks_override: 4000
  speculative:
    method: dflash
    num_speculative_tokens: 1
    draft: {num_hidden_layers: 1, num_key_value_heads: 8, head_dim: 128, sliding_window: 2048}
workload: {kind: poisson, rate: 1, count: 2, prompt_len: {dist: constant, value: 64}, output_len: {dist: constant, value: 4}}
`

// The drafter's group takes 272 tokens, half the Mamba group's 544, so
// cache_config.block_size after start-up (and the in-process worker's) is
// 272: the divisor of V2's add_request seed (#53142, #55600) and of the
// align-mode chunking; scheduler_block_size is the lcm (544) and
// hash_block_size the gcd (272).
func TestDFlashDraftWindowGroups(t *testing.T) {
	st, err := setup.Parse([]byte(dflashDoc), "dflash.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.MambaBlockSize != 544 || st.CacheBlockSize != 272 || st.WorkerBlockSize != 272 || st.SchedulerBlockSize != 544 || st.HashBlockSize != 272 {
		t.Errorf("mamba %d, cache_config %d, worker %d, scheduler %d, hash %d; want 544, 272, 272, 544, 272",
			st.MambaBlockSize, st.CacheBlockSize, st.WorkerBlockSize, st.SchedulerBlockSize, st.HashBlockSize)
	}
	fixed, err := setup.Parse([]byte(dflashDoc), "dflash.yaml", []string{"engine.patches=[+53798, +54076]"})
	if err != nil {
		t.Fatal(err)
	}
	if st.SeedBlockSize != 272 || fixed.SeedBlockSize != 544 || fixed.Sched.Config.MambaAlignBlockSize != 544 {
		t.Errorf("V2 seed divisor %d, with #53798 %d, chunk block with #54076 %d; want 272, 544, 544", st.SeedBlockSize, fixed.SeedBlockSize, fixed.Sched.Config.MambaAlignBlockSize)
	}
	if got := st.Sched.Config.MambaAlignBlockSize; got != 272 {
		t.Errorf("align chunking divides by %d, want cache_config.block_size 272", got)
	}
	// use_eagle holds for dflash, and with no group flagged
	// is_eagle_group every group takes the drop.
	if st.Spec.Lookahead() != 2 || !st.Cache.UseEagle {
		t.Errorf("lookahead %d, EAGLE drop %t; want K + 1 = 2, true", st.Spec.Lookahead(), st.Cache.UseEagle)
	}
	if st.Cache.HashBlockSize != 272 || st.Cache.SchedulerBlockSize != 544 || st.Cache.SlidingWindow != 2048 {
		t.Errorf("manager options: hash block %d, scheduler block %d, window %d; want 272, 544, 2048", st.Cache.HashBlockSize, st.Cache.SchedulerBlockSize, st.Cache.SlidingWindow)
	}
	last := st.Groups[len(st.Groups)-1]
	if last.BlockSize != 272 || !strings.HasPrefix(last.Spec, "SlidingWindowSpec(") {
		t.Errorf("last group %+v, want the drafter's sliding-window group at 272", last)
	}
	// A hash block below the Mamba align block with the drafter's group
	// at it: vLLM turns fine-grained hits on (#46384), and so does the
	// manager; the scenario runs.
	if !st.FineGrainedHits {
		t.Error("fine-grained hits off for the drafter's group at the hash block")
	}
	if _, err = engine.RunSetup(st, engine.Options{}); err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestDFlashRefusals(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"engine.vllm_version=v0.22"}, "from the v0.28 row"},
		{[]string{"engine.model_runner=v1"}, "Model Runner V1 is not modelled"},
		{[]string{"engine.speculative.method=mtp"}, "applies only with method dflash"},
		{[]string{"engine.speculative.draft.sliding_window=0"}, "only sliding-window DFlash drafters"},
		{[]string{"engine.speculative.draft.head_dim=0"}, "needs the drafter's"},
		{[]string{"engine.speculative.num_speculative_tokens=2"}, "NotImplementedError"},
		{[]string{"engine.async_scheduling=true"}, "under async scheduling are not modelled"},
		{[]string{"engine.enable_prefix_caching=false"}, "with prefix caching in align mode only"},
	} {
		_, err := setup.Parse([]byte(dflashDoc), "dflash.yaml", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.set, err, tc.want)
		}
	}
}
