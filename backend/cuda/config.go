package cuda

import (
	"fmt"

	"statesim/backend"
	"statesim/backend/mock"
	"statesim/model"
)

// Config is what the backend needs from the scenario; the fields mean
// what they mean for mock.Config.
type Config struct {
	Shape       model.Shape
	Layout      model.Layout
	NumBlocks   int
	IndexBits   uint // 32 (bug B) or 64
	WeightSeed  uint64
	Temperature float64
	Threshold   float64
	// Shadow also runs the mock backend on every batch, so that the GPU's
	// log-probs can be compared with the mock engine's token by token.
	Shadow bool
}

// ConfigOf is what the backend takes from a run: the mock's configuration
// (same weights, sampling and threshold), and the settled index width and
// backend.shadow.
func ConfigOf(env *backend.Env) Config {
	m := mock.ConfigOf(env)
	b := &env.Setup.Backend
	return Config{Shape: m.Shape, Layout: m.Layout, NumBlocks: m.NumBlocks, IndexBits: b.IndexBits,
		WeightSeed: m.WeightSeed, Temperature: m.Temperature, Threshold: m.Threshold, Shadow: b.Shadow}
}

// check rejects what the kernels cannot run, before anything is allocated.
func (c *Config) check() error {
	if c.IndexBits != 32 && c.IndexBits != 64 {
		return fmt.Errorf("cuda: state_index_bits %d: the kernels index the state in 32 (bug B) or 64 bits only", c.IndexBits)
	}
	s := &c.Shape
	if s.NumMambaLayers() > 0 && (s.MambaDState != 4 && s.MambaDState != 8 && s.MambaDState != 16 || s.MambaDConv > 8) {
		return fmt.Errorf("cuda: d_state %d, d_conv %d: the kernels take d_state 4, 8 or 16 and d_conv ≤ 8", s.MambaDState, s.MambaDConv)
	}
	if s.NumAttentionLayers() > 0 && s.HeadDim > 128 {
		return fmt.Errorf("cuda: head_dim %d: the attention kernel takes at most 128", s.HeadDim)
	}
	return nil
}
