package prop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"statesim/engine"
	"statesim/invariant"
	"statesim/setup"
)

// TestPrefixCachingOnTheMock runs ten requests sharing prompt prefixes
// (hash ids of 16 tokens: two leading ids in common, a third shared by
// every third request) on the mock with prefix caching on, for Mamba1
// (tiny-hybrid) and the Mamba2 stand-in, in align mode (with and without
// MTP drafts) and in all mode: shared KV blocks hold the reader's keys
// (the prefix's tokens are its segments'), and a state restored through a
// hit or carried across a block boundary is the one the symbolic backend
// names. Every run hits the cache, and holds to the symbolic check: its
// stale readers diverge, the rest equal the reference exactly.
func TestPrefixCachingOnTheMock(t *testing.T) {
	dir := t.TempDir()
	// Two traces of ten requests: short (three or four ids of 16 tokens,
	// two leading ones shared by half, 3 to 6 output tokens) and long
	// (four leading ids shared by all, the EAGLE drop's block to spare,
	// 40 to 43 output tokens: decodes cross block boundaries).
	for _, tr := range []struct {
		name   string
		shared []int
		out    int
	}{{"short", []int{0}, 3}, {"long", []int{0, 1, 2, 3}, 40}} {
		var b strings.Builder
		for i := range 10 {
			ids := append(slices.Clone(tr.shared), 1000+i%2, 10+i%3)
			if i%3 == 0 {
				ids = append(ids, 100+i)
			}
			fmt.Fprintf(&b, `{"timestamp": %.2f, "input_tokens": %d, "output_tokens": %d, "hash_ids": %s}`+"\n",
				0.05*float64(i), 16*len(ids)-i*5%15, tr.out+i%4, strings.ReplaceAll(fmt.Sprint(ids), " ", ", "))
		}
		if err := os.WriteFile(filepath.Join(dir, tr.name+".jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const mtp = "  speculative:\n    method: mtp\n    num_speculative_tokens: 2\n"
	for _, c := range []struct {
		name, model, mode, trace, extra string
		stale                           bool // the symbolic check names stale readers
	}{
		{"tiny-hybrid-align", "tiny-hybrid", "align", "short", "", false},
		{"tiny-hybrid-mamba2-align", "tiny-hybrid-mamba2", "align", "short", "", false},
		// all mode's block otherwise spans the kernel's chunk (256, 2048 tokens)
		{"tiny-hybrid-all", "tiny-hybrid", "all", "short", "  mamba_block_size: 16\n", false},
		{"tiny-hybrid-mamba2-all", "tiny-hybrid-mamba2", "all", "short", "  mamba_block_size: 16\n", false},
		// The EAGLE drop before #46384 (#53912): the stale readers diverge.
		{"tiny-hybrid-mamba2-align-mtp", "tiny-hybrid-mamba2", "align", "short", mtp + "  patches: [\"-46384\"]\n", true},
		// With its fixes the restores through a hit are clean and exact,
		// and so are the boundary copies after accepted drafts (one into
		// the running block resets num_accepted_tokens).
		{"tiny-hybrid-mamba2-align-mtp-fixed", "tiny-hybrid-mamba2", "align", "long", mtp + "    acceptance_rate: 0.7\n  patches: [\"+55898\", \"+48375\"]\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			yaml := fmt.Sprintf(`name: %s
seed: 7
model:
  preset: %s
engine:
  vllm_version: v0.31
  max_num_batched_tokens: 48
  max_num_seqs: 4
  num_gpu_blocks_override: 200
  enable_prefix_caching: true
  mamba_cache_mode: %s
%sworkload:
  kind: trace
  path: %s.jsonl
  hash_field: hash_ids
  hash_block_tokens: 16
  prompt_len: {dist: trace, value: 0}
  output_len: {dist: trace, value: 0}
backend:
  kind: mock
checks:
  keep: 1000
`, c.name, c.model, c.mode, c.extra, c.trace)
			f := filepath.Join(dir, c.name+".yaml")
			if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := setup.Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := engine.RunSetup(st, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.PrefixCache == nil || rep.PrefixCache.HitTokens == 0 {
				t.Fatalf("no prefix hit: %+v", rep.PrefixCache)
			}
			if rep.Divergence == nil || rep.Divergence.RequestsCompared != 10 {
				t.Fatalf("want 10 requests compared, got %+v", rep.Divergence)
			}
			stale := slices.ContainsFunc(rep.Violations, func(v invariant.Violation) bool { return v.Name == "stale-slot-read" })
			if stale != c.stale {
				t.Errorf("stale reads %t, want %t", stale, c.stale)
			}
			holdsToSymbolic(t, rep, f, nil)
		})
	}
}
