package prop

import "testing"

// TestMarconiJunction: a 96-token prompt runs as one chunk, so its Mamba
// state is cached at 96 only; a second request sharing its first 64
// tokens finds the attention blocks but no state (hit 0, 64 tokens
// uncached). With #37898's hint (v0.22) or #47782's boundary (v0.31) its
// first chunk stops at 64 and caches the state there, so a third
// request with the same 64 tokens hits them; without either it does
// not.
func TestMarconiJunction(t *testing.T) {
	r := NewRunner(t.TempDir(), nil)
	base := Params{MaxNumSeqs: 1, MaxNumBatchedTokens: 256, StateIndexBits: 64, Seed: 1, Preset: "tiny-hybrid-mamba2",
		Policy: "fcfs", ChunkedPrefill: true, Backend: "symbolic", CacheMode: "align", HashBlock: 32,
		ExtraBlocks: 64, Requests: []Request{
			{Prompt: 96, Output: 1, Family: 1, Shared: 3},
			{GapUS: 100000, Prompt: 96, Output: 1, Family: 1, Shared: 2},
			{GapUS: 100000, Prompt: 96, Output: 1, Family: 1, Shared: 2},
		}}
	for _, c := range []struct {
		version string
		patches []string
		want    int64
	}{
		{"v0.22", nil, 64},
		{"v0.31", nil, 64},
		{"v0.31", []string{"-47782", "-37898"}, 0},
		{"v0.22", []string{"-37898"}, 0},
	} {
		p := base
		p.Version, p.Patches = c.version, c.patches
		o := r.Run(&p)
		if o.Err != nil {
			t.Fatalf("%s %v: %v", c.version, c.patches, o.Err)
		}
		if got := o.Report.PrefixCache.HitTokens; got != c.want {
			t.Errorf("%s %v: %d hit tokens, want %d", c.version, c.patches, got, c.want)
		}
	}
}
