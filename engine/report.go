package engine

import (
	"fmt"
	"math"
	"sort"

	"statesim/backend"
	"statesim/invariant"
	"statesim/report"
	"statesim/sched"
	"statesim/setup"
	"statesim/statecache"
)

// maxDivergent bounds the divergent requests a report lists; the
// backend's stats count all.
const maxDivergent = 1000

func newReport(st *setup.Setup, ix statecache.StateIndex) *report.Report {
	sc, sh, l := st.Scenario, &st.Shape, &st.Layout
	r := &report.Report{
		Scenario: sc.Name, Seed: sc.Seed, VLLMVersion: sc.Engine.VLLMVersion, Backend: sc.Backend.Kind,
		StateIndexBits: int(st.IndexBits), ForcePrefill: sc.Engine.ForcePrefillPath,
		Model: report.Model{Name: sh.Name, Layers: sh.NumLayers, AttentionLayers: sh.NumAttentionLayers(), MambaLayers: sh.NumMambaLayers()},
		Cache: report.Cache{NumGPUBlocks: st.Pool.NumBlocks, FromOverride: st.Pool.FromOverride, BlockSize: l.BlockSize,
			PageBytes: l.PageBytes, GroupSize: l.GroupSize, AttentionGroups: l.NumAttnGroups(), MambaGroups: l.NumMambaGroups(),
			StateStrideElems: l.StateStrideElems, FirstWrappingSlot: -1},
	}
	if st.V1 {
		r.ModelRunner = st.Runner.String()
	}
	if st.GuardIgnored {
		r.Notes = append(r.Notes, "engine.patches +53059 changes nothing under model runner v2: the PR edits V1's GPUModelRunner._is_uniform_decode only, and V2's CudaGraphManager.get_cudagraph_runtime_mode still dispatches by shape")
	}
	if b := st.Version.Behaviour(); b.GraphGuardV2 && st.Runner == sched.RunnerV1 {
		r.Notes = append(r.Notes, "engine.patches +51865 changes nothing under model runner v1: it gates Model Runner V2's uniform-decode dispatch only")
	}
	if sh.NumMambaLayers() > 0 {
		r.Model.DInner, r.Model.DState = sh.DInner(), sh.MambaDState
		r.Model.StateKind = string(sh.StateKind())
		for _, t := range sh.StateTensors() {
			r.Model.StateTensors = append(r.Model.StateTensors, fmt.Sprintf("%s %v %s", t.Name, t.Dims, t.DType))
		}
		r.Cache.FirstWrappingSlot = ix.FirstWrappingSlot()
	}
	return r
}

func (r *runner) finishReport() {
	rep := r.rep
	for _, inv := range invariant.All() {
		rep.Invariants = append(rep.Invariants, report.InvariantCount{Name: inv.String(), Count: r.rec.Count(inv)})
	}
	rep.Violations = sortedViolations(r.rec)
	if rep.Violations == nil {
		rep.Violations = []invariant.Violation{}
	}
	if r.kv.PrefixCaching() {
		rep.PrefixCache = prefixReport(r.kv, r.kv.Pool.Stats())
	}
	rep.Imposters = append([]report.Imposter{}, r.sym.Imposters...)
	rep.ImpostersTotal = r.sym.Stats.Imposters
	rep.MisclassifiedRows = r.sym.Stats.Misclassified
	rep.CorruptedRequests = r.sym.Stats.CorruptedRequests
	rep.Cache.HighestSlot = int64(r.sym.Stats.HighestSlot)
	rep.Cache.HighestBlock = int64(r.kv.Pool.HighWater)
	rep.MaxBatchRows = r.metrics.maxRunning
	rep.RowSteps = r.metrics.rowSteps
	if rep.SimTimeS > 0 {
		rep.Throughput.RequestsPerS = round3(float64(rep.Finished) / rep.SimTimeS)
		rep.Throughput.OutputTokensPerS = round3(float64(rep.OutputTokens) / rep.SimTimeS)
	}
	rep.SimTimeS = round3(rep.SimTimeS*1e3) / 1e3
	rep.Latency.TTFT = percentiles(&r.metrics.ttft)
	rep.Latency.ITL = percentiles(&r.metrics.itl)
	rep.Latency.E2E = percentiles(&r.metrics.e2e)
	rep.Latency.Queue = percentiles(&r.metrics.queue)
	r.metrics.closeRate(r.loop.Now())
	rep.Throughput.OutputTokensPerSWindows = ratePercentiles(&r.metrics.rate)
	// Requests still in flight (a stalled run) are compared too, before
	// any backend section is read.
	if f, ok := r.be.(backend.Flusher); ok {
		f.FlushPending()
	}
	if x, ok := r.be.(backend.Extra); ok {
		k, v := x.ReportExtra()
		rep.Extra = map[string]any{k: v}
	}
	if d, ok := r.be.(backend.Differ); ok {
		st := d.Stats()
		rep.Divergence = &st
		rep.DivergentRequests = d.Divergences()
		if len(rep.DivergentRequests) > maxDivergent {
			rep.DivergentRequests = rep.DivergentRequests[:maxDivergent]
		}
		if rep.DivergentRequests == nil {
			rep.DivergentRequests = []report.Divergence{}
		}
	}
}

// prefixReport is the prefix cache's section: vLLM's counters, overall
// and per KV cache group. Every group serves the same hit (the
// coordinator's common length: a hit must exist in every group), so each
// group reports the same tokens; what the Mamba groups cut from the
// attention groups' own hits is counted apart (DroppedHitTokens).
func prefixReport(kv *statecache.KVCacheManager, st statecache.PrefixCacheStats) *report.PrefixCache {
	pc := &report.PrefixCache{
		Requests: st.Requests, QueryTokens: st.Queries, HitTokens: st.Hits, HitRate: ratio(st.Hits, st.Queries),
		PreemptedRequests: st.PreemptedRequests, PreemptedQueryTokens: st.PreemptedQueries, PreemptedHitTokens: st.PreemptedHits,
		CachedBlocks: int64(kv.Pool.NumCachedBlocks()), EvictedBlocks: st.Evictions,
	}
	pc.PartialHitCopies, pc.PartialTailMoves = kv.CopiesOnWrite()
	for g := 0; g < len(kv.NewTable().Attn); g++ {
		pc.Groups = append(pc.Groups, report.RPrefixGroup{Group: int(kv.PoolGroup(g)), Kind: "attention",
			QueryTokens: st.Queries, HitTokens: st.Hits, HitRate: pc.HitRate})
	}
	if mode := kv.MambaMode(); mode != statecache.MambaNone {
		pc.MambaCacheMode, pc.DroppedHitTokens = mode.String(), kv.DroppedHitTokens()
		for g := 0; g < len(kv.NewTable().Mamba); g++ {
			pc.Groups = append(pc.Groups, report.RPrefixGroup{Group: int(kv.MambaPoolGroup(g)), Kind: "mamba " + mode.String(),
				QueryTokens: st.Queries, HitTokens: st.Hits, HitRate: pc.HitRate})
		}
		sort.Slice(pc.Groups, func(i, j int) bool { return pc.Groups[i].Group < pc.Groups[j].Group })
	}
	return pc
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(float64(a)/float64(b)*1e4) / 1e4
}
