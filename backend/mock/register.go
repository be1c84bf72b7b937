package mock

import (
	"statesim/backend"
	"statesim/report"
)

// The mock joins the backend registry as kind "mock" from its own package:
// linking it (any import) makes `backend: {kind: mock}` runnable.
func init() {
	backend.Register("mock", FromEnv)
	backend.RegisterSizer("mock", func(env *backend.Env) (int64, error) { return CacheBound(ConfigOf(env)) })
}

var (
	_ backend.Backend     = (*Mock)(nil)
	_ backend.Finisher    = (*Mock)(nil)
	_ backend.Flusher     = (*Mock)(nil)
	_ backend.Differ      = (*Mock)(nil)
	_ backend.TokenTracer = (*Mock)(nil)
)

// ConfigOf is what the mock takes from a run: the shape and layout it
// uses, the pool size, and the settled backend settings (the weight
// seed, the sampling temperature and the divergence threshold).
func ConfigOf(env *backend.Env) Config {
	b := &env.Setup.Backend
	cfg := Config{
		Shape: *env.Shape, Layout: env.Layout, NumBlocks: env.NumBlocks,
		WeightSeed: b.WeightSeed, Temperature: b.Temperature, Threshold: b.DivergenceThreshold,
		SharedPrefixes: env.Setup.Mamba.PrefixCaching, AsyncScheduling: env.Setup.Sched.Config.AsyncScheduling,
	}
	if env.Setup.Spec.On() {
		cfg.NumSpec = env.Setup.Spec.K
	}
	return cfg
}

// FromEnv is the registry's factory.
func FromEnv(env *backend.Env) (backend.Backend, error) { return New(ConfigOf(env), env.Sym) }

// TokenTrace is a kept request's generated tokens with engine and
// reference log-probs, or nil.
func (m *Mock) TokenTrace(id int64) []report.TokenTrace {
	tr, ok := m.Trace(id)
	if !ok {
		return nil
	}
	out := make([]report.TokenTrace, len(tr.Tokens))
	for i, t := range tr.Tokens {
		out[i] = report.TokenTrace{Index: t.Index, Token: t.EngineToken, EngineLP: t.EngineLogProb, ReferenceLP: t.RefLogProb}
	}
	return out
}
