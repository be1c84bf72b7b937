// Package register makes the mock backend available to scenarios as
// backend kind "mock": a binary that imports it for its side effect
// (import _ "statesim/backend/mock/register") can run scenarios with
// `backend: {kind: mock}`. It also adapts the mock's traces to the
// engine's TokenTracer for `statesim explain`.
//
// It lives apart from package mock so that mock never imports the engine.
package register

import (
	"statesim"
	"statesim/backend"
	"statesim/backend/mock"
)

func init() { statesim.RegisterBackend("mock", New) }

// Backend is the mock with the engine's trace interface.
type Backend struct{ *mock.Mock }

var (
	_ backend.Backend      = Backend{}
	_ backend.Finisher     = Backend{}
	_ statesim.TokenTracer = Backend{}
)

// Config is what the mock takes from a scenario: the shape and layout the
// run uses, the pool and index width of the symbolic backend it wraps, the
// weight seed (backend.weight_seed, or the scenario seed when 0), the
// sampling temperature and the divergence threshold.
func Config(env *statesim.BackendEnv) mock.Config {
	sc := env.Scenario
	seed := sc.Backend.WeightSeed
	if seed == 0 {
		seed = sc.Seed
	}
	return mock.Config{
		Shape: *env.Shape, Layout: env.Layout, NumBlocks: env.NumBlocks,
		WeightSeed: seed, Temperature: sc.Sampling.Temperature, Threshold: sc.Backend.DivergenceThreshold,
	}
}

// New is the backend factory.
func New(env *statesim.BackendEnv) (backend.Backend, error) {
	m, err := mock.New(Config(env), env.Sym)
	if err != nil {
		return nil, err
	}
	return Backend{m}, nil
}

// TokenTrace is a kept request's generated tokens with engine and
// reference log-probs, or nil.
func (b Backend) TokenTrace(id int64) []statesim.TokenTrace {
	tr, ok := b.Trace(id)
	if !ok {
		return nil
	}
	out := make([]statesim.TokenTrace, len(tr.Tokens))
	for i, t := range tr.Tokens {
		out[i] = statesim.TokenTrace{Index: t.Index, Token: t.EngineToken, EngineLP: t.EngineLogProb, ReferenceL: t.RefLogProb}
	}
	return out
}
