package vllmargs

import (
	"strings"
)

// kind is how a flag's value is read.
type kind uint8

const (
	kInt      kind = iota // an integer
	kHumanInt             // an integer, or vLLM's 8k / 32K (human_readable_int)
	kFloat
	kBool    // --X / --no-X (argparse.BooleanOptionalAction)
	kChoice  // one of choices (lower-cased where vLLM's enum is upper case)
	kSpec    // --speculative-config JSON
	kCompile // --compilation-config JSON
	kEager   // --enforce-eager: cudagraph_mode none
	kDType   // --dtype: model.dtype
	kKV      // --kv-transfer-config JSON
)

// flag is one vLLM argument statesim models.
type flag struct {
	name    string // vLLM's long name without "--"
	short   string // its short form, "" if none
	key     string // the scenario key it sets
	kind    kind
	choices []string
}

// modelled lists the flags statesim maps, in docs/audit.md's order.
var modelled = []flag{
	{name: "max-num-seqs", key: "engine.max_num_seqs", kind: kInt},
	{name: "max-num-batched-tokens", key: "engine.max_num_batched_tokens", kind: kHumanInt},
	{name: "max-model-len", key: "engine.max_model_len", kind: kHumanInt},
	{name: "block-size", key: "engine.block_size", kind: kInt},
	{name: "gpu-memory-utilization", key: "engine.gpu_memory_utilization", kind: kFloat},
	{name: "num-gpu-blocks-override", key: "engine.num_gpu_blocks_override", kind: kInt},
	{name: "enable-prefix-caching", key: "engine.enable_prefix_caching", kind: kBool},
	// MambaCacheMode = Literal["all", "align", "none"] (config/cache.py).
	{name: "mamba-cache-mode", key: "engine.mamba_cache_mode", kind: kChoice, choices: []string{"all", "align", "none"}},
	{name: "mamba-block-size", key: "engine.mamba_block_size", kind: kInt},
	// cache_config.prefix_match_unit (#46384; vllm/engine/arg_utils.py @
	// 6adad0876): an int, None when left out.
	{name: "prefix-match-unit", key: "engine.prefix_match_unit", kind: kInt},
	// MambaDType = Literal["auto", "float32", "float16", "bfloat16"].
	{name: "mamba-cache-dtype", key: "engine.mamba_cache_dtype", kind: kChoice, choices: []string{"auto", "float32", "float16", "bfloat16"}},
	{name: "mamba-ssm-cache-dtype", key: "engine.mamba_ssm_cache_dtype", kind: kChoice, choices: []string{"auto", "float32", "float16", "bfloat16"}},
	// CacheDType's members statesim sizes (the rest are refused by name).
	{name: "kv-cache-dtype", key: "engine.kv_cache_dtype", kind: kChoice, choices: []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"}},
	{name: "enable-chunked-prefill", key: "engine.enable_chunked_prefill", kind: kBool},
	{name: "long-prefill-token-threshold", key: "engine.long_prefill_token_threshold", kind: kInt},
	{name: "async-scheduling", key: "engine.async_scheduling", kind: kBool},
	{name: "scheduling-policy", key: "engine.scheduling_policy", kind: kChoice, choices: []string{"fcfs", "priority"}},
	{name: "tensor-parallel-size", short: "-tp", key: "engine.tensor_parallel_size", kind: kInt},
	{name: "speculative-config", key: "engine.speculative", kind: kSpec},
	{name: "compilation-config", short: "-cc", key: "engine.cudagraph_mode", kind: kCompile},
	{name: "enforce-eager", key: "engine.cudagraph_mode", kind: kEager},
	{name: "dtype", key: "model.dtype", kind: kDType},
	{name: "kv-transfer-config", key: "engine.kv_transfer_config.kv_connector", kind: kKV},
}

// ModelledFlags lists the vLLM flags statesim maps, "--name" each.
func ModelledFlags() []string {
	out := make([]string, len(modelled))
	for i, f := range modelled {
		out[i] = "--" + f.name
	}
	return out
}

func lookupFlag(name string) (*flag, bool) {
	for i := range modelled {
		if modelled[i].name == name {
			return &modelled[i], true
		}
	}
	return nil, false
}

func lookupShort(s string) (*flag, bool) {
	for i := range modelled {
		if modelled[i].short != "" && modelled[i].short == s {
			return &modelled[i], true
		}
	}
	return nil, false
}

// valueless are vLLM flags statesim does not model that take no value
// (store_true or BooleanOptionalAction in EngineArgs, AsyncEngineArgs and
// the API server's arguments), so that the token after one is read as
// what it is, not as its value.
var valueless = map[string]bool{
	"trust-remote-code": true, "skip-tokenizer-init": true, "enable-prompt-embeds": true,
	"data-parallel-hybrid-lb": true, "enable-expert-parallel": true, "enable-dbo": true,
	"enable-eplb": true, "eplb-log-balancedness": true, "disable-sliding-window": true,
	"disable-cascade-attn": true, "disable-log-stats": true, "aggregate-engine-logging": true,
	"disable-custom-all-reduce": true, "enable-mm-embeds": true, "interleave-mm-strings": true,
	"skip-mm-profiling": true, "enable-lora": true, "fully-sharded-loras": true,
	"ray-workers-use-nsight": true, "disable-chunked-mm-input": true,
	"disable-hybrid-kv-cache-manager": true, "enable-sleep-mode": true, "calculate-kv-scales": true,
	"use-tqdm-on-load": true, "kv-sharing-fast-prefill": true, "enable-log-requests": true,
	"disable-log-requests": true, "disable-mm-preprocessor-cache": true,
	"enable-multimodal-encoder-data-parallel": true, "enable-auto-tool-choice": true,
	"headless": true, "language-model-only": true, "disable-fastapi-docs": true,
	"enable-prompt-tokens-details": true, "enable-server-load-tracking": true,
	"enable-force-include-usage": true, "enable-request-id-headers": true,
	"disable-uvicorn-access-log": true, "enable-log-outputs": true,
	"return-tokens-as-token-ids": true, "disable-frontend-multiprocessing": true,
	"enable-tokenizer-info-endpoint": true, "enable-ssl-refresh": true,
}

// takesNoValue reports whether an unmodelled --name is a switch.
func takesNoValue(name string) bool {
	return valueless[name] || strings.HasPrefix(name, "no-") ||
		strings.HasPrefix(name, "enable-") || strings.HasPrefix(name, "disable-")
}

// specMethod maps vLLM's speculative_config.method to statesim's (mtp,
// eagle, ngram), or "" for a method statesim does not model. Every MTP
// model type (MTPModelTypes: qwen3_next_mtp, deepseek_mtp, ...) runs
// vLLM's MTP proposer; eagle3 the EAGLE one; ngram_gpu the n-gram one.
func specMethod(m string) string {
	switch {
	case m == "mtp" || strings.HasSuffix(m, "_mtp"):
		return "mtp"
	case m == "eagle" || m == "eagle3":
		return "eagle"
	case m == "ngram" || m == "ngram_gpu":
		return "ngram"
	}
	return ""
}

// cudagraphModes are CUDAGraphMode's members statesim models, by vLLM's
// (upper-case) name; FULL (full graphs for every batch) is not modelled.
var cudagraphModes = map[string]string{
	"NONE": "none", "PIECEWISE": "piecewise",
	"FULL_DECODE_ONLY": "full_decode_only", "FULL_AND_PIECEWISE": "full_and_piecewise",
}

// dtypes maps --dtype's choices (ModelDType) to model.dtype; "auto"
// keeps the model's own.
var dtypes = map[string]string{
	"half": "float16", "float16": "float16", "bfloat16": "bfloat16",
	"float": "float32", "float32": "float32",
}
