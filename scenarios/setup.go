package scenarios

import (
	"fmt"

	"statesim/statecache"
)

// DefaultMaxMemoryGiB is checks.max_memory_gib's default: what a run may
// allocate on a 24 GiB machine with room left for the OS and a second run.
const DefaultMaxMemoryGiB = 16

// numericBackend says whether a backend kind holds the cache contents in
// host memory (the mock's tensors; cuda keeps a host shadow of the same
// size for its comparison).
func numericBackend(kind string) bool { return kind == "mock" || kind == "cuda" }

// CheckSetup is what vLLM and the simulator check once the pool size is
// known, before allocating it: the run's estimated host memory against
// checks.max_memory_gib, and, for a pool sized by the memory model, that
// one request at max_model_len fits the cache (vLLM's
// check_enough_kv_cache_memory, vllm/v1/core/kv_cache_utils.py). With
// num_gpu_blocks_override vLLM checks the profiled memory, not the
// override, so neither does this.
func (s *Scenario) CheckSetup(numBlocks int) error {
	l := s.Layout()
	fp := statecache.EstimateFootprint(numBlocks, l.BlockBytes(), numericBackend(s.Backend.Kind))
	if s.Engine.EnablePrefixCaching {
		fp = fp.WithPrefixCaching(numBlocks)
	}
	limit := s.Checks.MaxMemoryGiB
	if limit == 0 {
		limit = DefaultMaxMemoryGiB
	}
	if statecache.GiB(fp.Total()) > limit {
		what := fmt.Sprintf("%.2f GiB for the block pool of %d blocks", statecache.GiB(fp.Pool), numBlocks)
		if fp.Prefix > 0 {
			what += fmt.Sprintf(" + %.2f GiB for the prefix cache's records and table", statecache.GiB(fp.Prefix))
		}
		if fp.Caches > 0 {
			what += fmt.Sprintf(" + %.2f GiB for the %s backend's cache tensors", statecache.GiB(fp.Caches), s.Backend.Kind)
		}
		field := "engine.gpu_memory_utilization"
		if s.Engine.NumGPUBlocksOverride > 0 {
			field = "engine.num_gpu_blocks_override"
		}
		return &InputError{File: s.File, Path: "checks.max_memory_gib",
			Msg: fmt.Sprintf("the run needs about %.2f GiB of host memory (%s), over the limit of %g GiB: lower %s, or raise checks.max_memory_gib if this machine has the memory",
				statecache.GiB(fp.Total()), what, limit, field)}
	}
	if s.Engine.NumGPUBlocksOverride > 0 {
		return nil
	}
	need, longest := statecache.MaxModelLenFits(&l, numBlocks, s.Engine.MaxModelLen)
	if need <= int64(numBlocks)-1 {
		return nil
	}
	est := ""
	if longest > 0 {
		est = fmt.Sprintf(" Based on the available memory, the estimated maximum model length is %d.", longest)
	}
	return &InputError{File: s.File, Path: "engine.max_model_len",
		Msg: fmt.Sprintf("to serve at least one request with max_model_len %d, %d blocks (%.2f GiB) of KV cache and state are needed, more than the %d the cache holds (%.2f GiB).%s Try increasing gpu_memory_utilization or decreasing max_model_len, as vLLM says at start-up",
			s.Engine.MaxModelLen, need, statecache.GiB(need*l.BlockBytes()), numBlocks-1, statecache.GiB(int64(numBlocks-1)*l.BlockBytes()), est)}
}
