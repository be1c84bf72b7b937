package scenarios

import (
	"errors"
	"strings"
	"testing"
)

const good = `name: t
seed: 5
model:
  preset: tiny-hybrid
  hidden_size: 64
engine:
  vllm_version: v0.14
  num_gpu_blocks_override: 100
workload:
  kind: batches
  num_prompts: 4
  batch_size: 2
  prompt_len: {dist: uniform, min: 4, max: 40}
  output_len: {dist: constant, value: 3}
`

func TestParseAppliesPresetThenOverrides(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Model.Name != "tiny-hybrid" || sc.Model.HiddenSize != 64 || sc.Model.NumLayers != 4 {
		t.Errorf("model %+v", sc.Model)
	}
	if sc.Engine.MaxNumBatchedTokens != 16384 || !sc.Engine.EnableChunkedPrefill {
		t.Errorf("defaults not applied: %+v", sc.Engine)
	}
	sc, err = Parse([]byte(good), "t.yaml", []string{"engine.gpu_memory_utilization=0.3", "workload.output_len.value=9", "seed=77"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Engine.GPUMemoryUtilization != 0.3 || sc.Workload.OutputLen.Value != 9 || sc.Seed != 77 {
		t.Errorf("--set not applied: %+v %+v %d", sc.Engine, sc.Workload.OutputLen, sc.Seed)
	}
}

// Every bad input names the file, the line and the field path.
func TestErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, edit, want string
		sets             []string
	}{
		{"unknown key", "  num_gpu_blocks_override: 100\n  max_num_seq: 3\n", "t.yaml:9: field engine.max_num_seq: unknown field", nil},
		{"wrong type", "  num_gpu_blocks_override: lots\n", `t.yaml:8: field engine.num_gpu_blocks_override: want an integer, got "lots"`, nil},
		{"out of range", "  num_gpu_blocks_override: 100\n  gpu_memory_utilization: 1.5\n", "t.yaml:9: field engine.gpu_memory_utilization: must be in (0, 1]", nil},
		{"nested dist", "", "t.yaml:13: field workload.prompt_len.max: must be >= min (4), got 2", []string{}},
		{"bad set", "", "t.yaml (--set engine.max_num_seqs=0): field engine.max_num_seqs: must be >= 1", []string{"engine.max_num_seqs=0"}},
		{"set unknown", "", "field engine.nope: unknown field", []string{"engine.nope=1"}},
		{"bad preset", "", "field model.preset: unknown model preset", []string{"model.preset=gpt"}},
		{"not finite", "", "field sampling.temperature: want a finite number", []string{"sampling.temperature=.nan"}},
		{"infinite memory", "", "field device.memory_gib: want a finite number", []string{"device.memory_gib=.inf"}},
		{"whole prompt must fit", "", "field engine.max_num_batched_tokens: 32 is less than the longest prompt + output", []string{"engine.enable_chunked_prefill=false", "engine.max_num_batched_tokens=32"}},
	}
	for _, c := range cases {
		y := strings.Replace(good, "  num_gpu_blocks_override: 100\n", c.edit, 1)
		if c.edit == "" {
			y = good
		}
		if c.name == "nested dist" {
			y = strings.Replace(good, "max: 40", "max: 2", 1)
		}
		_, err := Parse([]byte(y), "t.yaml", c.sets)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: want an InputError, got %v", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.name, err, c.want)
		}
	}
}

func TestSyntaxAndShapeErrors(t *testing.T) {
	for _, y := range []string{"", "- a\n- b\n", "name: [\n", "engine: 3\n", "seed: -1\n"} {
		_, err := Parse([]byte(y), "x.yaml", nil)
		if err == nil || !strings.HasPrefix(err.Error(), "x.yaml") {
			t.Errorf("%q: error %v should name the file", y, err)
		}
	}
}

func TestBuiltinsLoad(t *testing.T) {
	names := Builtins()
	if len(names) < 5 {
		t.Fatalf("built-ins %v", names)
	}
	for _, n := range names {
		sc, err := Load(n, nil)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if sc.Name != n {
			t.Errorf("%s: name field %q should match the file", n, sc.Name)
		}
	}
	if _, err := Load("no-such-scenario", nil); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("unknown scenario: %v", err)
	}
}

// FuzzParse: the loader never panics; every error names the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good), "")
	f.Add([]byte("engine: {max_num_seqs: 0}\n"), "seed=1")
	f.Add([]byte("workload: {kind: poisson, rate: 2, count: 3}\n"), "workload.rate=x")
	f.Add([]byte("a: &x [1]\nb: *x\n"), "")
	f.Add([]byte("engine: {prefix_match_unit: 16}\n"), "engine.prefix_match_unit=-1")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		sc, err := Parse(data, "f.yaml", sets)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("parsed scenario does not validate: %v", err)
		}
	})
}
