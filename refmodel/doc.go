// Package refmodel is an independent reference for the mock backend's
// numeric model (docs/numeric-model.md): the same weights, run through a
// plain float64 implementation written from the specification — Mamba1
// causal conv1d and selective scan, GQA attention, RMSNorm, logits and
// log-softmax — that shares no arithmetic with backend/mock. The mock's
// own reference recomputes a request alone but through the engine's
// functions, so a mistake in that arithmetic is invisible to it; this
// package is the second opinion.
//
// It reads the weights through mock.NewWeights (the draw order is part of
// the model's definition) and nothing else of the mock. It runs one
// request at a time from zero state, token by token through every layer,
// in float64 with the standard library's exp and log: its numbers differ
// from the mock's float32 ones by rounding only (see Tolerance).
//
// It must never read the wall clock or a global RNG.
package refmodel
