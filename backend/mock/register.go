package mock

import "statesim/backend"

// The mock joins the backend registry as kind "mock" from its own package:
// linking it (any import) makes `backend: {kind: mock}` runnable.
func init() { backend.Register("mock", FromEnv) }

var (
	_ backend.Backend     = (*Mock)(nil)
	_ backend.Finisher    = (*Mock)(nil)
	_ backend.Flusher     = (*Mock)(nil)
	_ backend.Differ      = (*Mock)(nil)
	_ backend.TokenTracer = (*Mock)(nil)
)

// ConfigOf is what the mock takes from a scenario: the shape and layout
// the run uses, the pool size, the weight seed (backend.weight_seed, or
// the scenario seed when 0), the sampling temperature and the divergence
// threshold.
func ConfigOf(env *backend.Env) Config {
	sc := env.Scenario
	seed := sc.Backend.WeightSeed
	if seed == 0 {
		seed = sc.Seed
	}
	cfg := Config{
		Shape: *env.Shape, Layout: env.Layout, NumBlocks: env.NumBlocks,
		WeightSeed: seed, Temperature: sc.Sampling.Temperature, Threshold: sc.Backend.DivergenceThreshold,
	}
	if sp := &sc.Engine.Speculative; sp.Method != "" {
		cfg.NumSpec = sp.NumSpeculativeTokens
	}
	return cfg
}

// FromEnv is the registry's factory.
func FromEnv(env *backend.Env) (backend.Backend, error) { return New(ConfigOf(env), env.Sym) }

// TokenTrace is a kept request's generated tokens with engine and
// reference log-probs, or nil.
func (m *Mock) TokenTrace(id int64) []backend.TokenTrace {
	tr, ok := m.Trace(id)
	if !ok {
		return nil
	}
	out := make([]backend.TokenTrace, len(tr.Tokens))
	for i, t := range tr.Tokens {
		out[i] = backend.TokenTrace{Index: t.Index, Token: t.EngineToken, EngineLP: t.EngineLogProb, ReferenceL: t.RefLogProb}
	}
	return out
}
