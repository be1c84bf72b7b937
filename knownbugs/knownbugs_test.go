package knownbugs

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"statesim/prop"
	"statesim/sched"
	"statesim/setup"
)

// scenario settles a scenario from engine lines under a model.
func scenario(t *testing.T, model, engine string) *setup.Setup {
	t.Helper()
	doc := "name: t\nmodel: {hf_config: " + model + "}\nengine:\n" + engine + "workload: {kind: poisson, rate: 1, count: 1}\n"
	if model == "tiny-hybrid" || model == "jamba-mini" {
		doc = strings.Replace(doc, "hf_config", "preset", 1)
	}
	sc, err := setup.Parse([]byte(doc), "t.yaml", nil)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return sc
}

func applying(t *testing.T, sc *setup.Setup) []string {
	t.Helper()
	vs, err := Judge(sc)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range vs {
		if v.Applies {
			ids = append(ids, v.Bug.ID)
		} else if v.Why == "" {
			t.Errorf("%s: not applying, no reason", v.Bug.ID)
		}
	}
	return ids
}

// dflash is a one-layer DFlash drafter of 11 KV heads × 192, window 2048.
const dflash = "  speculative: {method: dflash, num_speculative_tokens: 1, draft: {num_hidden_layers: 1, num_key_value_heads: 11, head_dim: 192, sliding_window: 2048}}\n"

