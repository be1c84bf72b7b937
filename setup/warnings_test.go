package setup_test

import (
	"strings"
	"testing"

	"statesim/setup"
)

// The start-up warnings a settled scenario carries: a Mamba cache mode
// with prefix caching off is dropped to none, as vLLM does; acceptance_rate
// beside a fixed accepted count is not used. Each is said only where it
// applies.
func TestStartupWarnings(t *testing.T) {
	const modeDropped = "Mamba cache mode is set to 'none' when prefix caching is disabled"
	const rateUnused = "acceptance_rate 0.5 is not used"
	for _, c := range []struct {
		engine string
		want   string // "" for no warning
	}{
		{"mamba_cache_mode: all, enable_prefix_caching: false", modeDropped},
		{"mamba_cache_mode: align, enable_prefix_caching: false", modeDropped},
		{"mamba_cache_mode: align, enable_prefix_caching: true", ""},
		{"mamba_cache_mode: none, enable_prefix_caching: false", ""},
		{"speculative: {method: ngram, num_speculative_tokens: 2, accepted: 1, acceptance_rate: 0.5}", rateUnused},
		{"speculative: {method: ngram, num_speculative_tokens: 2, acceptance_rate: 0.5}", ""},
		{"speculative: {method: ngram, num_speculative_tokens: 2, accepted: 1}", ""},
	} {
		doc := "name: w\nmodel: {preset: tiny-hybrid}\nengine: {num_gpu_blocks_override: 512, vllm_version: v0.31, " + c.engine + "}\nworkload: {kind: poisson, rate: 10, count: 2}\n"
		st, err := setup.Parse([]byte(doc), "w.yaml", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.engine, err)
		}
		got := strings.Join(st.Warnings, "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: warnings %q, want %q", c.engine, got, c.want)
		}
	}
}
