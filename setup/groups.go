package setup

import (
	"statesim/model"
	"statesim/statecache"
)

// groups settles the KV cache groups with each spec's block size,
// cache_config.mamba_block_size and cache_config.block_size as vLLM
// leaves them after start-up (model.CacheBlockSize).
func (r *resolver) groups() {
	st := r.st
	st.MambaBlockSize = r.mambaBlockSize()
	st.Groups = st.Shape.GroupSpecsWithDraft(&st.Layout, st.MambaBlockSize, st.Draft)
	st.CacheBlockSize = model.CacheBlockSize(st.Groups, st.Layout.BlockSize)
	st.SchedulerBlockSize = model.SchedulerBlockSize(st.Groups, st.Layout.BlockSize)
	st.HashBlockSize = model.HashBlockSize(st.Groups, st.Layout.BlockSize, st.Mamba.PrefixCaching, st.Mamba.Mode == statecache.MambaAlign)
	st.WorkerBlockSize = workerBlockSize(st.Shape.Cache.TensorParallelSize, st.CacheBlockSize, st.Layout.BlockSize)
	st.SeedBlockSize = st.WorkerBlockSize
	if st.Version.Behaviour().SeedMambaBlock {
		st.SeedBlockSize = st.MambaBlockSize
	}
}

// workerBlockSize is cache_config.block_size where the model runner reads
// it. At world size 1 ParallelConfig picks the in-process executor
// ("uni", vllm/config/parallel.py @ 6adad0876), whose worker shares the
// engine core's VllmConfig and so reads the core's later minimum
// (coreBlock). Above it the workers are processes ("mp") spawned with
// their own copy, which each sets once from the platform
// (update_block_size_for_backend after load_model in WorkerProc.__init__,
// vllm/v1/executor/multiproc_executor.py @ 6adad0876; EngineCore syncs
// max_model_len to them afterwards, not the block size): the unified
// block, platformBlock.
func workerBlockSize(tensorParallel, coreBlock, platformBlock int) int {
	if tensorParallel > 1 {
		return platformBlock
	}
	return coreBlock
}

// mambaBlockSize is cache_config.mamba_block_size as vLLM resolves it,
// 0 for a model without Mamba layers: without prefix caching the
// mamba_block_size given, else max_model_len
// (MambaModelConfig.verify_and_update_config,
// vllm/model_executor/models/config.py @ 6adad0876); in align mode the
// block size, in all mode the chunk-rounded attention block, which the
// layout already made the block size (Platform._align_hybrid_block_size,
// vllm/platforms/interface.py @ 6adad0876).
func (r *resolver) mambaBlockSize() int {
	e, st := &r.sc.Engine, r.st
	switch {
	case st.Shape.NumMambaLayers() == 0:
		return 0
	case st.Mamba.PrefixCaching:
		return st.Layout.BlockSize
	case e.MambaBlockSize > 0:
		return e.MambaBlockSize
	}
	return e.MaxModelLen
}
