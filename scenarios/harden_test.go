package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input that used to be truncated or ignored is refused, naming the
// file, the line (or --set) and the field.
func TestHardenedInputErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		sets       []string
		want       string
	}{
		{"decimal in an integer field", strings.Replace(good, "num_gpu_blocks_override: 100", "num_gpu_blocks_override: 100\n  max_num_batched_tokens: 1.5", 1), nil,
			`t.yaml:9: field engine.max_num_batched_tokens: want an integer, got "1.5"`},
		{"decimal from --set", good, []string{"engine.max_num_seqs=2.5"},
			`t.yaml (--set engine.max_num_seqs=2.5): field engine.max_num_seqs: want an integer, got "2.5"`},
		{"decimal seed", good, []string{"seed=7.25"}, `field seed: want a non-negative integer, got "7.25"`},
		{"negative uint from a float", good, []string{"seed=-1.0"}, `field seed: want a non-negative integer, got "-1.0"`},
		{"second document", good + "---\nname: other\n", nil,
			"t.yaml:16: a second YAML document (after ---): a scenario is one document"},
		{"device by an unknown name", good + "device:\n  name: TPU-v9\n", []string{"engine.num_gpu_blocks_override=0"},
			`t.yaml:16: field device.name: unknown device "TPU-v9": give device.memory_gib (known devices: A100-40GB, A100-80GB`},
		{"explicit rate_scale 0", strings.Replace(good, "kind: batches", "kind: trace\n  path: x.csv\n  rate_scale: 0", 1), nil,
			"t.yaml:12: field workload.rate_scale: must be a finite number > 0, got 0 (leave it out to replay at recorded speed)"},
		{"rate_scale 0 from --set", strings.Replace(good, "kind: batches", "kind: trace\n  path: x.csv", 1), []string{"workload.rate_scale=0"},
			"(--set workload.rate_scale=0): field workload.rate_scale: must be a finite number > 0, got 0"},
		{"negative rate_scale", strings.Replace(good, "kind: batches", "kind: trace\n  path: x.csv", 1), []string{"workload.rate_scale=-2"},
			"field workload.rate_scale: must be a finite number > 0, got -2"},
		{"max_model_len past int32", good, []string{"engine.max_model_len=9223372036854775807"}, "field engine.max_model_len: must be in [2, 2147483647]"},
		{"max_num_seqs past a group", good, []string{"engine.max_num_seqs=2000000"}, "field engine.max_num_seqs: must be <= 1048576"},
		{"step overhead of years", good, []string{"timing.step_overhead_us=1e300"}, "field timing.step_overhead_us: must be <= 1e+09, got 1e+300"},
		{"negative host step", good, []string{"timing.host_step_us=-1"}, "field timing.host_step_us: must be >= 0, got -1"},
		{"host step of years", good, []string{"timing.host_step_us=1e300"}, "field timing.host_step_us: must be <= 1e+09, got 1e+300"},
		{"negative prefix_match_unit", strings.Replace(good, "num_gpu_blocks_override: 100", "num_gpu_blocks_override: 100\n  prefix_match_unit: -16", 1), nil,
			"t.yaml:9: field engine.prefix_match_unit: must be in [1, 2147483647] tokens, or 0 (unset: the gcd of the KV cache groups' block sizes), got -16"},
		{"decimal prefix_match_unit from --set", good, []string{"engine.prefix_match_unit=12.5"},
			`t.yaml (--set engine.prefix_match_unit=12.5): field engine.prefix_match_unit: want an integer, got "12.5"`},
		{"prefix_match_unit past int32", good, []string{"engine.prefix_match_unit=4294967296"}, "field engine.prefix_match_unit: must be in [1, 2147483647] tokens"},
		{"negative max_steps", good, []string{"checks.max_steps=-1"}, "field checks.max_steps: must be >= 0"},
		{"negative memory limit", good, []string{"checks.max_memory_gib=-1"}, "field checks.max_memory_gib: must be > 0 (0: the default, 16), got -1"},
		{"huge rollouts", "model: {preset: tiny-hybrid}\nworkload:\n  kind: rollouts\n  prompts: 8\n  rollouts_per_prompt: 1e8\n  steps: 1\n  prompt_len: {dist: constant, value: 4}\n  output_len: {dist: constant, value: 4}\n", nil,
			"f.yaml:5: field workload.rollouts_per_prompt: 100000000 is more than 1048576 rollouts per prompt"},
		{"rollouts product", "model: {preset: tiny-hybrid}\nworkload:\n  kind: rollouts\n  prompts: 2048\n  rollouts_per_prompt: 1024\n  steps: 1\n  prompt_len: {dist: constant, value: 4}\n  output_len: {dist: constant, value: 4}\n", nil,
			"field workload.rollouts_per_prompt: prompts × rollouts_per_prompt = 2097152 requests per training step"},
		{"tiny poisson rate", "model: {preset: tiny-hybrid}\nworkload:\n  kind: poisson\n  rate: 1e-12\n  count: 10\n  prompt_len: {dist: constant, value: 4}\n  output_len: {dist: constant, value: 4}\n", nil,
			"f.yaml:4: field workload.rate: 1e-12 requests/s makes 10 arrivals span about 1e+13 s of simulated time"},
		{"huge batch", "model: {preset: tiny-hybrid}\nworkload:\n  kind: batches\n  num_prompts: 4\n  batch_size: 1e7\n  prompt_len: {dist: constant, value: 4}\n  output_len: {dist: constant, value: 4}\n", nil,
			"field workload.batch_size: 10000000 is more than 1048576 requests submitted at once"},
		{"unknown trace format", strings.Replace(good, "kind: batches", "kind: trace\n  path: x.csv\n  format: sharegpt", 1), nil,
			`field workload.format: unknown "sharegpt" (want azure, burstgpt, mooncake, jsonl)`},
	} {
		file := "t.yaml"
		if !strings.Contains(c.yaml, "name: t") {
			file = "f.yaml"
		}
		_, err := Parse([]byte(c.yaml), file, c.sets)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.name, err, c.want)
		}
	}
}

