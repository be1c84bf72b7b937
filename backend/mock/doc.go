// Package mock is a pure-Go numeric backend: a small deterministic hybrid
// (attention + Mamba1) model that runs real float32 layer arithmetic against
// real shared cache buffers laid out as vLLM lays them out, so that a stale
// slot read (bug A) or a wrapped 32-bit state write (bug B) corrupts actual
// numbers, and a differential log-prob check (the seeds' debug script) finds
// the requests whose outputs went wrong.
//
// It composes the symbolic backend: every step is first replayed on block
// provenance (which records stale reads and wrong writes), then computed.
// Finished requests are recomputed alone, from zero state, in private
// contiguous caches, and the engine's log-probs are compared with the
// reference's token by token.
//
// Arithmetic is sequential per row and per token with one fixed float32
// operation order, so a request's numbers are bit-identical whether it is
// processed in one prefill, in chunks, token by token through the decode
// kernel, batched or alone; on a healthy run every |Δ log-prob| is exactly 0.
// The math is specified in docs/numeric-model.md. Subpackage register wires
// the mock into the engine as backend kind "mock".
//
// It must never read the wall clock or a global RNG, never iterate a map
// where order reaches an output, and never clear a cache page on free.
package mock
