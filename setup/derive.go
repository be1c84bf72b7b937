package setup

import (
	"fmt"

	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
)

// derive fills what follows from the settled values: the scheduler's,
// the cache's and the backends' settings and the pool.
func (r *resolver) derive() {
	sc, st := r.sc, r.st
	e, sh := &sc.Engine, &st.Shape
	st.IndexBits = sh.IndexBits(e.StateIndexBits)
	b := st.Version.Behaviour()
	mode := st.Mamba
	policy := sched.FCFS
	if e.SchedulingPolicy == "priority" {
		policy = sched.Priority
	}
	alignBlock := 0
	if mode.Mode == statecache.MambaAlign && st.Layout.NumMambaGroups() > 0 {
		// The scheduler cuts prefill chunks to multiples of
		// cache_config.block_size as the engine core left it
		// (Scheduler._mamba_block_aligned_split, vllm/v1/core/sched/
		// scheduler.py @ 6adad0876), the Mamba block while every group
		// has it.
		alignBlock = st.CacheBlockSize
		if b.ChunkMambaBlock {
			alignBlock = st.MambaBlockSize
		}
	}
	st.Sched = Sched{
		Config: sched.Config{
			MaxNumBatchedTokens: e.MaxNumBatchedTokens, MaxNumSeqs: e.MaxNumSeqs,
			MaxModelLen: e.MaxModelLen, EnableChunkedPrefill: e.EnableChunkedPrefill,
			LongPrefillTokenThreshold: e.LongPrefillTokenThreshold, SchedulingPolicy: policy,
			StateKind: sh.StateKind(), FullRankGate: sh.Mixer.FullRankGate,
			MambaAlignBlockSize: alignBlock, AsyncScheduling: r.asyncScheduling(&b),
			PadSpecTail: b.PadSpecTail, HashBlockSize: st.HashBlockSize,
			// mamba_partial_cache_hit (scheduler.py @ 6adad0876 lines
			// 319-326): the align split with fine-grained hits on.
			MambaPartialCacheHit: alignBlock > 0 && st.FineGrainedHits,
			AlignChunkEnds:       b.AlignChunkEnds,
			Marconi:              b.Marconi,
		},
		ForcePrefill: e.ForcePrefillPath,
		GraphMaxBS:   min(e.MaxNumSeqs, 512),
	}
	if e.AsyncScheduling && !st.Sched.Config.AsyncScheduling {
		why := "mamba_cache_mode all (#33997 re-enables it for align only)"
		if mode.Mode == statecache.MambaAlign {
			why = "mamba_cache_mode align without #33997"
		}
		// vLLM's warning (#33352, vllm/config/vllm.py; the text as users
		// quote it, e.g. QwenLM/Qwen3-Coder#578), with statesim's reason.
		st.AsyncOff = fmt.Sprintf("Async scheduling is not compatible with prefix caching for Mamba models and will be disabled: engine.async_scheduling true runs synchronously (%s, %s; #33352)", why, b.Name)
	}
	// Freed blocks go to the head from PR #42656 with prefix caching (May
	// 2026, taken as first in v0.22.0; inferred, as docs/model.md dates
	// #42430), to the tail before; without it, to the tail in every
	// release modelled (the #42656 head order for caching off is not
	// modelled, so that those runs keep their block ids).
	order := statecache.FreeToTail
	if mode.PrefixCaching && st.Version.Since(sched.V022) {
		order = statecache.FreshToHead
	}
	st.Cache = statecache.ManagerOptions{
		EnablePrefixCaching: mode.PrefixCaching, FreeOrder: order, MambaCacheMode: mode.Mode,
		NumSpeculativeBlocks: st.Spec.K, SpecSafeFree: b.SpecSafeFree,
		// speculative_config.use_eagle(): MTP or EAGLE drafts, whose
		// prefix hits drop the last matched attention block (ngram has
		// no drafter KV).
		// use_eagle() holds for dflash too (vllm/config/speculative.py @
		// 6adad0876); with no group flagged is_eagle_group every group
		// takes the drop, a DFlash drafter's window groups included.
		UseEagle: st.Spec.On() && st.Spec.Lookahead() > 0, EagleMamba: b.EagleMamba,
		SlidingWindow:       st.Draft.SlidingWindow,
		KeepAttentionOnMiss: b.KeepAttentionOnMiss,
		// The store's external hit is 0 (scenarios.KVTransferConfig).
		ConnectorMaxHit: b.ConnectorHit.LocalHitMax(st.Connector, 0),
	}
	if st.Draft.NumLayers > 0 || st.HashBlockSize != st.SchedulerBlockSize {
		st.Cache.HashBlockSize, st.Cache.SchedulerBlockSize = st.HashBlockSize, st.SchedulerBlockSize
		st.Cache.PartialHashHits = st.FineGrainedHits
		// use_eagle backs the align split's last cacheable boundary off a
		// block (_mamba_block_aligned_split, scheduler.py @ 5206e5e28,
		// align mode's first version, and @ 6adad0876).
		st.Sched.Config.UseEagle = st.Cache.UseEagle
	}
	seed := sc.Backend.WeightSeed
	if seed == 0 {
		seed = sc.Seed
	}
	st.Backend = Backend{Kind: sc.Backend.Kind, WeightSeed: seed, Temperature: sc.Sampling.Temperature,
		DivergenceThreshold: sc.Backend.DivergenceThreshold, Shadow: sc.Backend.Shadow, IndexBits: st.IndexBits}
	st.Pool = r.pool()
}

