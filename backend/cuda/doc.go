// Package cuda is the GPU backend: the mock backend's model (the same
// weights, drawn by the mock's Go code and uploaded) executed by statesim's
// own CUDA kernels (package kernels) over state and KV caches in device
// memory, laid out page for page as vLLM lays them out. It composes the
// symbolic backend, so stale reads are reported exactly as for the other
// backends, and compares its log-probs with the mock's reference run on the
// CPU (the reference is the spec).
//
// Every file but this one carries the build tag cuda: gorgonia.org/cu exits
// the process at start-up when no CUDA driver is present, so the default
// build, the tests and CI never link it. Build with `make cuda`.
//
// The d_state 16 decode state update is _n16 or _b16 (bitwise equal) as
// kernels.SSU16Launch chooses by size; STATESIM_SSU16=n16|b16 forces one
// (SSU16Env), so that gpu-confirm can check parity through either.
//
// It must never use managed memory, never link CUDA libraries other than
// the driver's libcuda, and never clear a cache page on free.
package cuda