func TestWhichApply(t *testing.T) {
	for _, c := range []struct {
		model, engine string
		want          []string
	}{
		// The GDN imposter is live at v0.22, closed at v0.31.
		{"qwen3-next-80b-a3b", "  vllm_version: v0.22\n", []string{"gdn-stateless-first-chunk"}},
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n", nil},
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  patches: [-51565]\n", []string{"gdn-stateless-first-chunk"}},
		// vLLM's default CUDA graphs at v0.31 on the V1 runner: the
		// shape-only dispatch; with MTP its (1 + K) form instead. Model
		// Runner V2 (v0.31's default) has #51865's gate from v0.28.
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  model_runner: v1\n  cudagraph_mode: full_and_piecewise\n", []string{"cudagraph-stale-gdn"}},
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  model_runner: v1\n  cudagraph_mode: full_and_piecewise\n  speculative: {method: mtp, num_speculative_tokens: 3}\n", []string{"cudagraph-stale-spec-chunk", "spec-padded-new-prompt-gdn"}},
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  cudagraph_mode: full_and_piecewise\n", nil},
		// +53059 closes it on the V1 runner only; under V2 without #51865
		// it stays.
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  cudagraph_mode: full_and_piecewise\n  patches: [+53059]\n  model_runner: v1\n", nil},
		{"qwen3-next-80b-a3b", "  vllm_version: v0.31\n  cudagraph_mode: full_and_piecewise\n  patches: [+53059, -51865]\n", []string{"cudagraph-stale-gdn"}},
		// At v0.22 the GDN graph rows need #51565's code first.
		{"qwen3-next-80b-a3b", "  vllm_version: v0.22\n  cudagraph_mode: full_and_piecewise\n", []string{"gdn-stateless-first-chunk"}},
		{"tiny-hybrid", "  vllm_version: v0.13\n", []string{"bug-a-imposter"}},
		{"tiny-hybrid", "  vllm_version: v0.14\n", []string{"bug-a-residue"}},
		{"tiny-hybrid", "  vllm_version: v0.13\n  state_index_bits: 32\n", []string{"bug-a-imposter", "bug-b-32bit-index"}},
		{"kimi-k3", "  vllm_version: v0.30\n", []string{"kda-stateless-first-chunk"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.31\n  model_runner: v1\n  speculative: {method: mtp, num_speculative_tokens: 1}\n", []string{"mtp-min-threshold", "spec-padded-new-prompt-mamba2"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.27\n  model_runner: v2\n  speculative: {method: ngram, num_speculative_tokens: 1}\n", []string{"v2-uniform-chunk-tie"}},
		// From v0.28 (#45237) a new one-token prompt is padded; with
		// align-mode prefix caching a one-token tail too, which #55178
		// closes under V2 (v0.31's default) and not on V1.
		{"nemotron-nano-9b-v2", "  vllm_version: v0.31\n  speculative: {method: ngram, num_speculative_tokens: 1}\n", []string{"spec-padded-new-prompt-mamba2"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.28\n  enable_prefix_caching: true\n  mamba_cache_mode: align\n  speculative: {method: ngram, num_speculative_tokens: 1}\n", []string{"spec-padded-tail", "spec-padded-new-prompt-mamba2"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.31\n  enable_prefix_caching: true\n  mamba_cache_mode: align\n  speculative: {method: ngram, num_speculative_tokens: 1}\n", []string{"spec-padded-new-prompt-mamba2"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.31\n  model_runner: v1\n  enable_prefix_caching: true\n  mamba_cache_mode: align\n  speculative: {method: ngram, num_speculative_tokens: 1}\n", []string{"spec-padded-tail", "spec-padded-new-prompt-mamba2"}},
		{"minimax-text-01", "  vllm_version: v0.31\n", []string{"linear-attn-imposter"}},
		{"lfm2-1.2b", "  vllm_version: v0.31\n  speculative: {method: ngram, num_speculative_tokens: 2}\n", []string{"mamba1-spec-draft-prefill"}},
		{"nemotron-nano-9b-v2", "  vllm_version: v0.14\n  speculative: {method: mtp, num_speculative_tokens: 2}\n", []string{"bug-a-residue", "mtp-short-prompt", "mtp-min-threshold"}},
		// A DFlash drafter whose window group (256) is below the Mamba
		// group's (528): V2's seed and the scheduler's chunk cut, each
		// closed by its own open PR.
		{"qwen3.5-4b", "  vllm_version: v0.31\n  enable_prefix_caching: true\n" + dflash, []string{"v2-seed-units-53142", "align-chunk-units-54076"}},
		{"qwen3.5-4b", "  vllm_version: v0.31\n  enable_prefix_caching: true\n  patches: [+53798, +54076]\n" + dflash, nil},
	} {
		got := applying(t, scenario(t, c.model, c.engine))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s\n%s: applies %v, want %v", c.model, c.engine, got, c.want)
		}
	}
}

// TestTableIsConsistent: every row names a property the search checks,
// PRs statesim models, releases it models, and values the scenario
// format takes; and each row's bug is in docs/bugs.md.
func TestTableIsConsistent(t *testing.T) {
	bugs, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/bugs.md")
	if err != nil {
		t.Fatal(err)
	}
	prs := sched.PatchNames()
	seen := map[string]bool{}
	for _, b := range bugs {
		if seen[b.ID] {
			t.Errorf("%s twice", b.ID)
		}
		seen[b.ID] = true
		if b.Title == "" || b.Trigger == "" || b.FixedBy == "" || b.Search == "" {
			t.Errorf("%s: title, trigger, fixed_by and search are required", b.ID)
		}
		if _, err := prop.ByName([]string{b.Property}); err != nil {
			t.Errorf("%s: %v", b.ID, err)
		}
		if b.Releases.From != "" {
			for _, r := range []string{b.Releases.From, b.Releases.To} {
				if _, err := sched.ParseVersion(r); err != nil && r != "v0.15" && r != "v0.18" {
					t.Errorf("%s: %v", b.ID, err)
				}
			}
		}
		for _, pr := range append(slices.Clone(b.NeedsPRs), fixPRs(b)...) {
			if !slices.Contains(prs, strconv.Itoa(pr)) {
				t.Errorf("%s: #%d is not a PR statesim models", b.ID, pr)
			}
		}
		for _, s := range b.Spec {
			if _, err := sched.ParseSpecMethod(s); s != "off" && err != nil {
				t.Errorf("%s: spec %q: %v", b.ID, s, err)
			}
		}
		for _, m := range b.CUDAGraph {
			if _, err := sched.ParseCUDAGraphMode(m); err != nil {
				t.Errorf("%s: %v", b.ID, err)
			}
		}
		// The row's search command is docs/bugs.md's (its flags appear there).
		if !strings.HasPrefix(b.Search, "statesim check ") {
			t.Errorf("%s: search %q", b.ID, b.Search)
		}
		for _, ref := range regexp.MustCompile(`#\d{5}`).FindAllString(b.Refs, -1) {
			if !strings.Contains(string(doc), ref) {
				t.Errorf("%s: %s is not in docs/bugs.md", b.ID, ref)
			}
		}
	}
}

func fixPRs(b Bug) []int {
	var out []int
	for _, f := range b.Fixes {
		out = append(out, f.PR)
	}
	return out
}
