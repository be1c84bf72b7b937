// Package setup settles a scenario into the run it describes, once: the
// release with its patches, the model runner, the CUDA-graph mode, the
// speculative config, whether prefix caching is on and in which Mamba
// cache mode (enable_prefix_caching's default included), the KV cache
// layout, the block sizes (the hash block with prefix_match_unit, and
// whether prefix hits are fine-grained), the pool size, the state index width in effect, and the
// scheduler's, the cache's and the backends' settings, as plain values.
//
// Every rule that relates fields is applied here and only here, and bad
// input is still reported as FILE:LINE: field PATH: problem (scenarios'
// Source locates it). Package scenarios owns the format and each field's
// own range; nothing below this package parses vllm_version, patches or
// mamba_cache_mode, and nothing above it reads them again: the engine,
// the backends and the commands read a Setup.
//
// It runs nothing and allocates no pool; it reads files only through
// scenarios (Load).
package setup
