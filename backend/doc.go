// Package backend defines what the simulator calls with each classified
// batch, and the symbolic backend: it performs, against block provenance,
// exactly the cache accesses each layer kind would make (attention: write
// K/V, then read bounded by sequence length; Mamba: prefill from zero or from
// the slot through the kernel's index arithmetic, decode reads the slot
// first) and reports every access that sees bytes that are not the
// reader's own. It does no arithmetic on values.
//
// Numeric backends (the mock model, CUDA) live in subpackages and compose
// the symbolic one, so every backend reports the same stale reads.
package backend
