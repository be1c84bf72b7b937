package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every test config lays out; the block sizes are the ones worked by hand
// in model/hfconfig_test.go, here as the log line vLLM prints, at the
// newest release: its config hooks give Nemotron-H a float32 SSM state
// (1312 tokens, #39032) and Qwen3.5 its config's float32 (528).
func TestModelCommandEveryConfig(t *testing.T) {
	want := map[string]string{
		"jamba-v0.1.json": "Setting attention block size to 80 tokens", "nemotron-nano-9b-v2.json": "Setting attention block size to 1312 tokens",
		"qwen3.5-4b.json": "Setting attention block size to 528 tokens",
		"bamba-9b.json":   "Setting attention block size to 528 tokens", "granite-4.0-h-small.json": "Setting attention block size to 528 tokens",
		"falcon-h1-1.5b.json": "Setting attention block size to 1568 tokens", "qwen3-next-80b-a3b.json": "Setting attention block size to 544 tokens",
		"lfm2-1.2b.json": "Padding mamba page size by 300.00%", "minimax-text-01.json": "Setting attention block size to 512 tokens",
		"kimi-linear-48b-a3b.json": "Setting attention block size to 1920 tokens",
		"kimi-k3.json":             "Setting attention block size to 5760 tokens",
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
		switch filepath.Base(f) {
		case "kimi-k3.json":
			version = "v0.31" // vLLM serves Kimi-K3 from v0.27 (#50089)
		case "qwen3.5-4b.json":
			version = "v0.19" // and Qwen3.5 from v0.19 here (#34110)
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

// The block sizes vLLM logged, from the configs, at the logs' settings,
// with every KV cache group's block size:
//   - Qwen3.5-4B, 528 tokens: vllm-project/vllm#40696, vLLM 0.19.1, `vllm
//     serve Qwen/Qwen3.5-4B --enable-prefix-caching --max-model-len 1024
//     --dtype bfloat16` (align mode: the Mamba groups' block is the block);
//   - NVIDIA-Nemotron-Nano-9B-v2, 672 tokens: vllm-project/vllm#24280,
//     before #39032 made Nemotron-H's SSM state float32 (v0.19 is the last
//     release statesim models without it; no prefix caching, so the Mamba
//     groups' block is max_model_len).
func TestModelCommandLoggedBlockSizes(t *testing.T) {
	for _, c := range []struct {
		name        string
		args        []string
		block       int
		mambaBlock  int
		groups      int
		wantLogLine string
	}{
		{"qwen3.5-4b #40696", []string{"../../scenarios/models/qwen3.5-4b.json", "--set", "engine.vllm_version=v0.19",
			"--set", "engine.enable_prefix_caching=true", "--set", "engine.max_model_len=1024", "--set", "model.dtype=bfloat16"}, 528, 528, 4, ""},
		{"nemotron-nano-9b-v2 #24280", []string{"nemotron-nano-9b-v2", "--set", "engine.vllm_version=v0.19"}, 672, 32768, 8,
			"Updating mamba_ssm_cache_dtype to 'float16' for NemotronH model"},
		// The flag against Qwen3.5's config: vLLM keeps the flag and warns.
		{"qwen3.5-4b bf16 SSM", []string{"qwen3.5-4b", "--set", "engine.vllm_version=v0.19", "--set", "engine.mamba_ssm_cache_dtype=bfloat16"}, 272, 32768, 4,
			"WARNING Qwen3.5 model specifies mamba_ssm_dtype='float32' in its config, but --mamba-ssm-cache-dtype='bfloat16' was passed."},
	} {
		code, out, errs := runCLI(append([]string{"model"}, c.args...)...)
		if code != exitClean || !strings.Contains(out, fmt.Sprintf("Setting attention block size to %d tokens", c.block)) ||
			(c.wantLogLine != "" && !strings.Contains(out, c.wantLogLine)) {
			t.Errorf("%s: exit %d\n%s%s", c.name, code, out, errs)
			continue
		}
		code, js, errs := runCLI(append([]string{"model", "--json"}, c.args...)...)
		var v modelView
		if err := json.Unmarshal([]byte(js), &v); code != exitClean || err != nil {
			t.Fatalf("%s: exit %d, %v: %s", c.name, code, err, errs)
		}
		if len(v.Groups) != c.groups {
			t.Errorf("%s: %d groups, want %d", c.name, len(v.Groups), c.groups)
		}
		for i, g := range v.Groups {
			want := c.block
			if g.Kind == "mamba" {
				want = c.mambaBlock
			}
			if g.BlockSize != want || !strings.Contains(g.Spec, fmt.Sprintf("(block_size=%d,", want)) ||
				!strings.Contains(out, fmt.Sprintf("group %-2d %-9s block size %-6d", i, g.Kind, want)) {
				t.Errorf("%s: group %d %+v, want block size %d", c.name, i, g, want)
			}
		}
	}
}

// GDN + MTP: the conv state holds 3 + K columns and the drafter's layer
// joins the attention group. Qwen3-Next at TP 4, K = 3: conv 6·2048·2 =
// 24,576 + recurrent 8·128·128·2 = 262,144 B against 1024 B/token:
// 16·cdiv(286720, 16384) = 288 tokens (272 with vLLM's 3 columns alone).
func TestModelCommandSpecWidensConv(t *testing.T) {
	code, out, errs := runCLI("model", "azure-conv-qwen3-next-mtp")
	if code != exitClean || !strings.Contains(out, "conv [6 2048] bfloat16 24,576 B") || !strings.Contains(out, "Setting attention block size to 288 tokens") ||
		!strings.Contains(out, "47, 48 (draft)") || !strings.Contains(out, "num_speculative_blocks=3") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}
