package schema

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"statesim/scenarios"
	"statesim/scenarios/sweeps"
	"statesim/setup"
	"statesim/sweep"
)

// validate checks doc (decoded YAML) against the subset of JSON Schema
// this package writes: type, enum, properties, additionalProperties,
// required, items, anyOf, pattern, minimum, minItems, minLength. It
// returns the first violation, as PATH: problem.
func validate(s Object, doc any, path string) error {
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(a.(Object), doc, path) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: matches none of anyOf", path)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch x := t.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, e := range x {
				types = append(types, e.(string))
			}
		}
		if !slices.ContainsFunc(types, func(ty string) bool { return isType(doc, ty) }) {
			return fmt.Errorf("%s: want %v, got %T %v", path, types, doc, doc)
		}
	}
	if en, ok := s["enum"].([]any); ok && !slices.Contains(en, doc) {
		return fmt.Errorf("%s: %v is not one of %v", path, doc, en)
	}
	switch x := doc.(type) {
	case map[string]any:
		props, _ := s["properties"].(Object)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("%s: %s is required", path, r)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ps, ok := props[k]
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s.%s: unknown key", path, k)
				}
				continue
			}
			if err := validate(ps.(Object), x[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if n, ok := s["minItems"].(int); ok && len(x) < n {
			return fmt.Errorf("%s: fewer than %d items", path, n)
		}
		if it, ok := s["items"].(Object); ok {
			for i, e := range x {
				if err := validate(it, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			return fmt.Errorf("%s: %q does not match %s", path, x, p)
		}
		if n, ok := s["minLength"].(int); ok && len(x) < n {
			return fmt.Errorf("%s: shorter than %d", path, n)
		}
	}
	if m, ok := s["minimum"].(int); ok {
		if f, isNum := number(doc); isNum && f < float64(m) {
			return fmt.Errorf("%s: %v is below %d", path, doc, m)
		}
	}
	return nil
}

func asStrings(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			out = append(out, x.(string))
		}
	}
	return out
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && f == math.Trunc(f)
	}
	return false
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBuiltinsValidate: every built-in scenario, every kept regression
// and every built-in sweep is valid under the schema.
func TestBuiltinsValidate(t *testing.T) {
	sc := Scenario()
	for _, n := range scenarios.Builtins() {
		data, _, _, _, err := scenarios.Resolve(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(sc, decode(t, data), n); err != nil {
			t.Errorf("built-in scenario %s: %v", n, err)
		}
	}
	regs, _ := filepath.Glob("../scenarios/regressions/*.yaml")
	if len(regs) < 10 {
		t.Fatalf("found %d regressions", len(regs))
	}
	for _, p := range regs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(sc, decode(t, data), filepath.Base(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	sw := Sweep()
	for _, n := range sweeps.Names() {
		data, err := os.ReadFile(filepath.Join("../scenarios/sweeps", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(sw, decode(t, data), n); err != nil {
			t.Errorf("built-in sweep %s: %v", n, err)
		}
	}
}

const good = "name: t\nmodel: {preset: tiny-hybrid}\nengine:\n  vllm_version: v0.13\n  max_num_seqs: 4\nworkload:\n  kind: batches\n  num_prompts: 8\n  batch_size: 4\n  prompt_len: {dist: constant, value: 16}\n  output_len: {dist: constant, value: 4}\n"

// TestRejectsWhatTheLoaderRejects: each input the strict loader refuses
// for a type or a name, the schema refuses too (and the loader does
// refuse it, so the case is real).
func TestRejectsWhatTheLoaderRejects(t *testing.T) {
	if _, err := setup.Parse([]byte(good), "t.yaml", nil); err != nil {
		t.Fatalf("the base case: %v", err)
	}
	if err := validate(Scenario(), decode(t, []byte(good)), ""); err != nil {
		t.Fatalf("the base case: %v", err)
	}
	sub := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q not in the base case", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, c := range []struct{ name, yaml, loader string }{
		{"unknown top-level key", good + "enigne: {}\n", "unknown field"},
		{"unknown engine key", sub("max_num_seqs: 4", "max_num_seq: 4"), "unknown field"},
		{"unknown shape key", sub("{preset: tiny-hybrid}", "{preset: tiny-hybrid, num_layer: 4}"), "unknown field"},
		{"string in an integer", sub("max_num_seqs: 4", "max_num_seqs: four"), "want an integer"},
		{"fraction in an integer", sub("max_num_seqs: 4", "max_num_seqs: 1.5"), "want an integer"},
		{"negative seed", good + "seed: -1\n", "non-negative integer"},
		{"list for a number", sub("max_num_seqs: 4", "max_num_seqs: [4]"), "want an integer"},
		{"scalar for a section", sub("model: {preset: tiny-hybrid}", "model: tiny-hybrid"), "want a mapping"},
		{"word for a boolean", good + "sampling: {temperature: 0}\nbackend: {kind: symbolic, shadow: maybe}\n", "want true or false"},
		{"unknown vllm_version", sub("v0.13", "v0.99"), "unknown vllm_version"},
		{"unknown preset", sub("tiny-hybrid", "tiny-hybird"), "preset"},
		{"unknown workload kind", sub("kind: batches", "kind: bursts"), "unknown"},
		{"unknown dist", sub("{dist: constant, value: 4}", "{dist: normal, value: 4}"), "unknown"},
		{"unknown cudagraph_mode", sub("max_num_seqs: 4", "max_num_seqs: 4\n  cudagraph_mode: full"), "cudagraph_mode"},
		{"unknown mamba_cache_mode", sub("max_num_seqs: 4", "max_num_seqs: 4\n  mamba_cache_mode: some"), "mamba_cache_mode"},
		{"unknown speculative method", sub("max_num_seqs: 4", "max_num_seqs: 4\n  speculative: {method: medusa, num_speculative_tokens: 2}"), "method"},
		{"unknown backend", good + "backend: {kind: tpu}\n", "backend.kind"},
		{"malformed patch", sub("max_num_seqs: 4", "max_num_seqs: 4\n  patches: [55898]"), "patches"},
	} {
		_, err := setup.Parse([]byte(c.yaml), "t.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.loader) {
			t.Errorf("%s: the loader says %v, want %q", c.name, err, c.loader)
			continue
		}
		if validate(Scenario(), decode(t, []byte(c.yaml)), "") == nil {
			t.Errorf("%s: the schema accepts what the loader refuses (%v)", c.name, err)
		}
	}
	goodSweep := "name: s\nscenario: imposter\nvary:\n  - key: engine.vllm_version\n    values: [v0.13, v0.14]\nseeds: 2\nmetric: imposters\n"
	if err := validate(Sweep(), decode(t, []byte(goodSweep)), ""); err != nil {
		t.Fatalf("the base sweep: %v", err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, yaml, loader string }{
		{"unknown sweep key", goodSweep + "seed: 3\n", "unknown field"},
		{"seeds as a word", strings.Replace(goodSweep, "seeds: 2", "seeds: two", 1), "want an integer"},
		{"vary as a mapping", strings.Replace(goodSweep, "vary:\n  - key: engine.vllm_version\n    values: [v0.13, v0.14]", "vary: {key: engine.vllm_version}", 1), "want a list"},
		{"unknown axis key", strings.Replace(goodSweep, "values:", "vals:", 1), "unknown field"},
		{"values as a scalar", strings.Replace(goodSweep, "[v0.13, v0.14]", "v0.13", 1), "want a list"},
		{"set as a string", goodSweep + "set: engine.max_num_seqs=4\n", "want a list"},
	} {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := sweep.Load(p)
		if err == nil || !strings.Contains(err.Error(), c.loader) {
			t.Errorf("%s: the loader says %v, want %q", c.name, err, c.loader)
			continue
		}
		if validate(Sweep(), decode(t, []byte(c.yaml)), "") == nil {
			t.Errorf("%s: the schema accepts what the loader refuses (%v)", c.name, err)
		}
	}
}

// TestCommittedSchemasAreCurrent: docs/schema holds what the code writes
// (regenerate with `statesim schema --out docs/schema`).
func TestCommittedSchemasAreCurrent(t *testing.T) {
	for name, o := range map[string]Object{"scenario.schema.json": Scenario(), "sweep.schema.json": Sweep()} {
		got, err := os.ReadFile(filepath.Join("../docs/schema", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, JSON(o)) {
			t.Errorf("docs/schema/%s is stale: run statesim schema --out docs/schema", name)
		}
	}
}

// TestBuiltinsReferenceTheSchema: each built-in file names its schema on
// its first line, so editors with the YAML language server validate and
// complete it.
func TestBuiltinsReferenceTheSchema(t *testing.T) {
	for glob, line := range map[string]string{
		"../scenarios/*.yaml":        "# yaml-language-server: $schema=../docs/schema/scenario.schema.json",
		"../scenarios/sweeps/*.yaml": "# yaml-language-server: $schema=../../docs/schema/sweep.schema.json",
	} {
		files, _ := filepath.Glob(glob)
		if len(files) == 0 {
			t.Fatalf("no %s", glob)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(string(data), "\n"); first != line {
				t.Errorf("%s: first line %q, want %q", f, first, line)
			}
		}
	}
}
