package setup_test

import (
	"errors"
	"strings"
	"testing"

	"statesim/scenarios"
	"statesim/setup"
)

// good is a scenario the cases edit: vllm_version is on line 4.
const good = `name: t
model: {preset: tiny-hybrid}
engine:
  vllm_version: v0.14
  num_gpu_blocks_override: 100
workload: {kind: poisson, rate: 1, count: 4}
`

// A rule across fields names the file, the line and the field it refuses,
// as a field's own range does (scenarios).
func TestRulesNameFileLineAndField(t *testing.T) {
	for _, c := range []struct {
		name, edit, want string
		sets             []string
	}{
		{"bad version", "  num_gpu_blocks_override: 100\n  vllm_version: v9\n", "t.yaml:6: field engine.vllm_version", nil},
		{"async under v0", "  num_gpu_blocks_override: 100\n  async_scheduling: true\n", "t.yaml:6: field engine.async_scheduling: the v0 control", []string{"engine.vllm_version=v0"}},
		{"async on cuda", "  num_gpu_blocks_override: 100\n  async_scheduling: true\n", "t.yaml:6: field engine.async_scheduling: the cuda backend", []string{"backend.kind=cuda"}},
		{"bad mode", "  num_gpu_blocks_override: 100\n  mamba_cache_mode: some\n", `t.yaml:6: field engine.mamba_cache_mode: unknown mamba_cache_mode "some"`, nil},
		{"mode before v0.15", "  num_gpu_blocks_override: 100\n  mamba_cache_mode: align\n  enable_prefix_caching: true\n", "t.yaml:6: field engine.mamba_cache_mode", nil},
		{"spec under v0", "", "field engine.speculative.method: speculative decoding is modelled for V1 releases", []string{"engine.vllm_version=v0", "engine.speculative.method=mtp", "engine.speculative.num_speculative_tokens=1"}},
		{"caching on cuda", "  num_gpu_blocks_override: 100\n  enable_prefix_caching: true\n", "t.yaml:6: field engine.enable_prefix_caching: the cuda backend", []string{"backend.kind=cuda"}},
	} {
		y := good
		if c.edit != "" {
			y = strings.Replace(good, "  num_gpu_blocks_override: 100\n", c.edit, 1)
		}
		_, err := setup.Parse([]byte(y), "t.yaml", c.sets)
		var ie *scenarios.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.name, err, c.want)
		}
	}
}

// The mock runs prefix caching, but not over a sessions workload: a next
// turn's prefix names the previous turn's output, which on the mock is
// its own samples, not that segment's tokens.
func TestMockRefusesSharedOutputs(t *testing.T) {
	y := strings.Replace(good, "workload: {kind: poisson, rate: 1, count: 4}", "workload: {kind: sessions, sessions: 2, turns_per_session: 2}", 1)
	y = strings.Replace(y, "  num_gpu_blocks_override: 100\n", "  num_gpu_blocks_override: 100\n  enable_prefix_caching: true\n", 1)
	_, err := setup.Parse([]byte(y), "t.yaml", []string{"backend.kind=mock"})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:6: field engine.enable_prefix_caching: the mock backend's generated tokens") {
		t.Errorf("sessions cached on the mock: %v", err)
	}
	if _, err := setup.Parse([]byte(y), "t.yaml", nil); err != nil {
		t.Errorf("sessions cached on the symbolic backend: %v", err)
	}
}

// Kimi-K3 is served from v0.27 (#50089), Qwen3.5 from v0.19 (#34110): a
// scenario at an earlier release is refused, naming vllm_version.
func TestServes(t *testing.T) {
	t.Chdir(t.TempDir())
	sets := []string{"model.hf_config=kimi-k3"}
	_, err := setup.Load("nemotron-h-imposter", sets)
	if err == nil || !strings.Contains(err.Error(), "field engine.vllm_version: vLLM v0.13 does not serve Kimi-K3") || !strings.Contains(err.Error(), "#50089") {
		t.Errorf("kimi-k3 at v0.13: %v", err)
	}
	if _, err := setup.Load("nemotron-h-imposter", append(sets, "engine.vllm_version=v0.27")); err != nil {
		t.Errorf("kimi-k3 at v0.27: %v", err)
	}
	// Qwen3.5 came with #34110 (2026-02-09), after v0.14.
	q := []string{"model.hf_config=qwen3.5-4b"}
	_, err = setup.Load("nemotron-h-imposter", q)
	if err == nil || !strings.Contains(err.Error(), "field engine.vllm_version: vLLM v0.13 does not serve Qwen3.5") || !strings.Contains(err.Error(), "#34110") {
		t.Errorf("qwen3.5-4b at v0.13: %v", err)
	}
	if _, err := setup.Load("nemotron-h-imposter", append(q, "engine.vllm_version=v0.19")); err != nil {
		t.Errorf("qwen3.5-4b at v0.19: %v", err)
	}
}

// Every built-in scenario settles: no rule across fields refuses one.
func TestBuiltinsSettle(t *testing.T) {
	for _, n := range scenarios.Builtins() {
		if _, err := setup.Load(n, nil); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// Settling never panics on what the loader accepts, and every refusal
// names the file.
func FuzzSettle(f *testing.F) {
	f.Add([]byte(good), "")
	f.Add([]byte(good), "engine.mamba_cache_mode=all")
	f.Add([]byte(good), "engine.speculative.method=mtp")
	f.Add([]byte(good), "engine.patches=+51565")
	f.Add([]byte(good), "engine.kv_transfer_config.kv_connector=LMCacheConnectorV1")
	f.Add([]byte("model: {preset: tiny-hybrid}\nengine: {vllm_version: v0.31, enable_prefix_caching: true, mamba_block_size: 7}\nworkload: {kind: poisson, rate: 1, count: 1}\n"), "")
	f.Add([]byte("model: {preset: tiny-hybrid}\nengine: {vllm_version: v0.31, enable_prefix_caching: true, prefix_match_unit: 8}\nworkload: {kind: poisson, rate: 1, count: 1}\n"), "engine.prefix_match_unit=5")
	f.Add([]byte("model: {preset: tiny-hybrid}\nengine: {vllm_version: v0.22, prefix_match_unit: 8}\nworkload: {kind: poisson, rate: 1, count: 1}\n"), "engine.mamba_cache_mode=all")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		st, err := setup.Parse(data, "f.yaml", sets)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if st.Layout.BlockSize < 1 || st.IndexBits < 16 || st.IndexBits > 64 {
			t.Fatalf("settled into block size %d, %d-bit index", st.Layout.BlockSize, st.IndexBits)
		}
	})
}
