package vllmargs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"statesim/scenarios"
)

const qwen = "Qwen/Qwen3-Next-80B-A3B-Instruct"

// build parses a vllm serve command line into a validated scenario.
func build(t *testing.T, version string, args ...string) (*Command, *scenarios.Scenario) {
	t.Helper()
	c, err := Parse(append([]string{"vllm", "serve"}, args...), os.ReadFile)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	tr, err := c.Scenario(Options{Version: version})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	sc, err := scenarios.Parse(tr.YAML, "vllm-serve.yaml", nil)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, tr.YAML)
	}
	return c, sc
}

// TestEveryFlagRoundTrips: each modelled flag, in vLLM's spelling, sets
// its scenario field, and the scenario written back as flags (Args) reads
// back to the same engine.
func TestEveryFlagRoundTrips(t *testing.T) {
	type eng = scenarios.Engine
	cases := []struct {
		flag  string // the flag under test, for coverage
		model string
		args  []string
		got   func(sc *scenarios.Scenario) any
		want  any
	}{
		{"--max-num-seqs", qwen, []string{"--max-num-seqs", "7"}, func(s *scenarios.Scenario) any { return s.Engine.MaxNumSeqs }, 7},
		{"--max-num-seqs", qwen, []string{"--max_num_seqs=9"}, func(s *scenarios.Scenario) any { return s.Engine.MaxNumSeqs }, 9},
		{"--max-num-batched-tokens", qwen, []string{"--max-num-batched-tokens", "8k"}, func(s *scenarios.Scenario) any { return s.Engine.MaxNumBatchedTokens }, 8000},
		{"--max-num-batched-tokens", qwen, []string{"--max-num-batched-tokens=4K"}, func(s *scenarios.Scenario) any { return s.Engine.MaxNumBatchedTokens }, 4096},
		{"--max-model-len", qwen, []string{"--max-model-len", "65536"}, func(s *scenarios.Scenario) any { return s.Engine.MaxModelLen }, 65536},
		{"--block-size", "jamba-v0.1", []string{"--block-size", "32"}, func(s *scenarios.Scenario) any { return s.Engine.BlockSize }, 32},
		{"--gpu-memory-utilization", qwen, []string{"--gpu-memory-utilization", "0.85"}, func(s *scenarios.Scenario) any { return s.Engine.GPUMemoryUtilization }, 0.85},
		{"--num-gpu-blocks-override", qwen, []string{"--num-gpu-blocks-override", "4000"}, func(s *scenarios.Scenario) any { return s.Engine.NumGPUBlocksOverride }, 4000},
		{"--enable-prefix-caching", qwen, []string{"--enable-prefix-caching"}, func(s *scenarios.Scenario) any { return derefBool(s.Engine.EnablePrefixCaching) }, true},
		{"--enable-prefix-caching", qwen, []string{"--no-enable-prefix-caching"}, func(s *scenarios.Scenario) any { return derefBool(s.Engine.EnablePrefixCaching) }, false},
		{"--mamba-cache-mode", qwen, []string{"--enable-prefix-caching", "--mamba-cache-mode", "align"}, func(s *scenarios.Scenario) any { return s.Engine.MambaCacheMode }, "align"},
		{"--mamba-block-size", "jamba-v0.1", []string{"--enable-prefix-caching", "--mamba-cache-mode", "all", "--mamba-block-size", "256", "--no-async-scheduling"}, func(s *scenarios.Scenario) any { return s.Engine.MambaBlockSize }, 256},
		{"--prefix-match-unit", qwen, []string{"--prefix-match-unit", "16"}, func(s *scenarios.Scenario) any { return s.Engine.PrefixMatchUnit }, 16},
		{"--prefix-match-unit", qwen, []string{"--prefix_match_unit=32"}, func(s *scenarios.Scenario) any { return s.Engine.PrefixMatchUnit }, 32},
		{"--mamba-cache-dtype", qwen, []string{"--mamba-cache-dtype", "float32"}, func(s *scenarios.Scenario) any { return s.Engine.MambaCacheDType }, "float32"},
		{"--mamba-ssm-cache-dtype", qwen, []string{"--mamba-ssm-cache-dtype", "float16"}, func(s *scenarios.Scenario) any { return s.Engine.MambaSSMCacheDType }, "float16"},
		{"--kv-cache-dtype", qwen, []string{"--kv-cache-dtype", "fp8"}, func(s *scenarios.Scenario) any { return s.Engine.KVCacheDType }, "fp8"},
		{"--enable-chunked-prefill", qwen, []string{"--no-enable-chunked-prefill", "--max-num-batched-tokens", "32768"}, func(s *scenarios.Scenario) any { return s.Engine.EnableChunkedPrefill }, false},
		{"--long-prefill-token-threshold", qwen, []string{"--long-prefill-token-threshold", "512"}, func(s *scenarios.Scenario) any { return s.Engine.LongPrefillTokenThreshold }, 512},
		{"--async-scheduling", qwen, []string{"--no-async-scheduling"}, func(s *scenarios.Scenario) any { return s.Engine.AsyncScheduling }, false},
		{"--async-scheduling", qwen, []string{"--async-scheduling"}, func(s *scenarios.Scenario) any { return s.Engine.AsyncScheduling }, true},
		{"--scheduling-policy", qwen, []string{"--scheduling-policy", "priority"}, func(s *scenarios.Scenario) any { return s.Engine.SchedulingPolicy }, "priority"},
		{"--tensor-parallel-size", qwen, []string{"-tp", "4"}, func(s *scenarios.Scenario) any { return s.Engine.TensorParallelSize }, 4},
		{"--tensor-parallel-size", qwen, []string{"--tensor-parallel-size=2"}, func(s *scenarios.Scenario) any { return s.Engine.TensorParallelSize }, 2},
		{"--speculative-config", qwen, []string{"--speculative-config", `{"method":"qwen3_next_mtp","num_speculative_tokens":3}`}, func(s *scenarios.Scenario) any {
			return s.Engine.Speculative.Method + fmt.Sprint(s.Engine.Speculative.NumSpeculativeTokens)
		}, "mtp3"},
		{"--speculative-config", "nemotron-nano-9b-v2", []string{"--speculative-config.method", "eagle3", "--speculative-config.num_speculative_tokens", "2"}, func(s *scenarios.Scenario) any {
			return s.Engine.Speculative.Method + fmt.Sprint(s.Engine.Speculative.NumSpeculativeTokens)
		}, "eagle2"},
		{"--speculative-config", "nemotron-nano-9b-v2", []string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":5}`}, func(s *scenarios.Scenario) any {
			return s.Engine.Speculative.Method + fmt.Sprint(s.Engine.Speculative.NumSpeculativeTokens)
		}, "ngram4"},
		{"--compilation-config", qwen, []string{"--compilation-config", `{"cudagraph_mode":"FULL_DECODE_ONLY"}`}, func(s *scenarios.Scenario) any { return s.Engine.CUDAGraphMode }, "full_decode_only"},
		{"--compilation-config", qwen, []string{"-cc.cudagraph_mode", "PIECEWISE"}, func(s *scenarios.Scenario) any { return s.Engine.CUDAGraphMode }, "piecewise"},
		{"--compilation-config", qwen, []string{"-O", `{"cudagraph_mode":"NONE"}`}, func(s *scenarios.Scenario) any { return s.Engine.CUDAGraphMode }, "none"},
		{"--compilation-config", qwen, nil, func(s *scenarios.Scenario) any { return s.Engine.CUDAGraphMode }, "full_and_piecewise"}, // vLLM's default
		{"--enforce-eager", qwen, []string{"--enforce-eager"}, func(s *scenarios.Scenario) any { return s.Engine.CUDAGraphMode }, "none"},
		{"--dtype", qwen, []string{"--dtype", "half"}, func(s *scenarios.Scenario) any { return s.Model.Shape.DType }, "float16"},
		{"--kv-transfer-config", qwen, []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`}, func(s *scenarios.Scenario) any { return s.Engine.KVTransferConfig.KVConnector }, "NixlConnector"},
		{"--kv-transfer-config", qwen, []string{"--kv-transfer-config.kv_connector", "OffloadingConnector"}, func(s *scenarios.Scenario) any { return s.Engine.KVTransferConfig.KVConnector }, "OffloadingConnector"},
		{"--kv-transfer-config", qwen, []string{"--kv-transfer-config", `{"kv_connector":"P2pNcclConnector"}`}, func(s *scenarios.Scenario) any { return s.Engine.KVTransferConfig.KVConnector }, ""},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{c.flag}, c.args...), " "), func(t *testing.T) {
			_, sc := build(t, "v0.31", append([]string{c.model}, c.args...)...)
			if got := c.got(sc); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			back := Args(sc)
			_, sc2 := build(t, "v0.31", append([]string{c.model}, back...)...)
			if !reflect.DeepEqual(sc.Engine, sc2.Engine) || sc.Model.Shape.DType != sc2.Model.Shape.DType {
				t.Fatalf("round trip through %v:\n%+v\n%+v", back, sc.Engine, sc2.Engine)
			}
			if got := c.got(sc2); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("after the round trip got %v, want %v", got, c.want)
			}
		})
		covered[c.flag] = true
	}
	for _, f := range ModelledFlags() {
		if !covered[f] {
			t.Errorf("%s has no round-trip case", f)
		}
	}
}

// TestVLLMDefaults: where statesim's defaults are not vLLM's, the
// translation writes vLLM's: CUDA graphs full_and_piecewise, async
// scheduling on from v0.14 except under CPU ngram drafting.
func TestVLLMDefaults(t *testing.T) {
	for _, c := range []struct {
		version string
		args    []string
		graph   string
		async   bool
	}{
		{"v0.31", []string{qwen}, "full_and_piecewise", true},
		{"v0.13", []string{"jamba-v0.1"}, "full_and_piecewise", false},
		{"v0.31", []string{"nemotron-nano-9b-v2", "--speculative-config", `{"method":"ngram","num_speculative_tokens":2}`}, "full_and_piecewise", false},
		{"v0.31", []string{"nemotron-nano-9b-v2", "--speculative-config", `{"method":"ngram_gpu","num_speculative_tokens":2}`}, "full_and_piecewise", true},
		{"v0.31", []string{qwen, "--enforce-eager", "--no-async-scheduling"}, "none", false},
		{"v0", []string{"jamba-v0.1"}, "none", false},
	} {
		_, sc := build(t, c.version, c.args...)
		if sc.Engine.CUDAGraphMode != c.graph || sc.Engine.AsyncScheduling != c.async {
			t.Errorf("%s %v: cudagraph_mode %s, async %v; want %s, %v", c.version, c.args, sc.Engine.CUDAGraphMode, sc.Engine.AsyncScheduling, c.graph, c.async)
		}
	}
}

// TestUnmodelledReported: every argument statesim does not model is
// listed with why, whatever its form; none is dropped.
func TestUnmodelledReported(t *testing.T) {
	c, _ := build(t, "v0.31", qwen, "--port", "8000", "--trust-remote-code", "-pp", "2", "--served-model-name=qwen",
		"--speculative-config", `{"method":"mtp","num_speculative_tokens":1,"model":"x/y"}`, "-O3",
		"--compilation-config.pass_config.fuse_norm_quant", "true", "--kv-cache-dtype", "nvfp4")
	var got []string
	for _, ig := range c.Ignored {
		if ig.Why == "" {
			t.Errorf("%s: no reason", ig.Flag)
		}
		got = append(got, ig.Flag)
	}
	want := []string{"--port", "--trust-remote-code", "-pp", "--served-model-name", "--speculative-config.model",
		"--optimization-level", "--kv-cache-dtype", "--compilation-config.pass_config"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ignored %v, want %v", got, want)
	}
	// -pp's value was taken as its value, not as a second model.
	if c.Model != qwen {
		t.Errorf("model %q", c.Model)
	}
}

// A dflash drafter is modelled from its config.json, which vllm serve's
// arguments do not give: the method is listed as ignored with the fields
// a scenario needs, and speculative decoding stays off.
func TestDFlashNeedsTheDrafter(t *testing.T) {
	c, sc := build(t, "v0.31", qwen, "--speculative-config", `{"method":"dflash","num_speculative_tokens":3,"model":"z-lab/x-DFlash"}`)
	found := false
	for _, ig := range c.Ignored {
		if ig.Flag == "--speculative-config.method" {
			found = strings.Contains(ig.Why, "engine.speculative.draft")
		}
	}
	if !found || sc.Engine.Speculative.Method != "" {
		t.Errorf("ignored %+v, method %q; want the method ignored naming engine.speculative.draft, and no method", c.Ignored, sc.Engine.Speculative.Method)
	}
}

// TestConfigFile: vLLM's --config YAML, flat and nested, with the command
// line winning over the file.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "serve.yaml")
	cfg := "model: " + qwen + "\nmax-num-seqs: 64\nmax_num_batched_tokens: 4096\nenable-prefix-caching: true\nenable-chunked-prefill: false\n" +
		"speculative-config:\n  method: qwen3_next_mtp\n  num_speculative_tokens: 2\ntensor-parallel-size: 2\nport: 8000\n"
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, sc := build(t, "v0.31", "--config", p, "-tp", "4", "--enable-chunked-prefill")
	e := sc.Engine
	if c.Model != qwen || e.MaxNumSeqs != 64 || e.MaxNumBatchedTokens != 4096 || e.EnablePrefixCaching == nil || !*e.EnablePrefixCaching ||
		e.Speculative.Method != "mtp" || e.Speculative.NumSpeculativeTokens != 2 || e.TensorParallelSize != 4 || !e.EnableChunkedPrefill {
		t.Fatalf("engine %+v", e)
	}
	if len(c.Ignored) != 1 || c.Ignored[0].Origin != p+":10" {
		t.Errorf("ignored %+v, want --port from %s:10", c.Ignored, p)
	}
	// A bad value in the file names the file and line.
	if err := os.WriteFile(p, []byte("max-num-seqs: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]string{"serve", qwen, "--config", p}, os.ReadFile)
	if err == nil || !strings.Contains(err.Error(), p+":1: --max-num-seqs") {
		t.Errorf("bad config value: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"vllm", "serve"}, "no model"},
		{[]string{"serve", qwen, "other"}, "unexpected argument"},
		{[]string{"serve", qwen, "--max-num-seqs"}, "--max-num-seqs: expected a value"},
		{[]string{"serve", qwen, "--max-num-seqs", "1.5"}, "want an integer"},
		{[]string{"serve", qwen, "--max-model-len", "2.5K"}, "binary multiplier"},
		{[]string{"serve", qwen, "--gpu-memory-utilization", "NaN"}, "want a number"},
		{[]string{"serve", qwen, "--mamba-cache-mode", "some"}, "not one of all, align, none"},
		{[]string{"serve", qwen, "--speculative-config", "{"}, "want a JSON object"},
		{[]string{"serve", qwen, "--speculative-config", `{"method":"mtp","num_speculative_tokens":0}`}, "positive integer"},
		{[]string{"serve", qwen, "--compilation-config", `{"cudagraph_mode":"SOME"}`}, "cudagraph_mode"},
		{[]string{"serve", qwen, "--enable-prefix-caching=true"}, "takes no value"},
		{[]string{"serve", qwen, "--config", "x.json"}, "must be YAML"},
	} {
		_, err := Parse(c.args, os.ReadFile)
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error with %q", c.args, err, c.want)
		}
	}
}

func TestNormalizeVersion(t *testing.T) {
	for in, want := range map[string]string{"v0.22": "v0.22", "0.22.1": "v0.22", "v0.31.0rc1": "v0.31", "fixed": "fixed", "v0": "v0"} {
		if got, err := NormalizeVersion(in); err != nil || got != want {
			t.Errorf("%s: %q, %v", in, got, err)
		}
	}
	if _, err := NormalizeVersion("v0.99"); err == nil {
		t.Error("v0.99 accepted")
	}
}

// FuzzParse: any argument list is read or refused with an *Error; never
// a panic, and a scenario written from an accepted one is YAML that
// scenarios.Parse reads or refuses without panicking.
func FuzzParse(f *testing.F) {
	f.Add("vllm serve " + qwen + " -tp 4 --enable-prefix-caching --speculative-config {\"method\":\"mtp\",\"num_speculative_tokens\":3}")
	f.Add("serve jamba-v0.1 --max-num-seqs=8 --max-model-len 32K -O3 --compilation-config.cudagraph_mode FULL")
	f.Add("serve tiny-hybrid --speculative-config.method ngram --speculative-config.num_speculative_tokens 2 --port 1 --seed -1")
	f.Add("serve tiny-hybrid --enable-prefix-caching --kv-transfer-config {\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		c, err := Parse(args, nil)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error of type %T: %v", line, err, err)
			}
			return
		}
		if !strings.HasPrefix(c.Model, "-") && (c.Model == "tiny-hybrid" || c.Model == "jamba-v0.1") {
			tr, err := c.Scenario(Options{Version: "v0.31"})
			if err == nil {
				_, _ = scenarios.Parse(tr.YAML, "fuzz.yaml", nil)
			}
		}
	})
}

// FuzzConfigFile: any --config YAML is read or refused with an *Error
// naming the file; never a panic.
func FuzzConfigFile(f *testing.F) {
	f.Add("model: x/y\nmax-num-seqs: 4\nenable-prefix-caching: false\nspeculative-config:\n  method: mtp\n  num_speculative_tokens: 2\n")
	f.Add("- a\n- b\n")
	f.Add("port: [1, {a: b}]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		read := func(string) ([]byte, error) { return []byte(doc), nil }
		_, err := Parse([]string{"serve", "tiny-hybrid", "--config", "c.yaml"}, read)
		var pe *Error
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("%q: error of type %T: %v", doc, err, err)
		}
	})
}

// derefBool is a tri-state bool's value, nil when unset.
func derefBool(p *bool) any {
	if p == nil {
		return nil
	}
	return *p
}
