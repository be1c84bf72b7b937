package model

import "fmt"

// ReleaseRules are the vLLM changes that move a state's dtype or width,
// the block size or the groups, as the release a scenario runs has them
// (ApplyRelease sets them; the zero value is current main's rules, @
// 6adad0876).
type ReleaseRules struct {
	// GDNSSMFromConv: the Gated DeltaNet layers' temporal state takes the
	// conv state's dtype, whatever mamba_ssm_cache_dtype says (vLLM before
	// #34489: gated_delta_net_state_dtype took mamba_cache_dtype alone).
	GDNSSMFromConv bool
	// Mamba2NoSpec: Mamba2's conv state does not widen under speculative
	// decoding (before #33726 passed num_spec to mamba2_state_shape).
	Mamba2NoSpec bool
	// GroupSlack125: the group size is the largest bucket only within
	// 1.25× of the smallest (before #36684's 1.5×; groupSizeSlack).
	GroupSlack125 bool
	// MLANoAlign128: a hybrid MLA model's block is aligned to the
	// backend's kernel block alone (before #50000 raised it to 128; Unify).
	MLANoAlign128 bool
	// Log is what vLLM logs while resolving the cache arguments, at INFO
	// unless the line starts with "WARNING ".
	Log []string
}

// Release changes, each with the first vLLM minor release statesim models
// that has it (statesim models 0.13, 0.14, 0.19, 0.22 to 0.31; a change
// merged between two of them is in the later one). Merge dates are from
// the upstream history (git log on vllm-project/vllm main).
const (
	// #29978 (6038b1b04, merged 2025-12-05, after v0.12.0: in v0.13.0,
	// inferred): NemotronHForCausalLMConfig.verify_and_update_config sets
	// an "auto" mamba_ssm_cache_dtype to the config's
	// mamba_ssm_cache_dtype, else float16.
	relNemotronHSSM = 13
	// #34489 (eea3024f4, merged 2026-02-12, between v0.14 and v0.19): GDN
	// layers' temporal state takes mamba_ssm_cache_dtype, and
	// Qwen3_5ForConditionalGenerationConfig sets an "auto" one to the
	// config's mamba_ssm_dtype (warning when the flag differs).
	relGDNSSMCacheDType = 19
	// #33726 (f5972a872, merged 2026-02-24): Nemotron-H MTP; mamba2_state_shape
	// takes num_spec and Nemotron-H's and Mamba2's model classes pass it.
	relMamba2NumSpec = 19
	// #39032 (dfa5062a8, merged 2026-04-06, three days after v0.19.0 of
	// 2026-04-03: first in v0.20.0, so v0.22 here): Nemotron-H's default
	// becomes float32.
	relNemotronHSSMFloat32 = 22
	// #36684 (891c60dcd, merged 2026-03-12, v0.18 or v0.19): the group
	// size takes the largest bucket within 1.5× of the smallest (was 1.25×).
	relGroupSlack15 = 19
	// #50000 (aeeb36b1f, merged 2026-07-30, in v0.27.0 of 2026-08-10): a
	// hybrid MLA model's block alignment is at least 128 tokens.
	relMLAAlign128 = 27
	// #50210 (ad5d29db7, merged 2026-07-29, before v0.27.0 of 2026-08-10,
	// inferred): the text-only Qwen3_5ForCausalLM and
	// Qwen3_5MoeForCausalLM get the Qwen3.5 hook.
	relQwen35TextOnly = 27
)

// ApplyRelease resolves the cache arguments the way vLLM release 0.minor
// does between parsing the flags and building the layers, for the shape's
// architecture (MODELS_CONFIG_MAP in vllm/model_executor/models/config.py
// @ 6adad0876): an "auto" mamba_ssm_cache_dtype may take the config's own
// dtype or the model's default, and the release's calculator rules are
// set. minor 0 (the v0 control, or a shape no scenario configured) keeps
// the flags as given and current main's calculators. Rules.Log gets the
// lines vLLM logs. Apply it once to a CacheConfig filled from the flags.
func (s *Shape) ApplyRelease(minor int) {
	c := &s.Cache
	c.Rules = ReleaseRules{}
	if minor == 0 {
		return
	}
	c.Rules.GDNSSMFromConv = minor < relGDNSSMCacheDType
	c.Rules.Mamba2NoSpec = minor < relMamba2NumSpec
	c.Rules.GroupSlack125 = minor < relGroupSlack15
	c.Rules.MLANoAlign128 = minor < relMLAAlign128
	auto := c.MambaSSMCacheDType == "" || c.MambaSSMCacheDType == "auto"
	c.Rules.Log = s.hook(minor, auto)
}

// hook is the architecture's verify_and_update_config at release 0.minor.
func (s *Shape) hook(minor int, auto bool) []string {
	c := &s.Cache
	switch s.Architecture {
	case "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM":
		if minor < relNemotronHSSM || !auto {
			return nil
		}
		d := "float16"
		if minor >= relNemotronHSSMFloat32 {
			d = "float32"
		}
		if s.ConfigSSMDTypeKey == "mamba_ssm_cache_dtype" {
			d = s.ConfigSSMDType
		}
		c.MambaSSMCacheDType = d
		return []string{fmt.Sprintf("Updating mamba_ssm_cache_dtype to '%s' for NemotronH model", d)}
	case "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM":
		if minor < relQwen35TextOnly {
			return nil
		}
		return s.qwen35SSMDType(auto)
	case "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration":
		if minor < relGDNSSMCacheDType {
			return nil
		}
		return s.qwen35SSMDType(auto)
	}
	return nil
}

// qwen35SSMDType is Qwen3_5ForConditionalGenerationConfig's hook.
func (s *Shape) qwen35SSMDType(auto bool) []string {
	if s.ConfigSSMDTypeKey != "mamba_ssm_dtype" {
		return nil
	}
	if auto {
		s.Cache.MambaSSMCacheDType = s.ConfigSSMDType
		return nil
	}
	if s.Cache.MambaSSMCacheDType != s.ConfigSSMDType {
		return []string{fmt.Sprintf("WARNING Qwen3.5 model specifies mamba_ssm_dtype='%s' in its config, but --mamba-ssm-cache-dtype='%s' was passed. Using the user-specified value.",
			s.ConfigSSMDType, s.Cache.MambaSSMCacheDType)}
	}
	return nil
}

// numSpec is the num_spec the shape's model class passes to its state
// shape calculator: speculative_config.num_speculative_tokens for Gated
// DeltaNet (qwen3_next.py, qwen3_5.py) and KDA (Kimi Linear's model
// class), and for Mamba2 in Nemotron-H and Mamba2 (nemotron_h.py,
// mamba2.py) since #33726; 0 for Mamba1, ShortConv and linear attention,
// whose calculators take none, and for the other Mamba2 model classes
// (Bamba, Granite-4.0-H, Falcon-H1, Zamba2), which do not pass it (all @
// 6adad0876).
func (s *Shape) numSpec() int {
	k := s.Cache.NumSpeculativeTokens
	switch s.StateKind() {
	case GatedDeltaNet, KDA:
		return k
	case Mamba2:
		if !s.Cache.Rules.Mamba2NoSpec && (s.ModelType == "nemotron_h" || s.ModelType == "mamba2") {
			return k
		}
	}
	return 0
}
