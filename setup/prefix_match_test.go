package setup_test

import (
	"strings"
	"testing"

	"statesim/setup"
)

// pmuDoc is the tiny hybrid (one attention and three Mamba groups of 32
// tokens) with prefix caching in align mode at v0.31; line 5 sets
// engine.prefix_match_unit.
const pmuDoc = `name: pmu
model: {preset: tiny-hybrid}
engine:
  vllm_version: v0.31
  prefix_match_unit: %s
  enable_prefix_caching: true
  num_gpu_blocks_override: 400
workload: {kind: poisson, rate: 1, count: 2, prompt_len: {dist: constant, value: 64}, output_len: {dist: constant, value: 4}}
`

func pmu(unit string) []byte { return []byte(strings.Replace(pmuDoc, "%s", unit, 1)) }

// engine.prefix_match_unit is hash_block_size where vLLM hashes finer
// (resolve_kv_cache_block_sizes @ 6adad0876); below the Mamba align
// block it turns fine-grained hits on (enable_partial_hash_hits), and so
// the scheduler's mamba_partial_cache_hit; the cache manager takes the
// hash block. At the block, or unset (the gcd, 32), nothing changes.
func TestPrefixMatchUnitSettles(t *testing.T) {
	for _, tc := range []struct {
		unit       string
		hash       int
		fine       bool
		cacheBlock int
	}{{"8", 8, true, 8}, {"16", 16, true, 16}, {"32", 32, false, 0}, {"0", 32, false, 0}} {
		st, err := setup.Parse(pmu(tc.unit), "pmu.yaml", nil)
		if err != nil {
			t.Fatalf("prefix_match_unit %s: %v", tc.unit, err)
		}
		if st.Layout.BlockSize != 32 || len(st.Groups) != 4 || st.SchedulerBlockSize != 32 {
			t.Fatalf("block %d, %d groups, scheduler block %d: the test assumes 32, 4, 32", st.Layout.BlockSize, len(st.Groups), st.SchedulerBlockSize)
		}
		c := st.Sched.Config
		if st.HashBlockSize != tc.hash || st.FineGrainedHits != tc.fine || c.HashBlockSize != tc.hash || c.MambaPartialCacheHit != tc.fine || st.Cache.HashBlockSize != tc.cacheBlock {
			t.Errorf("prefix_match_unit %s: hash %d, fine-grained %v, scheduler's hash %d and partial hit %v, manager's hash %d; want %d, %v, %d, %v, %d",
				tc.unit, st.HashBlockSize, st.FineGrainedHits, c.HashBlockSize, c.MambaPartialCacheHit, st.Cache.HashBlockSize, tc.hash, tc.fine, tc.hash, tc.fine, tc.cacheBlock)
		}
		if len(st.Warnings) != 0 {
			t.Errorf("prefix_match_unit %s: warnings %q", tc.unit, st.Warnings)
		}
	}
}

// A unit that does not divide every group's block is vLLM's ValueError;
// before #46384 (statesim's v0.28 row) the option does not exist. Both
// name the file, the line and the field.
func TestPrefixMatchUnitRefused(t *testing.T) {
	for _, tc := range []struct {
		unit string
		sets []string
		want string
	}{
		{"12", nil, "pmu.yaml:5: field engine.prefix_match_unit: vLLM refuses it at start-up (resolve_kv_cache_block_sizes, vllm/v1/core/kv_cache_utils.py @ 6adad0876): ValueError: Invalid prefix_match_unit=12; all KV cache group block sizes must be divisible by prefix_match_unit. Got group block sizes=[32, 32, 32, 32]."},
		{"64", nil, "Invalid prefix_match_unit=64;"},
		{"8", []string{"engine.vllm_version=v0.22"}, "pmu.yaml:5: field engine.prefix_match_unit: needs vLLM's #46384 (v0.28 on), which v0.22 lacks"},
		{"8", []string{"engine.vllm_version=v0.27"}, "which v0.27 lacks"},
		{"8", []string{"engine.patches=[-46384]"}, "which v0.31-46384 lacks"},
		{"8", []string{"engine.vllm_version=v0", "engine.enable_prefix_caching=false"}, "which v0 lacks"},
	} {
		_, err := setup.Parse(pmu(tc.unit), "pmu.yaml", tc.sets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("prefix_match_unit %s %v: %v, want %q", tc.unit, tc.sets, err, tc.want)
		}
	}
	if _, err := setup.Parse(pmu("8"), "pmu.yaml", []string{"engine.vllm_version=v0.28"}); err != nil {
		t.Errorf("v0.28: %v", err)
	}
}

// Where vLLM ignores the option (hash_block_size stays the scheduler
// block) the run warns and settles as without it: all mode, prefix
// caching off, one KV cache group. Ignored, a unit that divides no block
// is no error, as in vLLM.
func TestPrefixMatchUnitIgnored(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		why  string
	}{
		{[]string{"engine.mamba_cache_mode=all"}, "the Mamba groups are not in mamba_cache_mode align"},
		{[]string{"engine.enable_prefix_caching=false"}, "block hashing is off"},
		{[]string{"model.preset=tiny-attention"}, "the model has one KV cache group"},
	} {
		st, err := setup.Parse(pmu("12"), "pmu.yaml", tc.sets)
		if err != nil {
			t.Fatalf("%v: %v", tc.sets, err)
		}
		want := "engine.prefix_match_unit 12 is not used: " + tc.why
		if len(st.Warnings) != 1 || !strings.HasPrefix(st.Warnings[0], want) {
			t.Errorf("%v: warnings %q, want one starting %q", tc.sets, st.Warnings, want)
		}
		if st.HashBlockSize != st.SchedulerBlockSize || st.FineGrainedHits || st.Sched.Config.MambaPartialCacheHit || st.Cache.HashBlockSize != 0 {
			t.Errorf("%v: hash %d (scheduler %d), fine-grained %v, partial hit %v, manager's hash %d; want the scheduler block, off, off, 0",
				tc.sets, st.HashBlockSize, st.SchedulerBlockSize, st.FineGrainedHits, st.Sched.Config.MambaPartialCacheHit, st.Cache.HashBlockSize)
		}
	}
}

// #51843: a manager without fine-grained lookups (the DFlash drafter's
// sliding-window group, 272 tokens beside the target's 544) keeps hits
// block-aligned unless its block is the hash block. Unset, the hash
// block is the gcd, 272: on; a unit of 16 is below the drafter's block:
// off; 272 again: on.
func TestPrefixMatchUnitDraftWindow(t *testing.T) {
	for _, tc := range []struct {
		unit string
		hash int
		fine bool
	}{{"0", 272, true}, {"16", 16, false}, {"272", 272, true}} {
		st, err := setup.Parse([]byte(dflashDoc), "dflash.yaml", []string{"engine.prefix_match_unit=" + tc.unit})
		if err != nil {
			t.Fatal(err)
		}
		if st.HashBlockSize != tc.hash || st.FineGrainedHits != tc.fine || st.Sched.Config.MambaPartialCacheHit != tc.fine || st.Cache.HashBlockSize != tc.hash {
			t.Errorf("prefix_match_unit %s: hash %d, fine-grained %v, partial hit %v, manager's hash %d; want %d, %v, %v, %d",
				tc.unit, st.HashBlockSize, st.FineGrainedHits, st.Sched.Config.MambaPartialCacheHit, st.Cache.HashBlockSize, tc.hash, tc.fine, tc.fine, tc.hash)
		}
	}
}
