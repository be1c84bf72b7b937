package setup

import (
	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/statecache"
)

// hybridPrefixDefault is no value: a hybrid left at enable_prefix_caching's
// default takes its release's (statecache.ResolveMambaCacheMode: on from
// v0.28, #50991).
var hybridPrefixDefault *bool

// prefixCaching is enable_prefix_caching as given, else its default as
// vLLM resolves it where statesim models it: on for attention-only
// models under V1 (V1's default since it became the default engine in
// v0.8.0; EngineArgs leaves it None and V1 turns it on); for hybrids the
// release's; off under V0 (its default), for models without attention
// layers (statesim's prefix cache needs an attention group) and for the
// numeric backends (mock, cuda): the cuda backend does not model shared
// KV blocks, and the mock runs them only when asked (a sessions workload's
// shared outputs are not its samples).
// align is the layout in modes none and align.
func (r *resolver) prefixCaching(align *model.Layout) *bool {
	e, sh := &r.sc.Engine, &r.sc.Model.Shape
	if e.EnablePrefixCaching != nil {
		return e.EnablePrefixCaching
	}
	on, off := true, false
	switch {
	case r.v0 || scenarios.NumericBackend(r.sc.Backend.Kind):
		return &off
	case sh.NumMambaLayers() == 0:
		return &on
	case sh.NumAttentionLayers() == 0 || !e.EnableChunkedPrefill || align.BlockSize > e.MaxNumBatchedTokens:
		// The default align would be refused at start-up (it needs
		// chunked prefill and a block within the step budget, #34445):
		// statesim keeps caching off instead.
		return &off
	case r.st.Spec.On():
		return &off // align's speculative blocks are not modelled: a known gap
	}
	return hybridPrefixDefault
}

// mamba settles prefix caching and the Mamba cache mode (vLLM's
// MambaModelConfig.verify_and_update_config, statecache.
// ResolveMambaCacheMode), the layout that follows from them, and refuses
// what prefix caching is not modelled for and the modes vLLM would refuse.
func (r *resolver) mamba() error {
	e, st := &r.sc.Engine, r.st
	sh := &r.sc.Model.Shape
	count("mamba_cache_mode")
	req, err := statecache.ParseMambaCacheMode(e.MambaCacheMode)
	if err != nil {
		return r.fail("engine.mamba_cache_mode", "%v", err)
	}
	if st.Layout, err = r.layout(sh); err != nil {
		return err
	}
	pc := r.prefixCaching(&st.Layout)
	switch {
	case sh.NumMambaLayers() == 0:
		st.Mamba = statecache.ResolvedMambaMode{PrefixCaching: *pc}
	case r.v0:
		if req != statecache.MambaNone {
			return r.fail("engine.mamba_cache_mode", "the v0 engine has no mamba_cache_mode")
		}
		st.Mamba = statecache.ResolvedMambaMode{PrefixCaching: *pc}
	default:
		st.Mamba, err = statecache.ResolveMambaCacheMode(statecache.MambaModeConfig{
			Release: st.Release, PrefixCaching: pc, Requested: req,
			SupportsAll:      statecache.SupportsMambaPrefixCaching(sh.StateKind()),
			NoChunkedPrefill: !e.EnableChunkedPrefill, SpecDecode: st.Spec.K > 0,
		})
		if err != nil {
			return r.fail("engine.mamba_cache_mode", "%v", err)
		}
	}
	all := st.Mamba.PrefixCaching && st.Mamba.Mode == statecache.MambaAll
	if all {
		// In mamba_cache_mode all the block is a multiple of the Mamba
		// kernel's chunk (model.Unify); mamba_block_size is that chunk.
		c := *sh
		c.Cache.MambaChunkAligned, c.Cache.MambaBlockSize = true, e.MambaBlockSize
		if st.Layout, err = r.layout(&c); err != nil {
			return err
		}
	}
	// The layout's block size: a hybrid's attention block grows until its
	// page holds a state (page unification), and the Mamba groups share it.
	bs := st.Layout.BlockSize
	if !all && e.MambaBlockSize != 0 && e.MambaBlockSize != bs {
		return r.fail("engine.mamba_block_size", "must be 0 or the unified block size (%d for block_size %d), got %d: statesim gives every KV cache group one block size (vLLM's page unification)", bs, e.BlockSize, e.MambaBlockSize)
	}
	if !st.Mamba.PrefixCaching {
		return nil
	}
	const f = "engine.enable_prefix_caching"
	switch {
	case r.v0:
		return r.fail(f, "not modelled for the v0 engine")
	case r.sc.Backend.Kind == "cuda":
		return r.fail(f, "the %s backend does not model shared KV blocks: use backend.kind symbolic or mock", r.sc.Backend.Kind)
	case r.sc.Backend.Kind == "mock" && r.sc.Workload.Kind == "sessions":
		// A next turn names the previous turn's output as its prefix; the
		// mock's outputs are its own samples, not that segment's tokens.
		return r.fail(f, "the mock backend's generated tokens are its own samples, so a session's next turn cannot share them as a prefix: use backend.kind symbolic, or a trace or synthetic workload")
	case sh.NumAttentionLayers() == 0:
		return r.fail(f, "a model without attention layers: statesim's prefix cache needs an attention group")
	case all && st.Spec.K > 0:
		return r.fail(f, "%v", statecache.ErrSpecMambaPrefixCaching)
	case st.Mamba.Mode == statecache.MambaAlign && !st.Version.Behaviour().AlignChunkEnds:
		// Before #50000 (the v0.28 row) vLLM asserts at start-up that a
		// block fits the step's budget (#34445) and the long-prefill
		// threshold (#35122); from it the split advances inside a block
		// instead.
		if err := sched.CheckMambaAlignBudget(bs, e.MaxNumBatchedTokens); err != nil {
			return r.fail("engine.max_num_batched_tokens", "%v", err)
		}
		if err := sched.CheckMambaAlignThreshold(bs, e.LongPrefillTokenThreshold); err != nil {
			return r.fail("engine.long_prefill_token_threshold", "%v", err)
		}
	}
	return nil
}
