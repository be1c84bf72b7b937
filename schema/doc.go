// Package schema writes JSON Schemas (draft 2020-12) for statesim's two
// input formats, the scenario and the sweep, from their Go types: every
// key the strict loaders accept (yaml tags, inline structs flattened),
// the type they decode it to (integers as "integer": the loaders take
// 1e6 and 100.0, which a YAML editor's JSON view reads as integral), no
// other keys (additionalProperties: false), and the value sets the
// loaders check by name (vllm_version, mamba_cache_mode, cudagraph_mode,
// workload kinds, presets, metrics, ...) as enums.
//
// The schema is an editor's aid: it catches what the loaders refuse for
// a type or a name. Range and cross-field checks stay with
// scenarios.Validate. `statesim schema` prints it; docs/schema/ holds the
// files the built-in scenarios and sweeps reference.
package schema
