package setup

import (
	"statesim/model"
	"statesim/sched"
	"statesim/statecache"
)

// groups settles the KV cache groups with each spec's block size,
// cache_config.mamba_block_size and cache_config.block_size as vLLM
// leaves them after start-up (model.CacheBlockSize), the hash block and
// whether hits are fine-grained.
func (r *resolver) groups() error {
	st := r.st
	st.MambaBlockSize = r.mambaBlockSize()
	st.Groups = st.Shape.GroupSpecsWithDraft(&st.Layout, st.MambaBlockSize, st.Draft)
	st.CacheBlockSize = model.CacheBlockSize(st.Groups, st.Layout.BlockSize)
	st.SchedulerBlockSize = model.SchedulerBlockSize(st.Groups, st.Layout.BlockSize)
	if err := r.hashBlock(); err != nil {
		return err
	}
	st.WorkerBlockSize = workerBlockSize(st.Shape.Cache.TensorParallelSize, st.CacheBlockSize, st.Layout.BlockSize)
	st.SeedBlockSize = st.WorkerBlockSize
	if st.Version.Behaviour().SeedMambaBlock {
		st.SeedBlockSize = st.MambaBlockSize
	}
	return nil
}

// hashBlock settles hash_block_size with engine.prefix_match_unit
// (model.HashBlockSizeWith: block hashing is on with prefix caching or a
// KV connector) and the coordinator's fine-grained hits. The option came
// with #46384 (481e481be, 2026-07-12; statesim's v0.28 row), which
// renamed an earlier cache_config.hash_block_size that had no flag.
func (r *resolver) hashBlock() error {
	st, unit := r.st, r.sc.Engine.PrefixMatchUnit
	const f = "engine.prefix_match_unit"
	partial := st.V1 && st.Version.Behaviour().PartialHashHits
	if unit > 0 && !partial {
		return r.fail(f, "needs vLLM's #46384 (v0.28 on), which %s lacks", r.versionName())
	}
	h, err := model.HashBlockSizeWith(st.Groups, st.Layout.BlockSize, st.blockHashing(), st.Mamba.Mode == statecache.MambaAlign, unit)
	if err != nil {
		return r.fail(f, "vLLM refuses it at start-up (resolve_kv_cache_block_sizes, vllm/v1/core/kv_cache_utils.py @ 6adad0876): ValueError: %v", err)
	}
	st.HashBlockSize = h
	st.FineGrainedHits = partial && st.Mamba.PrefixCaching && fineGrainedHits(st.Groups, st.Mamba.Mode, h)
	return nil
}

// blockHashing: something consumes the requests' block hashes, prefix
// caching or a KV connector (resolve_kv_cache_block_sizes).
func (st *Setup) blockHashing() bool {
	return st.Mamba.PrefixCaching || st.Connector != sched.ConnectorNone
}

// versionName is vllm_version as given, with the patches applied.
func (r *resolver) versionName() string {
	if v := r.st.Version; v != v.Release() {
		return v.String()
	}
	return r.sc.Engine.VLLMVersion
}

// fineGrainedHits is enable_partial_hash_hits for the groups over hashes
// of hashBlock tokens, as the prefix cache computes it
// (statecache.FineGrainedHits: HybridKVCacheCoordinator.__init__,
// kv_cache_coordinator.py @ 6adad0876 lines 620-645, with #51843): only
// the hybrid coordinator has it (get_kv_cache_coordinator: prefix
// caching on, more than one group). The rule of each group is read for
// its kind and block alone, so a sliding-window group's manager carries
// only its spec's block.
func fineGrainedHits(groups []model.GroupSpec, mode statecache.MambaCacheMode, hashBlock int) bool {
	if len(groups) <= 1 {
		return false
	}
	rules := make([]statecache.HitGroup, len(groups))
	for i, g := range groups {
		var rule statecache.HitRule = statecache.FullAttention{Block: g.BlockSize}
		switch g.Kind {
		case model.Mamba:
			rule = statecache.MambaHit{Mode: mode, Block: g.BlockSize}
		case model.SlidingWindow:
			rule = statecache.SlidingWindowHit{Manager: &statecache.SlidingWindowManager{Spec: statecache.SlidingWindowSpec{BlockSize: g.BlockSize}}}
		}
		rules[i] = statecache.HitGroup{Rule: rule, Groups: []int32{int32(i)}}
	}
	return statecache.FineGrainedHits(rules, hashBlock)
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
