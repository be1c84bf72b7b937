package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every test config lays out; the block sizes are the ones worked by hand
// in model/hfconfig_test.go, here as the log line vLLM prints.
func TestModelCommandEveryConfig(t *testing.T) {
	want := map[string]string{
		"jamba-v0.1.json": "Setting attention block size to 80 tokens", "nemotron-nano-9b-v2.json": "Setting attention block size to 672 tokens",
		"bamba-9b.json": "Setting attention block size to 528 tokens", "granite-4.0-h-small.json": "Setting attention block size to 528 tokens",
		"falcon-h1-1.5b.json": "Setting attention block size to 1568 tokens", "qwen3-next-80b-a3b.json": "Setting attention block size to 544 tokens",
		"lfm2-1.2b.json": "Padding mamba page size by 300.00%", "minimax-text-01.json": "Setting attention block size to 512 tokens",
		"kimi-linear-48b-a3b.json": "Setting attention block size to 1920 tokens",
		"kimi-k3.json":             "Setting attention block size to 5696 tokens",
	}
	files, _ := filepath.Glob("../../scenarios/models/*.json")
	if len(files) < 8 {
		t.Fatalf("%d test configs", len(files))
	}
	for _, f := range files {
		code, out, errs := runCLI("model", f)
		w, ok := want[filepath.Base(f)]
		if code != exitClean || !ok || !strings.Contains(out, w) || !strings.Contains(out, "KV cache groups") {
			t.Errorf("%s: exit %d, want %q in\n%s%s", f, code, w, out, errs)
		}
	}
}

// Issue 11: TP 2 halves the Jamba-3B-like preset's stride, doubling the
// first wrapping slot; --json carries the same decision.
func TestModelCommandTPAndJSON(t *testing.T) {
	_, out, _ := runCLI("model", "jamba-reasoning-3b")
	if !strings.Contains(out, "= 47,663 (within this pool") {
		t.Errorf("TP 1:\n%s", out)
	}
	code, js, errs := runCLI("model", "jamba-reasoning-3b", "--set", "engine.tensor_parallel_size=2", "--json")
	var v modelView
	if err := json.Unmarshal([]byte(js), &v); code != exitClean || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errs)
	}
	if v.FirstWrap != 95326 || v.TP != 2 || v.Unify.BlockSize != 176 || v.NumGPUBlocks <= 0 {
		t.Errorf("TP 2: %+v", v)
	}
	// GDN kernels index in 64 bits: no wrapping slot.
	_, out, _ = runCLI("model", "../../scenarios/models/qwen3-next-80b-a3b.json")
	if !strings.Contains(out, "no slot wraps") {
		t.Errorf("qwen3-next:\n%s", out)
	}
}

// The Mamba cache mode sets the block size and what one request can hold
// (MambaSpec.max_memory_usage_bytes per Mamba group: 1 page in none, 2 in
// align, cdiv(max_model_len, block) in all). 10,000 blocks, 4,096 tokens
// a request, 7 Mamba groups and 1 attention group:
//   - none:  block 176, 7·1 + cdiv(4096, 176) = 31 blocks a request;
//   - align: block 176, 7·2 + 24 = 38;
//   - all:   block 2048 (Mamba1's chunk), 7·2 + 2 = 16.
func TestModelCommandMambaModes(t *testing.T) {
	for _, c := range []struct {
		set   []string
		block int
		per   float64
	}{
		{[]string{"engine.enable_prefix_caching=false"}, 176, 31},
		{nil, 176, 38},
		{[]string{"engine.mamba_cache_mode=all"}, 2048, 16},
	} {
		args := []string{"model", "jamba-reasoning-3b", "--json", "--set", "engine.num_gpu_blocks_override=10000", "--set", "engine.max_model_len=4096"}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		code, js, errs := runCLI(args...)
		var v modelView
		if err := json.Unmarshal([]byte(js), &v); code != exitClean || err != nil {
			t.Fatalf("%v: exit %d, %v: %s", c.set, code, err, errs)
		}
		if v.Unify.BlockSize != c.block || math.Abs(v.Concurrency-10000/c.per) > 1e-9 {
			t.Errorf("%v: block %d, concurrency %.4f; want %d, %.4f", c.set, v.Unify.BlockSize, v.Concurrency, c.block, 10000/c.per)
		}
	}
}

func TestModelCommandBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"model"}, "want exactly one CONFIG"},
		{[]string{"model", "no-such.json"}, "no-such.json"},
		{[]string{"model", "jamba-reasoning-3b", "--set", "engine.tensor_parallel_size=3"}, "field engine.tensor_parallel_size: 3 does not divide num_attention_heads (20)"},
		{[]string{"model", "../../scenarios/models/lfm2-1.2b.json", "--set", "engine.kv_cache_dtype=int4"}, "field engine.kv_cache_dtype: unknown \"int4\""},
	} {
		code, _, errs := runCLI(c.args...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %q in %s", c.args, code, c.want, errs)
		}
	}
}

// Every test config runs end to end with the symbolic backend (the state
// kinds beyond Mamba1, parallel layers, MLP-only layers, MLA), clean.
func TestRunEveryConfig(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/models/*.json")
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		version := "v0.13"
		if filepath.Base(f) == "kimi-k3.json" {
			version = "v0.31" // vLLM serves Kimi-K3 from v0.27 (#50089)
		}
		doc := "name: e2e\nmodel:\n  hf_config: " + abs + "\nengine:\n  vllm_version: " + version + "\n  num_gpu_blocks_override: 4096\n  max_num_batched_tokens: 2048\n  state_index_bits: 32\n" +
			"workload:\n  kind: poisson\n  rate: 50\n  count: 60\n  prompt_len: {dist: uniform, min: 1, max: 600}\n  output_len: {dist: constant, value: 8}\n"
		p := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI("run", p)
		if code != exitClean || !strings.Contains(out, "60 finished") {
			t.Errorf("%s: exit %d\n%s%s", f, code, out, errs)
		}
	}
}
