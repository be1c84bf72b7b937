package cuda

import (
	"strings"
	"testing"

	"statesim/backend"
	"statesim/setup"
)

// The backend's configuration comes from the settled run alone: its
// backend.shadow, seed and index width in effect.
func TestConfigOfReadsTheRun(t *testing.T) {
	st, err := setup.Load("imposter", []string{"backend.kind=cuda", "backend.shadow=true", "engine.state_index_bits=32"})
	if err != nil {
		t.Fatal(err)
	}
	sc, layout := st.Scenario, st.Layout
	cfg := ConfigOf(&backend.Env{Setup: st, Shape: &st.Shape, Layout: layout, NumBlocks: 50})
	if !cfg.Shadow || cfg.IndexBits != 32 || cfg.NumBlocks != 50 || cfg.WeightSeed != sc.Seed {
		t.Errorf("config %+v: want shadow, 32-bit index, 50 blocks, weight seed = scenario seed %d", cfg, sc.Seed)
	}
	if err := cfg.check(); err != nil {
		t.Errorf("the imposter model is one the kernels run: %v", err)
	}
	st.Backend.Shadow = false
	if ConfigOf(&backend.Env{Setup: st, Shape: &st.Shape, Layout: layout, NumBlocks: 50}).Shadow {
		t.Error("shadow on without backend.shadow")
	}
	for _, c := range []struct {
		spoil func(*Config)
		want  string
	}{
		{func(c *Config) { c.IndexBits = 16 }, "state_index_bits 16"},
		{func(c *Config) { c.Shape.MambaDState = 32 }, "d_state 32"},
		{func(c *Config) { c.Shape.HeadDim = 256 }, "head_dim 256"},
	} {
		bad := cfg
		c.spoil(&bad)
		if err := bad.check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("check: error %v, want one mentioning %q", err, c.want)
		}
	}
}
