package schema

import (
	"encoding/json"
	"reflect"
	"strings"

	"statesim/model"
	"statesim/scenarios"
	"statesim/sched"
	"statesim/sweep"
)

// Draft is the JSON Schema dialect written.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Object is a JSON Schema node.
type Object = map[string]any

// stateDTypes are mamba_cache_dtype's and mamba_ssm_cache_dtype's values
// (scenarios.validateCacheArgs).
var stateDTypes = []string{"auto", "float32", "float16", "bfloat16"}

// enums are the scenario keys whose values the loader checks by name.
func enums() map[string][]string {
	return map[string][]string{
		"model.preset":                 model.AllPresetNames(),
		"engine.vllm_version":          sched.VersionNames(),
		"engine.scheduling_policy":     {"fcfs", "priority"},
		"engine.mamba_cache_mode":      {"", "none", "align", "all"},
		"engine.cudagraph_mode":        {"none", "piecewise", "full_decode_only", "full_and_piecewise"},
		"engine.model_runner":          {"", "v1", "v2"},
		"engine.speculative.method":    {"", "mtp", "eagle", "ngram", "dflash"},
		"engine.mamba_cache_dtype":     stateDTypes,
		"engine.mamba_ssm_cache_dtype": stateDTypes,
		"engine.kv_cache_dtype":        {"auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2"},
		"backend.kind":                 {"symbolic", "mock", "cuda"},
		"workload.kind":                {"batches", "poisson", "rollouts", "sessions", "trace", "synthetic"},
		"workload.format":              {"", "azure", "burstgpt", "mooncake", "jsonl"},
		"workload.time_unit":           {"", "s", "ms", "us", "ns"},
		"workload.prompt_len.dist":     {"constant", "uniform", "lognormal", "trace"},
		"workload.output_len.dist":     {"constant", "uniform", "lognormal", "trace"},
	}
}

// Scenario is the scenario format's schema.
func Scenario() Object {
	s := walk(reflect.TypeOf(scenarios.Scenario{}), "", enums(), true)
	s["$schema"] = Draft
	s["$id"] = "https://statesim.dev/schema/scenario.schema.json"
	s["title"] = "statesim scenario"
	s["description"] = "A replayable statesim experiment: model, vLLM engine arguments under vLLM's names, device, workload, backend, timing and checks (README, 'Scenario format')."
	props := s["properties"].(Object)
	props["model"].(Object)["properties"].(Object)["hf_config"].(Object)["examples"] = append(scenarios.BuiltinModels(), scenarios.BuiltinModelIDs()...)
	props["engine"].(Object)["properties"].(Object)["patches"] = Object{
		"description": "single vLLM PRs added (+N) or removed (-N) on top of vllm_version",
		"anyOf": []any{
			Object{"type": "string", "pattern": `^[+-]#?[0-9]+$`},
			Object{"type": "array", "items": Object{"type": "string", "pattern": `^[+-]#?[0-9]+$`}},
		},
	}
	return s
}

// Sweep is the sweep format's schema (sweep.parse).
func Sweep() Object {
	var metrics []string
	for _, m := range sweep.Metrics {
		metrics = append(metrics, m.Name)
	}
	str := Object{"type": "string"}
	return Object{
		"$schema":              Draft,
		"title":                "statesim sweep",
		"description":          "A grid of scenario runs: a scenario, fixed --set overrides, the varied keys and the seeds per point (docs/sweeps.md).",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"scenario", "vary"},
		"properties": Object{
			"name":        str,
			"description": str,
			"scenario":    Object{"type": "string", "description": "a built-in scenario or a scenario file, relative to the sweep file"},
			"set":         Object{"type": "array", "items": Object{"type": "string", "pattern": `^[^=]+=`}},
			"vary": Object{"type": "array", "minItems": 1, "items": Object{
				"type": "object", "additionalProperties": false, "required": []any{"key", "values"},
				"properties": Object{
					"key":    Object{"type": "string", "minLength": 1},
					"values": Object{"type": "array", "minItems": 1, "items": str},
				},
			}},
			"seeds":  Object{"type": "integer", "minimum": 1},
			"metric": Object{"type": "string", "enum": toAny(metrics)},
		},
	}
}

// walk writes the schema of t, a type the scenario loader decodes; path
// is its key path (for enums). Nested structs also take null, which the
// loader reads as "keep the defaults".
func walk(t reflect.Type, path string, en map[string][]string, root bool) Object {
	switch t.Kind() {
	case reflect.Struct:
		props := Object{}
		fields(t, path, en, props)
		o := Object{"type": "object", "additionalProperties": false, "properties": props}
		if !root {
			o["type"] = []any{"object", "null"}
		}
		return o
	case reflect.String:
		o := Object{"type": "string"}
		if vs, ok := en[path]; ok {
			o["enum"] = toAny(vs)
		}
		return o
	case reflect.Int, reflect.Int64:
		return Object{"type": "integer"}
	case reflect.Uint64:
		return Object{"type": "integer", "minimum": 0}
	case reflect.Float64:
		return Object{"type": "number"}
	case reflect.Bool:
		return Object{"type": "boolean"}
	case reflect.Slice:
		return Object{"type": "array", "items": walk(t.Elem(), path+"[]", en, false)}
	}
	return Object{}
}

func fields(t reflect.Type, path string, en map[string][]string, props Object) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			fields(sf.Type, path, en, props)
			continue
		}
		if name == "" {
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		props[name] = walk(sf.Type, p, en, false)
	}
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// JSON is o indented, with a final newline (as committed under docs/schema).
func JSON(o Object) []byte {
	b, _ := json.MarshalIndent(o, "", "  ")
	return append(b, '\n')
}
