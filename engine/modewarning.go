package engine

import (
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
