package engine

import (
	"fmt"

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