// Integral spellings stay accepted in integer fields.
func TestIntegralFloatsAccepted(t *testing.T) {
	sc, err := Parse([]byte(good), "t.yaml", []string{"engine.max_num_seqs=1e3", "workload.num_prompts=8.0"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Engine.MaxNumSeqs != 1000 || sc.Workload.NumPrompts != 8 {
		t.Errorf("max_num_seqs %d, num_prompts %d", sc.Engine.MaxNumSeqs, sc.Workload.NumPrompts)
	}
}

// A device named without memory_gib takes the table's memory, never the
// default device's.
func TestDeviceByName(t *testing.T) {
	y := strings.Replace(good, "  num_gpu_blocks_override: 100\n", "", 1) + "device:\n  name: H100-80GB\n"
	sc, err := Parse([]byte(y), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Device.MemoryGiB != 79.1 {
		t.Errorf("H100-80GB: memory %g GiB, want 79.1", sc.Device.MemoryGiB)
	}
	sc, err = Parse([]byte(y), "t.yaml", []string{"device.memory_gib=64"})
	if err != nil || sc.Device.MemoryGiB != 64 {
		t.Errorf("explicit memory_gib: %v, %+v", err, sc.Device)
	}
}

// A bare name is the built-in even when the working directory holds a
// file or directory of that name; a path-like argument is the file.
func TestBuiltinNamesWinOverCwd(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("imposter", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("wrap32", []byte("step: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"imposter", "wrap32"} {
		sc, err := Load(n, nil)
		if err != nil || sc.Name != n {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := Load("./wrap32", nil); err == nil || !strings.Contains(err.Error(), "wrap32:1: field step: unknown field") {
		t.Errorf("./wrap32 should be the file: %v", err)
	}
	mine := strings.Replace(good, "name: t", "name: mine", 1)
	if err := os.WriteFile("imposter.yaml", []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := Load("imposter.yaml", nil); err != nil || sc.Name != "mine" {
		t.Errorf("imposter.yaml should be the file: %v %v", sc, err)
	}
	if _, err := Load("imposterr", nil); err == nil || !strings.Contains(err.Error(), "did you mean imposter?") {
		t.Errorf("typo: %v", err)
	}
}

// azure-conv's trace is embedded: it loads and opens from any directory.
func TestBuiltinTraceFromAnywhere(t *testing.T) {
	t.Chdir(t.TempDir())
	sc, err := Load("azure-conv", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.FS == nil {
		t.Fatal("azure-conv's trace is not the embedded copy")
	}
	f, err := sc.Workload.FS.Open(sc.Workload.Path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A copy of the scenario file resolves its trace beside it instead.
	data, _, _, _, _ := Resolve("azure-conv")
	if err := os.WriteFile("copy.yaml", data, 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err = Load("copy.yaml", nil)
	if err != nil || sc.Workload.FS != nil || sc.Workload.Path != filepath.Join(".", "traces", "AzureLLMInferenceTrace_conv.csv") {
		t.Errorf("file copy: %v %+v", err, sc.Workload)
	}
}

// The default step limit grows with the workload; an explicit one is kept.
func TestStepLimit(t *testing.T) {
	c := Defaults().Checks
	if c.MaxSteps != 0 || c.StepLimit(0) != autoStepBase || c.StepLimit(1e9) != autoStepBase+8e9 {
		t.Errorf("auto limit: %d, %d", c.StepLimit(0), c.StepLimit(1e9))
	}
	c.MaxSteps = 10
	if c.StepLimit(1e9) != 10 {
		t.Errorf("explicit limit: %d", c.StepLimit(1e9))
	}
}