// asyncScheduling is whether the scheduler runs one step ahead: asked
// for, and not turned off by Mamba prefix caching (#33352, vllm/config/
// vllm.py), which from #33997 leaves it on in align mode.
func (r *resolver) asyncScheduling(b *sched.Behaviour) bool {
	mode := r.st.Mamba
	if !r.sc.Engine.AsyncScheduling {
		return false
	}
	if mode.PrefixCaching && mode.Mode != statecache.MambaNone && b.AsyncOffMambaPC {
		return b.SpecSafeFree && mode.Mode == statecache.MambaAlign
	}
	return true
}

// pool sizes the block pool: num_gpu_blocks_override, or the memory
// model over the layout's block.
func (r *resolver) pool() Pool {
	sc := r.sc
	if n := sc.Engine.NumGPUBlocksOverride; n > 0 {
		return Pool{NumBlocks: n, FromOverride: true}
	}
	mem := statecache.Memory{DeviceGiB: sc.Device.MemoryGiB, GPUMemoryUtilization: sc.Engine.GPUMemoryUtilization,
		WeightsGiB: r.st.Shape.WeightsPerRankGiB(), ActivationGiB: sc.Device.ActivationGiB}
	n, err := mem.NumGPUBlocks(r.st.Layout.BlockBytes())
	return Pool{NumBlocks: n, Err: err}
}

// CheckPool is what vLLM and the simulator check once the pool size is
// known, before allocating it: that the memory model could size it, the
// run's estimated host memory against checks.max_memory_gib, and, for a
// pool sized by the memory model, that one request at max_model_len fits
// the cache (vLLM's check_enough_kv_cache_memory, vllm/v1/core/
// kv_cache_utils.py). With num_gpu_blocks_override vLLM checks the
// profiled memory, not the override, so neither does this.
func (s *Setup) CheckPool() error { return s.CheckPoolWith(-1) }

// CheckPoolWith is CheckPool with the numeric backend's own bound on its
// cache tensors in bytes (what they hold with every page of the pool
// written: the mock's tiny stand-in pages are not the layout's); −1
// takes the layout's bytes per block.
func (s *Setup) CheckPoolWith(caches int64) error {
	sc, l, numBlocks := s.Scenario, &s.Layout, s.Pool.NumBlocks
	if s.Pool.Err != nil {
		return &scenarios.InputError{File: sc.File, Msg: s.Pool.Err.Error()}
	}
	numeric := scenarios.NumericBackend(s.Backend.Kind)
	fp := statecache.EstimateFootprint(numBlocks, l.BlockBytes(), numeric)
	if numeric && caches >= 0 {
		fp.Caches = caches
	}
	if s.Mamba.PrefixCaching {
		fp = fp.WithPrefixCaching(numBlocks)
	}
	limit := sc.Checks.MaxMemoryGiB
	if limit == 0 {
		limit = scenarios.DefaultMaxMemoryGiB
	}
	if statecache.GiB(fp.Total()) > limit {
		what := fmt.Sprintf("%.2f GiB for the block pool of %d blocks", statecache.GiB(fp.Pool), numBlocks)
		if fp.Prefix > 0 {
			what += fmt.Sprintf(" + %.2f GiB for the prefix cache's records and table", statecache.GiB(fp.Prefix))
		}
		if fp.Caches > 0 {
			what += fmt.Sprintf(" + %.2f GiB for the %s backend's cache tensors, every page written", statecache.GiB(fp.Caches), s.Backend.Kind)
		}
		field := "engine.gpu_memory_utilization"
		if s.Pool.FromOverride {
			field = "engine.num_gpu_blocks_override"
		}
		return &scenarios.InputError{File: sc.File, Path: "checks.max_memory_gib",
			Msg: fmt.Sprintf("the run needs about %.2f GiB of host memory (%s), over the limit of %g GiB: lower %s, or raise checks.max_memory_gib if this machine has the memory",
				statecache.GiB(fp.Total()), what, limit, field)}
	}
	if s.Pool.FromOverride {
		return nil
	}
	need, longest := statecache.MaxModelLenFits(l, numBlocks, sc.Engine.MaxModelLen)
	if need <= int64(numBlocks)-1 {
		return nil
	}
	est := ""
	if longest > 0 {
		est = fmt.Sprintf(" Based on the available memory, the estimated maximum model length is %d.", longest)
	}
	return &scenarios.InputError{File: sc.File, Path: "engine.max_model_len",
		Msg: fmt.Sprintf("to serve at least one request with max_model_len %d, %d blocks (%.2f GiB) of KV cache and state are needed, more than the %d the cache holds (%.2f GiB).%s Try increasing gpu_memory_utilization or decreasing max_model_len, as vLLM says at start-up",
			sc.Engine.MaxModelLen, need, statecache.GiB(need*l.BlockBytes()), numBlocks-1, statecache.GiB(int64(numBlocks-1)*l.BlockBytes()), est)}
}
