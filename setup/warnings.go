package setup

import (
	"fmt"

	"statesim/model"
	"statesim/scenarios"
	"statesim/statecache"
)

// modeWarning is the warning vLLM logs when it drops an asked-for Mamba
// cache mode because prefix caching is off
// (MambaModelConfig.verify_and_update_config,
// vllm/model_executor/models/config.py@1936cf38): the mode becomes none;
// empty when the mode runs as asked.
func modeWarning(sc *scenarios.Scenario, mode statecache.ResolvedMambaMode) string {
	m := sc.Engine.MambaCacheMode
	if m == "" || m == "none" || mode.PrefixCaching || sc.Model.Shape.NumMambaLayers() == 0 {
		return ""
	}
	return "Mamba cache mode is set to 'none' when prefix caching is disabled: engine.mamba_cache_mode " + m + " does not apply (enable_prefix_caching is off)"
}

// acceptWarning says that a fixed accepted count leaves acceptance_rate
// unused (both may be set: generated scenarios draw them apart, and a
// --set of accepted over a file's rate is the user's choice); empty when
// at most one of them applies.
func acceptWarning(sc *scenarios.Scenario) string {
	sp := &sc.Engine.Speculative
	if sp.Method == "" || sp.Accepted < 0 || sp.AcceptanceRate == 0 {
		return ""
	}
	return fmt.Sprintf("engine.speculative.acceptance_rate %g is not used: engine.speculative.accepted %d fixes the accepted drafts per row", sp.AcceptanceRate, sp.Accepted)
}

// MatchUnitWarning says that engine.prefix_match_unit is not used where
// resolve_kv_cache_block_sizes (vllm/v1/core/kv_cache_utils.py @
// 6adad0876) keeps hash_block_size at the scheduler block, which vLLM
// does without a word; empty when it applies or is unset.
func (st *Setup) MatchUnitWarning() string {
	e := &st.Scenario.Engine
	if e.PrefixMatchUnit <= 0 {
		return ""
	}
	ok, why := model.FinerHashing(st.Groups, st.blockHashing(), st.Mamba.Mode == statecache.MambaAlign)
	if ok {
		return ""
	}
	return fmt.Sprintf("engine.prefix_match_unit %d is not used: %s, so hash_block_size is the scheduler block, %d tokens (resolve_kv_cache_block_sizes)", e.PrefixMatchUnit, why, st.HashBlockSize)
}

// warnings are the start-up warnings of a settled scenario, in the order
// a run reports them: async scheduling turned off, a Mamba cache mode
// dropped, an acceptance rate or a prefix_match_unit left unused.
func (st *Setup) warnings() []string {
	var out []string
	for _, w := range []string{st.AsyncOff, modeWarning(st.Scenario, st.Mamba), acceptWarning(st.Scenario), st.MatchUnitWarning()} {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}
