// Package statesim is the public API of the simulator: load a scenario,
// run it deterministically through a vLLM scheduler model, a hybrid block
// pool with provenance and a backend, and get a report of every invariant
// violation (decode before prefill, stale slot reads, wrapped state
// writes, budgets, conservation, liveness).
//
//	sc, err := scenarios.Load("imposter", nil)
//	rep, err := statesim.Run(sc, statesim.Options{})
//
// The same scenario and seed give byte-identical reports and traces.
package statesim
